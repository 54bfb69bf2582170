"""One loaded model version: its SavedModel (or LiteRT model), its signatures, its requests in
flight, and the queue they wait in.

A version directory holds a SavedModel (``saved_model.pb``) and may hold a LiteRT model beside
it (``model.tflite``, TF Serving's name). With ``prefer_tflite_model`` (TF Serving's
``--prefer_tflite_model``) the LiteRT model is served when there is one, else the SavedModel,
as TF Serving falls back; without it the SavedModel is served, and a directory that holds
only ``model.tflite`` does not load (the error names the flag). Which file serves is logged.

A SavedModel is loaded, warmed up and run in a process of its own
(`keras_bert.serving.version_process`); a LiteRT model, light to load and to let go, runs in
the server's process on a pool of interpreters.

Every request with rows waits in a bounded queue for one of a few threads that run model
calls (with batching, the batching queue; without, a queue where each request runs alone).
A full queue is refused at once; a request whose deadline passed or whose client has gone
is dropped before it runs, and a long request (more than 64 rows) runs in slices of 64 rows,
stopped between two slices once nobody waits for it (`keras_bert.serving.batching`).

A version is AVAILABLE once loaded. When the manager retires it (a newer version took its
place) it turns UNLOADING, takes no new requests, and is let go (END) when the last request in
flight on it has finished: TF Serving's states and its availability-preserving unload.
"""

import dataclasses
import logging
import os
import threading

from keras_bert import storage
from keras_bert.export.litert_model import SERVING_FILE as TFLITE_FILE
from keras_bert.serving.batching import Batcher, BatchingOptions
from keras_bert.serving.errors import ServingError, invalid
from keras_bert.serving.limits import RequestLimits
from keras_bert.serving.version_process import LoadError, ProcessSignature, VersionProcess

DEFAULT_SIGNATURE = "serving_default"
# File systems of this process only (TensorFlow's in-memory ram://): a version there is
# copied to a local temporary directory for its process to load.
PROCESS_LOCAL = ("ram://",)
log = logging.getLogger("keras_bert.serving")


def has_saved_model(path):
    return any(storage.isfile(os.path.join(path, name))
               for name in ("saved_model.pb", "saved_model.pbtxt"))


def has_tflite_model(path):
    return storage.isfile(os.path.join(path, TFLITE_FILE))


def served_file(path, prefer_tflite_model=False):
    """Which file of version directory ``path`` serves: ``"model.tflite"`` or
    ``"saved_model.pb"`` (``.pbtxt``) (see the module docstring); FileNotFoundError when
    none can."""
    if prefer_tflite_model and has_tflite_model(path):
        return TFLITE_FILE
    if has_saved_model(path):
        if prefer_tflite_model:
            log.warning("%s has no %s: serving its SavedModel (--prefer_tflite_model falls "
                        "back, as TF Serving does)", path, TFLITE_FILE)
        elif has_tflite_model(path):
            log.info("%s also holds %s, not served: --prefer_tflite_model is off", path,
                     TFLITE_FILE)
        text = not storage.isfile(os.path.join(path, "saved_model.pb"))
        return "saved_model.pbtxt" if text else "saved_model.pb"
    if has_tflite_model(path):
        raise FileNotFoundError(f"{path} holds only {TFLITE_FILE} (a LiteRT model) and no "
                                "saved_model.pb: serve it with --prefer_tflite_model")
    raise FileNotFoundError(f"no saved_model.pb in {path}")


def _local_copy(path):
    import tempfile

    local = tempfile.mkdtemp(prefix="keras_bert-version-")
    for relative in storage.walk_files(path):
        storage.copy(os.path.join(path, relative), os.path.join(local, relative))
    return local


def read_signature_defs(path):
    """The SignatureDefs of the SavedModel in `path` (its first MetaGraph), by key."""
    from google.protobuf import text_format
    from tensorflow.core.protobuf import saved_model_pb2

    saved_model = saved_model_pb2.SavedModel()
    pb = os.path.join(path, "saved_model.pb")
    if storage.isfile(pb):
        saved_model.ParseFromString(storage.read_bytes(pb))
    else:
        text_format.Parse(storage.read_text(os.path.join(path, "saved_model.pbtxt")),
                          saved_model)
    return dict(saved_model.meta_graphs[0].signature_def)


