"""Each SavedModel version loaded, warmed up and run in a process of its own.

Why: in the server's process, loading a version holds the GIL in long C++ calls, its first
request pays seconds of graph optimisation while every other request waits, and letting the
old version go runs a garbage collection over the hundreds of thousands of objects a
TensorFlow process holds: in a profile of a MiniLM classifier on 2 CPUs, serving stopped for
0.1 s during the load, 1-6 s after switching to a cold version and 0.45-1.1 s when the old
one was collected, and memory grew with every swap. In a child process the load and warm-up
take none of the server's GIL, the switch is a dictionary update, the old version's memory
returns to the system when its process exits, and the server's process never collects a
model.

The children are forked from a fork server that has imported TensorFlow, tensorflow_text and
this module once (``multiprocessing``'s ``forkserver``, with them preloaded), so a version's
process starts in milliseconds and only loads its SavedModel. Requests go over a pipe
(numpy arrays in and out, pickled); the child runs them on a pool of threads, as the
server's own threads would.

Before it says "ready", a version's process warms it up (`keras_bert.serving.warmup`: TF
Serving's warm-up records, else one call per signature), so the first client request no
longer pays the graph optimisation (2-6 s for a MiniLM classifier on a loaded 2-CPU machine).
"""

import functools
import itertools
import logging
import multiprocessing
import os
import threading

from keras_bert.serving.errors import ServingError
from keras_bert.serving.signatures import Signature, call_function
from keras_bert.serving.warmup import warm_up

# TensorFlow first: keras_bert's import then leaves TensorFlow's runtime (its thread pools)
# unstarted, as it must be in a process that forks (a child would wait for threads that the
# fork did not copy).
_PRELOAD = ["tensorflow", "tensorflow_text", "keras_bert.serving.version_process"]
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_START = threading.Lock()
log = logging.getLogger("keras_bert.serving")


class LoadError(Exception):
    """A version that did not load or warm up in its process (the message says why).

    Example:

    >>> import tempfile
    >>> VersionProcess(tempfile.mkdtemp()).start()
    Traceback (most recent call last):
    ...
    keras_bert.serving.version_process.LoadError: OSError: SavedModel file does not exist at: ...
    """


def _context():
    """The forkserver context, its server running with `_PRELOAD` imported from this
    keras_bert (its folder first on PYTHONPATH: the fork server does not get the server's
    sys.path)."""
    from multiprocessing import forkserver

    context = multiprocessing.get_context("forkserver")
    with _START:
        context.set_forkserver_preload(_PRELOAD)  # no effect once the fork server runs
        saved = os.environ.get("PYTHONPATH")
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [_ROOT, saved]))
        try:
            forkserver.ensure_running()
        finally:
            if saved is None:
                del os.environ["PYTHONPATH"]
            else:
                os.environ["PYTHONPATH"] = saved
    return context


class _Call:
    __slots__ = ("done", "result", "error")

    def __init__(self):
        self.done = threading.Event()
        self.result = self.error = None


