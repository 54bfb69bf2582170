"""Serving load on loopback: tools/serve.py over gRPC and REST, with and without server-side
batching, against a plain `tf.saved_model.load` loop in one process as the floor.

A `BertClassifier` with its preprocessor (tiny random L2/H16, or a preset such as
`minilm_l6` with a fresh head) is saved as a serving SavedModel (raw strings in, tf.text ops in
the graph; exported by `model.export`) and served by two
`tools/serve.py` processes, one with `--enable_batching`. --clients threads, each with its own
connection (a gRPC channel with TF Serving's PredictionServiceStub; a keep-alive HTTP
connection), send --requests requests of --texts_per_request real Wikipedia lines each. The
floor is the same requests sent to the loaded signature directly in this process, by one
thread in a loop and by one thread per client (the faster is the floor): no network, no
serialisation, no server. The servers print how many rows each model call had. Rounds are
interleaved; the best round of each mode is reported. Every failed request is counted and
printed; the run fails unless there are none.

    python benchmarks/serve.py                            # tiny model, 8 clients x 200
    python benchmarks/serve.py --model=minilm_l6 --seq_length=128
"""

# The repository root in place of this folder on the import path (benchmarks/tokenize.py
# would shadow the standard library's tokenize): see benchmarks/common/harness.py.
import os as _os, sys as _sys  # noqa: E401
_here = _os.path.dirname(_os.path.abspath(__file__))
_sys.path[:] = [_os.path.dirname(_here)] + [
    p for p in _sys.path if _os.path.abspath(p or _os.curdir) != _here]
from benchmarks.common import harness  # noqa: E402

harness.start()  # before TensorFlow: keep the table clean

import json  # noqa: E402
import os  # noqa: E402
import pathlib  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402

from absl import flags  # noqa: E402

FLAGS = flags.FLAGS
harness.define_flags(seq_length=64, warmup=5, rounds=2, help={
    "seq_length": "Sequence length of the served preprocessor.",
    "warmup": "Untimed requests per client before each timed run.",
    "rounds": "Interleaved rounds; the best of each mode is reported."})
flags.DEFINE_string("model", "tiny", "tiny (random L2/H16) or a preset name, e.g. minilm_l6.")
flags.DEFINE_integer("clients", 8, "Concurrent clients (threads, one connection each).")
flags.DEFINE_integer("requests", 200, "Timed requests per client.")
flags.DEFINE_integer("texts_per_request", 1, "Strings in each request.")
flags.DEFINE_list("protocols", ["grpc", "rest"], "grpc, rest.")
flags.DEFINE_integer("max_batch_size", 32, "The batching server's --max_batch_size.")
flags.DEFINE_integer("batch_timeout_micros", 0, "The batching server's --batch_timeout_micros.")
flags.DEFINE_integer("num_batch_threads", 0, "The batching server's --num_batch_threads "
                     "(0: its default, the CPU count).")
flags.DEFINE_list("length_groups", ["on"], "Batching servers to run: on (a batch's texts run "
                  "as one model call per length class, the default), off (one call), or both.")

_LOOP = "in-process loop, 1 thread"
_THREADS = "in-process, one thread per client"


def _texts(count):
    from tests.text.corpus import wikipedia_lines

    lines = [line[:300] for line in wikipedia_lines() if len(line) > 20]
    return [lines[i % len(lines)] for i in range(count)]


def _build(directory):
    from tests.export import serving_models

    if FLAGS.model == "tiny":
        model = serving_models.tiny_classifier(seq_length=FLAGS.seq_length)
    else:
        model = serving_models.preset_classifier(FLAGS.model, seq_length=FLAGS.seq_length)
    return model.export(str(pathlib.Path(directory) / "model" / "1"), verbose=False)