@dataclasses.dataclass(frozen=True)
class ServableOptions:
    """How every version is served (the server's flags; TF Serving's names where it has one).

    Args:
      batching: `BatchingOptions` to batch requests per signature, or None.
      limits: `RequestLimits` on each request.
      num_request_threads: without batching, model calls that run at once (0: the CPU
        count).
      max_enqueued_requests: without batching, requests that may wait for a thread; more are
        refused with RESOURCE_EXHAUSTED (HTTP 429).
      enable_model_warmup, num_request_iterations_for_warmup: warm a SavedModel up before it
        serves (`keras_bert.serving.version_process`).
      tensorflow_intra_op_parallelism, tensorflow_inter_op_parallelism: TensorFlow's thread
        pools in a version's process (0: TensorFlow's default).
      prefer_tflite_model: serve ``model.tflite`` when the directory has one.
      num_tflite_pools: LiteRT interpreters that run at once (the CPUs shared among them).

    Example:

    >>> ServableOptions(max_enqueued_requests=16).request_threads >= 1
    True
    """

    batching: BatchingOptions = None
    limits: RequestLimits = RequestLimits()
    num_request_threads: int = 0
    max_enqueued_requests: int = 64
    enable_model_warmup: bool = True
    num_request_iterations_for_warmup: int = 1
    tensorflow_intra_op_parallelism: int = 0
    tensorflow_inter_op_parallelism: int = 0
    prefer_tflite_model: bool = False
    num_tflite_pools: int = 1

    def __post_init__(self):
        for name, low in (("num_request_threads", 0), ("max_enqueued_requests", 1),
                          ("num_request_iterations_for_warmup", 1),
                          ("tensorflow_intra_op_parallelism", 0),
                          ("tensorflow_inter_op_parallelism", 0), ("num_tflite_pools", 1)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")

    @property
    def request_threads(self):
        return self.num_request_threads or os.cpu_count() or 1

    def queue_options(self):
        """The `BatchingOptions` of the queue of requests that run alone."""
        return BatchingOptions(max_batch_size=2**31 - 1, num_batch_threads=self.request_threads,
                               max_enqueued_batches=self.max_enqueued_requests,
                               group_by_length=False)


class Servable:
    """Version `version` of model `name`, a SavedModel (or LiteRT model) in `path`.

    Args:
      name, version, path: what it is and where.
      options: `ServableOptions` (batching, limits, queue, warm-up...).

    Example:

    >>> import tempfile
    >>> import tensorflow as tf
    >>> class Doubler(tf.Module):
    ...     @tf.function(input_signature=[tf.TensorSpec([None], tf.float32, name="x")])
    ...     def double(self, x):
    ...         return {"y": 2 * x}
    >>> doubler = Doubler()
    >>> import numpy as np
    >>> path = tempfile.mkdtemp()
    >>> tf.saved_model.save(doubler, path, signatures={"serving_default": doubler.double})
    >>> servable = Servable("doubler", 1, path)
    >>> servable.load()
    >>> servable
    Servable('doubler', version=1, state=AVAILABLE)
    >>> signature = servable.signature("")  # "": serving_default
    >>> servable.predict(signature, {"x": np.array([1.0, 2.5], "float32")})
    {'y': array([2., 5.], dtype=float32)}
    >>> servable.retire()  # no request in flight: unloaded at once
    >>> servable.wait_unloaded(60), servable.state
    (True, 'END')
    """

    def __init__(self, name, version, path, options=None):
        self.name = name
        self.version = version
        self.path = path
        self.options = options or ServableOptions()
        self.served_file = None  # "saved_model.pb" or "model.tflite", once loaded
        self.state = "START"
        self.error = ""
        self.signatures = {}
        self.signature_defs = {}
        self.warmed_up = None
        self._loaded = None
        self._local_copy = None
        self._batchers = {}
        self._queues = {}
        self._in_flight = 0
        self._lock = threading.Condition()

    def __repr__(self):
        return f"Servable({self.name!r}, version={self.version}, state={self.state})"

    @property
    def batching(self):
        return self.options.batching

    def load(self):
        """Loads the SavedModel in a process of its own, warmed up (see
        `keras_bert.serving.version_process`), or the LiteRT model (see the module
        docstring). Raises what loading raised; the state tells the outcome."""
        self.state = "LOADING"
        try:
            served = served_file(self.path, self.options.prefer_tflite_model)
            if served == TFLITE_FILE:
                loaded, signatures = self._load_litert()
            else:
                loaded, signatures = self._load_saved_model()
        except Exception as error:
            self.state, self.error = "END", f"{type(error).__name__}: {error}"
            if isinstance(error, LoadError):  # what failed in the process, as it said it
                self.error = str(error)
            self._end(None)
            raise
        self._loaded, self.signatures = loaded, signatures
        self.signature_defs = {key: s.signature_def for key, s in signatures.items()}
        self.served_file = served
        self.state = "AVAILABLE"

    def _load_saved_model(self):
        defs = read_signature_defs(self.path)
        options = self.options
        threads = (options.batching.threads if options.batching else 0) + options.request_threads
        path = self.path
        if path.startswith(PROCESS_LOCAL):  # a file system the child does not share
            path = self._local_copy = _local_copy(path)
        process = VersionProcess(
            path, f"model {self.name!r} version {self.version}", threads=threads,
            warmup=options.enable_model_warmup,
            warmup_iterations=options.num_request_iterations_for_warmup,
            intra_op_threads=options.tensorflow_intra_op_parallelism,
            inter_op_threads=options.tensorflow_inter_op_parallelism)
        specs = process.start()
        self.warmed_up = process.warmed_up
        return process, {key: ProcessSignature(key, process, defs[key], inputs)
                         for key, inputs in specs.items() if key in defs}

    def _load_litert(self):
        from keras_bert.serving.litert_signatures import InterpreterPool, LiteRTSignature

        pool = InterpreterPool(storage.read_bytes(os.path.join(self.path, TFLITE_FILE)),
                               size=self.options.num_tflite_pools)
        return pool, {key: LiteRTSignature(key, pool) for key in pool.signatures}

    @property
    def healthy(self):
        """False once the process serving an AVAILABLE SavedModel has died."""
        loaded = self._loaded
        return not isinstance(loaded, VersionProcess) or self.state != "AVAILABLE" \
            or loaded.alive

    # ---- requests in flight --------------------------------------------------------------
    def acquire(self):
        with self._lock:
            if self.state != "AVAILABLE":
                raise ServingError("UNAVAILABLE", f"version {self.version} of model "
                                   f"{self.name!r} is {self.state.lower()}")
            self._in_flight += 1

    def release(self):
        with self._lock:
            self._in_flight -= 1
            finish = self.state == "UNLOADING" and self._in_flight == 0
        if finish:
            self._finish()

    @property
    def in_flight(self):
        return self._in_flight

    def retire(self):
        """Takes no new requests; unloads once those in flight are done."""
        with self._lock:
            if self.state != "AVAILABLE":
                return
            self.state = "UNLOADING"
            finish = self._in_flight == 0
        if finish:
            self._finish()

    def wait_unloaded(self, timeout=None):
        with self._lock:
            return self._lock.wait_for(lambda: self.state == "END", timeout)

    def _finish(self):
        for batcher in list(self._batchers.values()) + list(self._queues.values()):
            batcher.stop()
        loaded = self._loaded
        with self._lock:
            self._batchers, self._queues = {}, {}
            self._loaded = None
            self.signatures = {}
        if isinstance(loaded, VersionProcess):  # ending it takes a moment: not on a request
            threading.Thread(target=self._end, args=(loaded,), daemon=True,
                             name=f"unload {self.name}/{self.version}").start()
        else:
            self._end(None)

    def _end(self, process):
        if process is not None:
            process.stop()
        if self._local_copy:
            import shutil

            shutil.rmtree(self._local_copy, ignore_errors=True)  # our own temporary copy
        with self._lock:
            self.state = "END"
            self._lock.notify_all()

    # ---- prediction ----------------------------------------------------------------------
    def signature(self, name):
        """The signature `name` (empty: ``serving_default``); FAILED_PRECONDITION, as TF
        Serving answers, when there is none of that name."""
        name = name or DEFAULT_SIGNATURE
        try:
            return self.signatures[name]
        except KeyError:
            raise ServingError(
                "FAILED_PRECONDITION", f"Serving signature key \"{name}\" not found: version "
                f"{self.version} of model {self.name!r} has {sorted(self.signatures)}") from None

    def predict(self, signature, inputs, output_filter=(), timeout=None, alive=None):
        """Checks `inputs` against `signature` and the limits, queues them and runs them
        (batched with other requests when batching is on); returns name -> numpy array,
        only `output_filter`'s if given.

        `timeout`: seconds the client waits (its deadline); `alive`: a callable, False once
        the client has gone. Either drops the request before it runs and stops it between
        two slices of a long one (DEADLINE_EXCEEDED, CANCELLED)."""
        signature.check(inputs)
        for key in output_filter:
            if key not in signature.outputs:
                raise invalid(f"output tensor alias not found in signature {signature.name!r}: "
                              f"{key!r}; its outputs are {sorted(signature.outputs)}")
        rows = signature.rows(inputs)
        limits = self.options.limits
        limits.check_rows(rows)
        for key, value in inputs.items():
            limits.check_texts(key, value)
        if rows == 0:  # an empty batch waits for nothing
            outputs = signature.run(inputs)
        else:
            queue = self._batcher(signature) if self.batching is not None and rows \
                else self._queue(signature)
            outputs = queue.submit(inputs, timeout=timeout, alive=alive)
        if output_filter:
            outputs = {key: outputs[key] for key in output_filter}
        return outputs

    def _batcher(self, signature):
        with self._lock:
            batcher = self._batchers.get(signature.name)
            if batcher is None:
                self._check_serving()
                batcher = self._batchers[signature.name] = Batcher(
                    signature.run, self.batching,
                    name=f"{self.name}/{self.version}/{signature.name}")
            return batcher

    def _queue(self, signature):
        with self._lock:
            queue = self._queues.get(signature.name)
            if queue is None:
                self._check_serving()
                queue = self._queues[signature.name] = Batcher(
                    signature.run, self.options.queue_options(), merge=False,
                    name=f"{self.name}/{self.version}/{signature.name}")
            return queue

    def _check_serving(self):
        if self.state not in ("AVAILABLE", "UNLOADING") or not self.signatures:
            raise ServingError("UNAVAILABLE", f"version {self.version} of model {self.name!r} "
                               f"is {self.state.lower()}")

    def batchers(self):
        return dict(self._batchers)