class VersionProcess:
    """The SavedModel in `path` served by a child process.

    Args:
      path: the version directory.
      label: how messages name it (``model 'm' version 1``).
      threads: calls the child runs at once.
      warmup: run the warm-up (see the module docstring) before `start` returns.
      warmup_iterations: times each warm-up record is replayed (TF Serving's
        ``--num_request_iterations_for_warmup``).
      intra_op_threads, inter_op_threads: TensorFlow's thread pools in the child (0: its
        default; TF Serving's ``--tensorflow_intra_op_parallelism`` and
        ``--tensorflow_inter_op_parallelism``).

    Example:

    >>> import tempfile
    >>> import numpy as np
    >>> import tensorflow as tf
    >>> class Doubler(tf.Module):
    ...     @tf.function(input_signature=[tf.TensorSpec([None], tf.float32, name="x")])
    ...     def double(self, x):
    ...         return {"y": 2 * x}
    >>> doubler = Doubler()
    >>> path = tempfile.mkdtemp()
    >>> tf.saved_model.save(doubler, path, signatures={"serving_default": doubler.double})
    >>> process = VersionProcess(path)
    >>> process.start()["serving_default"]
    {'x': TensorSpec(shape=(None,), dtype=tf.float32, name='x')}
    >>> process.warmed_up
    'one call per signature'
    >>> process.call("serving_default", {"x": np.array([1.0, 2.5], "float32")})
    {'y': array([2., 5.], dtype=float32)}
    >>> process.stop()
    """

    def __init__(self, path, label="model", threads=4, warmup=True, warmup_iterations=1,
                 intra_op_threads=0, inter_op_threads=0):
        self.path = path
        self.label = label
        self.options = {"threads": max(1, int(threads)), "warmup": bool(warmup),
                        "warmup_iterations": max(1, int(warmup_iterations)),
                        "intra_op_threads": int(intra_op_threads),
                        "inter_op_threads": int(inter_op_threads)}
        self.warmed_up = None
        self._process = self._conn = None
        self._pending = {}
        self._ids = itertools.count()
        self._send_lock = threading.Lock()
        self._pending_lock = threading.Lock()
        self._gone = None  # why calls can no longer be made

    @property
    def pid(self):
        return None if self._process is None else self._process.pid

    @property
    def alive(self):
        return self._gone is None and self._process is not None and self._process.is_alive()

    def start(self, timeout=None):
        """Starts the process, loads and warms up the SavedModel; returns its signatures'
        inputs (signature name -> input name -> tf.TensorSpec). Raises `LoadError`."""
        import tensorflow as tf

        context = _context()
        self._conn, child = context.Pipe()
        self._process = context.Process(target=serve, args=(child, self.path, self.options),
                                        daemon=True, name=f"keras_bert {self.label}")
        self._process.start()
        child.close()
        message = self._startup_message(timeout)
        if message[0] == "failed":
            self._process.join(10)
            self._gone = "failed to load"
            raise LoadError(message[1])
        _, specs, self.warmed_up = message
        threading.Thread(target=self._read, daemon=True,
                         name=f"{self.label} replies").start()
        return {key: {name: tf.TensorSpec(shape, tf.as_dtype(dtype), name=name)
                      for name, (dtype, shape) in inputs.items()}
                for key, inputs in specs.items()}

    def _startup_message(self, timeout):
        import time

        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            if self._conn.poll(0.1):
                try:
                    return self._conn.recv()
                except (EOFError, OSError):
                    pass  # it exited: said below
            if not self._process.is_alive() and not self._conn.poll(0):
                self._process.join(1)
                self._gone = "exited"
                raise LoadError(f"the process loading {self.path} exited (code "
                                f"{self._process.exitcode}) before it was ready")
            if deadline is not None and time.monotonic() > deadline:
                self.stop()
                raise LoadError(f"{self.path} did not load within {timeout} s")

    def call(self, name, inputs):
        """Runs signature `name` on `inputs` (name -> numpy array) in the process; returns
        name -> numpy array. Raises the `ServingError` the call raised, or UNAVAILABLE when
        the process is gone."""
        call = _Call()
        call_id = next(self._ids)
        with self._pending_lock:
            if self._gone is not None:
                raise self._unavailable()
            self._pending[call_id] = call
        try:
            with self._send_lock:
                self._conn.send(("run", call_id, name, inputs))
        except (OSError, ValueError, EOFError):
            with self._pending_lock:
                self._pending.pop(call_id, None)
            raise self._unavailable() from None
        call.done.wait()
        if call.error is not None:
            raise call.error
        return call.result

    def _unavailable(self):
        code = self._process.exitcode if self._process is not None else None
        how = f" (exit code {code})" if code not in (None, 0) else ""
        return ServingError("UNAVAILABLE", f"the process serving {self.label} has "
                            f"{self._gone or 'exited'}{how}")

    def _read(self):
        while True:
            try:
                message = self._conn.recv()
            except (EOFError, OSError):
                break
            with self._pending_lock:
                call = self._pending.pop(message[1], None)
            if call is None:
                continue
            if message[0] == "ok":
                call.result = message[2]
            else:
                call.error = ServingError(message[2], message[3])
            call.done.set()
        if self._gone is None:
            self._process.join(1)
            self._gone = "exited"
            log.error("%s: its process exited (code %s)", self.label, self._process.exitcode)
        with self._pending_lock:
            pending, self._pending = list(self._pending.values()), {}
        for call in pending:
            call.error = self._unavailable()
            call.done.set()

    def stop(self, timeout=10):
        """Ends the process (its memory returns to the system); calls still waiting get
        UNAVAILABLE."""
        if self._process is None:
            return
        if self._gone is None:
            self._gone = "stopped"
        try:
            with self._send_lock:
                self._conn.send(("stop",))
        except (OSError, ValueError, EOFError):
            pass
        self._process.join(timeout)
        if self._process.is_alive():
            self._process.kill()
            self._process.join(timeout)
        self._conn.close()