def _load(make_call, texts, clients=None):
    """Runs the load (--clients x --requests requests; one client sending all of them if
    `clients` is 1); returns (seconds, sorted latencies in ms, failures)."""
    n = clients or FLAGS.clients
    per = FLAGS.clients * FLAGS.requests // n
    barrier = threading.Barrier(n + 1)
    latencies, failures = [], []
    lock = threading.Lock()

    def client(index):
        try:
            call, close = make_call()
        except Exception as error:  # counted: a client that cannot connect fails its requests
            with lock:
                failures.append(f"client {index}: {error}")
            barrier.wait()
            return
        mine, k = [], FLAGS.texts_per_request
        batches = [texts[(index * per + i) * k % len(texts):][:k] or texts[:k]
                   for i in range(per + FLAGS.warmup)]
        try:
            for batch in batches[:FLAGS.warmup]:
                call(batch)
            barrier.wait()
            for batch in batches[FLAGS.warmup:]:
                start = time.perf_counter()
                try:
                    call(batch)
                    mine.append((time.perf_counter() - start) * 1000)
                except Exception as error:
                    with lock:
                        failures.append(f"client {index}: {type(error).__name__}: "
                                        f"{str(error)[:200]}")
        except threading.BrokenBarrierError:
            return
        finally:
            close()
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(n)]
    for thread in threads:
        thread.start()
    barrier.wait(timeout=600)
    start = time.perf_counter()
    for thread in threads:
        thread.join(600)
    return time.perf_counter() - start, sorted(latencies), failures


def _floor_call(signature):
    import tensorflow as tf

    def make():
        return (lambda batch: signature(text=tf.constant(batch))["label_ids"].numpy()), \
            (lambda: None)

    return make


def _grpc_call(address):
    def make():
        import grpc
        import numpy as np
        import tensorflow as tf
        from tensorflow_serving.apis import predict_pb2, prediction_service_pb2_grpc

        channel = grpc.insecure_channel(address)
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)

        def call(batch):
            request = predict_pb2.PredictRequest()
            request.model_spec.name = "model"
            array = np.array([t.encode("utf-8") for t in batch], dtype=object)
            request.inputs["text"].CopyFrom(tf.make_tensor_proto(array))
            stub.Predict(request, timeout=60)

        return call, channel.close

    return make


def _rest_call(url):
    def make():
        import http.client

        host, port = url[len("http://"):].rsplit(":", 1)
        connection = http.client.HTTPConnection(host, int(port), timeout=60)

        def call(batch):
            connection.request("POST", "/v1/models/model:predict",
                               body=json.dumps({"instances": batch}).encode("utf-8"),
                               headers={"Content-Type": "application/json"})
            response = connection.getresponse()
            body = response.read()
            if response.status != 200:
                raise RuntimeError(f"HTTP {response.status}: {body[:200]!r}")

        return call, connection.close

    return make


def _figures(seconds, latencies, failures):
    count = len(latencies) + len(failures)
    pick = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))] \
        if latencies else float("nan")  # noqa: E731
    return {"qps": count / seconds if seconds else 0.0, "p50_ms": pick(0.50),
            "p99_ms": pick(0.99), "requests": count, "failed": len(failures)}


# --protocols -> the modules each client imports.
PROTOCOLS = {"grpc": ("grpc", "tensorflow_serving"), "rest": ()}


def main(argv):
    del argv
    harness.require_contenders("--protocols", FLAGS.protocols, PROTOCOLS)  # each one runs
    from absl import logging

    logging.set_verbosity(logging.ERROR)  # tf.saved_model.save's INFO lines
    import keras_bert  # first: loads TensorFlow quietly

    from tests.serving.clients import ServerProcess

    with tempfile.TemporaryDirectory() as directory, keras_bert.backend.quiet_native_stderr():
        path = _build(directory)
        import tensorflow as tf
        import tensorflow_text  # noqa: F401

        texts = _texts(max(64, FLAGS.clients * (FLAGS.requests + FLAGS.warmup)
                           * FLAGS.texts_per_request))
        common = [f"--model_name=model", f"--model_base_path={os.path.dirname(path)}",
                  "--port=0", "--file_system_poll_wait_seconds=0"]
        batching = ["--enable_batching", f"--max_batch_size={FLAGS.max_batch_size}",
                    f"--batch_timeout_micros={FLAGS.batch_timeout_micros}"]
        if FLAGS.num_batch_threads:
            batching.append(f"--num_batch_threads={FLAGS.num_batch_threads}")
        rest = "rest" in FLAGS.protocols
        servers = {}
        try:
            groups = {"on": [], "off": ["--nobatch_group_by_length"]}
            batched = [(_batched_mode(g), batching + groups[g]) for g in FLAGS.length_groups]
            for mode, extra in [("unbatched", [])] + batched:
                port = [f"--rest_api_port={_free_port()}"] if rest else []
                servers[mode] = ServerProcess(*common, *port, *extra)
            for server in servers.values():
                server.start(rest=rest)
            signature = tf.saved_model.load(path).signatures["serving_default"]
            modes = {_LOOP: _floor_call(signature), _THREADS: _floor_call(signature)}
            for protocol in FLAGS.protocols:
                for mode, server in servers.items():
                    modes[f"{protocol} {mode}"] = (_grpc_call(server.grpc_address)
                                                   if protocol == "grpc"
                                                   else _rest_call(server.rest_url))
            best, failures = {}, []
            for _ in range(FLAGS.rounds):
                for name, make in modes.items():
                    seconds, latencies, failed = _load(make, texts,
                                                       1 if name == _LOOP else None)
                    failures += [f"{name}: {f}" for f in failed]
                    figures = _figures(seconds, latencies, failed)
                    if name not in best or figures["qps"] > best[name]["qps"]:
                        best[name] = figures
        finally:
            calls = {mode: _rows_per_call(server.stop()[1]) for mode, server in servers.items()}
    _report(best, failures, calls)
    if failures:
        sys.exit(1)