class ProcessSignature(Signature):
    """A signature of a version served by a `VersionProcess`: checked here as a `Signature`
    is, run in the process.

    Example:

    >>> import tempfile
    >>> import numpy as np
    >>> import tensorflow as tf
    >>> from keras_bert.serving.servable import read_signature_defs
    >>> class Doubler(tf.Module):
    ...     @tf.function(input_signature=[tf.TensorSpec([None], tf.float32, name="x")])
    ...     def double(self, x):
    ...         return {"y": 2 * x}
    >>> doubler = Doubler()
    >>> path = tempfile.mkdtemp()
    >>> tf.saved_model.save(doubler, path, signatures={"serving_default": doubler.double})
    >>> process = VersionProcess(path, warmup=False)
    >>> inputs = process.start()["serving_default"]
    >>> signature = ProcessSignature("serving_default", process,
    ...                              read_signature_defs(path)["serving_default"], inputs)
    >>> signature.run(signature.check({"x": np.array([4.0], "float32")}))
    {'y': array([8.], dtype=float32)}
    >>> process.stop()
    """

    def __init__(self, name, process, signature_def, inputs):
        self.process = process
        self.setup(name, signature_def, inputs)

    def call(self, inputs):
        return self.process.call(self.name, inputs)


# ---- the child process --------------------------------------------------------------------
def serve(conn, path, options):
    """The child's main: load, warm up, say "ready" (or "failed"), then run calls until told
    to stop or the server's end of the pipe closes."""
    import gc
    import signal

    from keras_bert.backend import quiet_native_stderr

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the server: it stops us
    try:
        import tensorflow as tf
        import tensorflow_text  # noqa: F401  (registers the tf.text ops the graphs use)

        with quiet_native_stderr():  # TensorFlow's start-up notices (cuInit...) held back
            if options["intra_op_threads"]:
                tf.config.threading.set_intra_op_parallelism_threads(
                    options["intra_op_threads"])
            if options["inter_op_threads"]:
                tf.config.threading.set_inter_op_parallelism_threads(
                    options["inter_op_threads"])
            loaded = tf.saved_model.load(path)
            functions = dict(loaded.signatures)
            specs = {key: dict(function.structured_input_signature[1])
                     for key, function in functions.items()}
            warmed = warm_up(functions, specs, path, options) if options["warmup"] else None
    except Exception as error:  # noqa: BLE001 - said to the server, which reports it
        conn.send(("failed", f"{type(error).__name__}: {error}"))
        conn.close()
        os._exit(0)
    gc.collect()
    gc.freeze()  # what is loaded stays: later collections need not look at it
    release_free_memory()
    conn.send(("ready", {key: {name: (spec.dtype.as_datatype_enum,
                                      None if spec.shape.rank is None else spec.shape.as_list())
                               for name, spec in inputs.items()}
                         for key, inputs in specs.items()}, warmed))
    _serve_calls(conn, functions, specs, options["threads"])
    os._exit(0)  # fast: the process's memory goes with it


def release_free_memory():
    """Gives the C heap's free pages back to the system (glibc's ``malloc_trim``; elsewhere
    nothing). Loading a SavedModel and the first call of each signature (TensorFlow's graph
    optimizations) make and drop several copies of a frozen graph's constants: for a 90 MB
    export, ~0.9 GB the heap keeps after they are freed, which the process's RSS would carry
    for as long as it serves. Returns True when the heap was trimmed."""
    trim = _malloc_trim()
    if trim is None:  # not glibc (macOS, musl): its allocator decides
        return False
    trim(0)
    return True


@functools.lru_cache(maxsize=None)
def _malloc_trim():
    # glibc's malloc_trim among the process's own symbols (no library search: ctypes'
    # find_library runs ldconfig in a subprocess), looked up once; None without it.
    import ctypes

    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim


def _serve_calls(conn, functions, specs, threads):
    from concurrent.futures import ThreadPoolExecutor

    send_lock = threading.Lock()
    called = set()  # signatures called here: the first call of one optimises its graph

    def run(call_id, name, inputs):
        try:
            reply = ("ok", call_id, call_function(functions[name], name, specs[name], inputs))
        except ServingError as error:
            reply = ("error", call_id, error.code, error.message)
        except Exception as error:  # noqa: BLE001 - a bug: said, and the process goes on
            reply = ("error", call_id, "INTERNAL", f"{type(error).__name__}: {error}")
        with send_lock:
            try:
                conn.send(reply)
            except (OSError, ValueError):
                pass  # the server is gone
            first = name in functions and name not in called
            called.add(name)
        if first:  # a signature the warm-up did not call leaves copies behind (answered first)
            release_free_memory()

    executor = ThreadPoolExecutor(threads, thread_name_prefix="call")
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            break
        if message[0] == "stop":
            break
        executor.submit(run, *message[1:])
    executor.shutdown(wait=False, cancel_futures=True)