def _batched_mode(length_groups):
    """The name of a batching server's mode: "batched" for the default (length groups on)."""
    if length_groups not in ("on", "off"):
        raise SystemExit(f"serve.py: --length_groups takes on and off, got {length_groups!r}")
    return "batched" if length_groups == "on" else "batched, one call per batch"


def _rows_per_call(stdout):
    """Rows per model call over the server's life, from the line serve.py prints at exit."""
    for line in stdout.splitlines():
        if line.startswith("Model calls: model/1/serving_default:"):
            return float(line.rsplit("(", 1)[1].split()[0])
    return float("nan")


def _free_port():
    from tests.serving.clients import free_port

    return free_port()


def _report(best, failures, calls):
    floor = max(best[_LOOP]["qps"], best[_THREADS]["qps"])
    print(f"{FLAGS.model} model, seq_length {FLAGS.seq_length}: {FLAGS.clients} clients x "
          f"{FLAGS.requests} requests x {FLAGS.texts_per_request} text(s), best of "
          f"{FLAGS.rounds} round(s); batching: max_batch_size={FLAGS.max_batch_size}, "
          f"batch_timeout_micros={FLAGS.batch_timeout_micros}")
    print(f"| {'mode':<40} | {'QPS':>8} | {'p50 ms':>7} | {'p99 ms':>7} | {'failed':>6} | "
          f"{'x floor':>7} |")
    print(f"|{'-' * 42}|{'-' * 10}|{'-' * 9}|{'-' * 9}|{'-' * 8}|{'-' * 9}|")
    for name, f in best.items():
        print(f"| {name:<40} | {f['qps']:8.1f} | {f['p50_ms']:7.2f} | {f['p99_ms']:7.2f} | "
              f"{f['failed']:6d} | {f['qps'] / floor:7.2f} |")
    gains = {f"{p} {m}": best[f"{p} {m}"]["qps"] / best[f"{p} unbatched"]["qps"]
             for p in FLAGS.protocols for m in map(_batched_mode, FLAGS.length_groups)}
    for mode, gain in gains.items():
        print(f"batching gain over unbatched serving, {mode}: {gain:.2f}x")
    print("rows per model call: " + ", ".join(f"{mode} server {value:.2f}"
                                             for mode, value in calls.items()))
    for failure in failures[:20]:
        print(f"FAILED {failure}")
    harness.print_summary({"model": FLAGS.model, "seq_length": FLAGS.seq_length,
                           "clients": FLAGS.clients, "requests": FLAGS.requests,
                           "texts_per_request": FLAGS.texts_per_request,
                           "max_batch_size": FLAGS.max_batch_size,
                           "batch_timeout_micros": FLAGS.batch_timeout_micros,
                           "num_batch_threads": FLAGS.num_batch_threads, "modes": best,
                           "floor_qps": floor, "batching_gain": gains, "rows_per_call": calls,
                           "failed": len(failures)})


if __name__ == "__main__":
    harness.run(main)
