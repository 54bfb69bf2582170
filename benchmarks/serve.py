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

The load run (``--parts=load``, after the throughput part by default) serves the model with
the server's default flags and keeps --load_grpc_clients + --load_rest_clients clients asking
(one text each, a --deadline_ms deadline) for --load_seconds per round, with a new version
dropped in half-way through each round (a round goes on until the new version answers). It
reports the requests, failures, overload answers, p50/p99 latency, the longest time without
an answer (across the swap too), the memory of the server's processes (RSS of the server,
PSS of it and its version processes) at the start and end of each round; how long clients
with --deadline_ms deadlines wait for their first answers from the server before it has
answered anything (cold start: its start overlaps the throughput part); a burst of
--burst_requests requests at once (overload answered at once, served again after it);
--connections clients connecting at once; and the hostile requests of the
server's probe, sent during the first round (each must be refused with a clear 4xx /
INVALID_ARGUMENT while the clients go on, the memory under twice its idle figure). It fails
when a check fails; with --notiming_checks the checks of how long things took are printed
but do not fail it.
"""

# The repository root in place of this folder on the import path (benchmarks/tokenize.py
# would shadow the standard library's tokenize): see benchmarks/common/harness.py.
import os as _os, sys as _sys  # noqa: E401
_here = _os.path.dirname(_os.path.abspath(__file__))
_sys.path[:] = [_os.path.dirname(_here)] + [
    p for p in _sys.path if _os.path.abspath(p or _os.curdir) != _here]
from benchmarks.common import harness, serving_report as load_report  # noqa: E402

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
flags.DEFINE_list("token_budgets", [], "More batching servers, each closing its batches by "
                  "this --max_batch_tokens budget (e.g. 2048,4096), against the count of rows.")
flags.DEFINE_list("parts", ["throughput", "load"], "throughput (the modes above), load (the "
                  "load run: a swap under load, overload, hostile requests).")
flags.DEFINE_integer("load_seconds", 30, "Seconds of each round of the load run.")
flags.DEFINE_integer("load_rounds", 2, "Rounds of the load run (each with a version swap).")
flags.DEFINE_integer("load_grpc_clients", 4, "gRPC clients of the load run.")
flags.DEFINE_integer("load_rest_clients", 4, "REST clients of the load run.")
flags.DEFINE_integer("deadline_ms", 1000, "Deadline of each request of the load run.")
flags.DEFINE_integer("read_timeout_ms", 5000, "The load run's server's "
                     "--rest_api_read_timeout_in_ms (how long the stalled REST body of the "
                     "hostile requests is waited for).")
flags.DEFINE_bool("timing_checks", True, "Whether the load run's checks of how long things "
                  "took (no second without an answer, overload answered within a second, "
                  "clients served within two deadlines after a cold start and after the burst) "
                  "fail the run; false prints the ones that failed and goes on (a small run on "
                  "a busy machine, as the test suite's).")
flags.DEFINE_integer("burst_requests", 96, "Requests sent at once in the load run's burst.")
flags.DEFINE_integer("connections", 24, "REST clients connecting at once in the load run.")

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
        common = ["--model_name=model", f"--model_base_path={os.path.dirname(path)}",
                  "--port=0", "--file_system_poll_wait_seconds=0"]
        batching = ["--enable_batching", f"--max_batch_size={FLAGS.max_batch_size}",
                    f"--batch_timeout_micros={FLAGS.batch_timeout_micros}"]
        if FLAGS.num_batch_threads:
            batching.append(f"--num_batch_threads={FLAGS.num_batch_threads}")
        rest = "rest" in FLAGS.protocols
        servers, best, failures, calls, load = {}, {}, [], {}, None
        unknown = sorted(set(FLAGS.parts) - {"throughput", "load"})
        if unknown or not FLAGS.parts:
            raise SystemExit(f"serve.py: --parts takes throughput and load, got {FLAGS.parts}")
        base = pathlib.Path(directory) / "load" / "model"
        load_server = _load_server(path, base) if "load" in FLAGS.parts else None
        try:  # the load run's server starts meanwhile, in its own process
            if "throughput" not in FLAGS.parts:
                raise _Skip()
            groups = {"on": [], "off": ["--nobatch_group_by_length"]}
            batched = [(_batched_mode(g), batching + groups[g]) for g in FLAGS.length_groups]
            batched += [(f"batched, {int(b)} tokens", batching + [f"--max_batch_tokens={b}"])
                        for b in FLAGS.token_budgets]
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
            for _ in range(FLAGS.rounds):
                for name, make in modes.items():
                    seconds, latencies, failed = _load(make, texts,
                                                       1 if name == _LOOP else None)
                    failures += [f"{name}: {f}" for f in failed]
                    figures = _figures(seconds, latencies, failed)
                    if name not in best or figures["qps"] > best[name]["qps"]:
                        best[name] = figures
        except _Skip:
            pass
        except BaseException:
            if load_server is not None:
                load_server.stop()
            raise
        finally:
            calls = {mode: _rows_per_call(server.stop()[1]) for mode, server in servers.items()}
        if load_server is not None:
            load = _load_run(load_server, path, base, texts)
    if best:
        _report(best, failures, calls)
    if load is not None:
        load_report.print_load(load)
    summary = dict(_summary(best, calls, failures) if best else {}, failed=len(failures))
    if load is not None:
        summary["load"] = load
    harness.print_summary(summary)
    if failures or load is not None and load["failed_checks"]:
        sys.exit(1)


class _Skip(Exception):
    pass


def _load_server(path, base):
    """The load run's `tools/serve.py` (default flags, polling `base`), started (not waited
    for) with version 1 of the export at `path`."""
    from tests.serving.clients import ServerProcess

    _install(path, base, 1)
    return ServerProcess("--model_name=model", f"--model_base_path={base}", "--port=0",
                         f"--rest_api_port={_free_port()}",
                         "--file_system_poll_wait_seconds=0.5",
                         f"--rest_api_read_timeout_in_ms={FLAGS.read_timeout_ms}")


def _load_run(server, path, base, texts):
    """The load run (see the module docstring) on `server`; returns its figures. Its "cold
    start" is the first answers of the server, which has answered nothing before."""
    from benchmarks.common import serving_load

    versions = [1]
    deadline = FLAGS.deadline_ms / 1000
    found = {"rounds": [], "deadline_ms": FLAGS.deadline_ms,
             "read_timeout_ms": FLAGS.read_timeout_ms}
    try:
        server.start(rest=True)
        found["cold_start_first_answer_s"] = _first_answers(server, texts, deadline)
        time.sleep(1)
        found["idle_rss_mb"], found["idle_pss_mb"] = serving_load.memory_mb(server.process.pid)
        callers = ([("grpc", lambda: serving_load.grpc_caller(server.grpc_address))]
                   * FLAGS.load_grpc_clients
                   + [("rest", lambda: serving_load.rest_caller(server.rest_url))]
                   * FLAGS.load_rest_clients)
        for round_index in range(FLAGS.load_rounds):
            answers, stop = serving_load.Answers(), threading.Event()
            rss, pss = serving_load.memory_mb(server.process.pid)
            start = time.monotonic()
            threads = serving_load.keep_asking(callers, texts, deadline, answers, stop)
            time.sleep(FLAGS.load_seconds / 2)
            versions.append(versions[-1] + 1)
            swapped = time.monotonic()
            _install(path, base, versions[-1])
            peak = hostile = None
            if round_index == 0:
                peak = serving_load.MemoryPeak(server.process.pid)
                hostile = serving_load.hostile_requests(server.grpc_address, server.rest_url)
            time.sleep(max(0.0, start + FLAGS.load_seconds - time.monotonic()))
            limit = time.monotonic() + 60  # the round goes on until the new version answers
            while time.monotonic() < limit and not any(
                    a[4] == versions[-1] for a in answers.between(swapped, limit)):
                time.sleep(0.1)
            time.sleep(0.5)
            stop.set()
            for thread in threads:
                thread.join(60)
            end = time.monotonic()
            served = [a for a in answers.items if a[4] == versions[-1]]
            taken = min((a[2] for a in served), default=None)
            time.sleep(1)  # the old version's process ends
            figures = serving_load.figures(answers.items, start, end)
            after = [a for a in answers.items if a[1] >= swapped]
            figures.update(
                version=versions[-1], start_rss_mb=rss, start_pss_mb=pss,
                swap_to_new_version_s=None if taken is None else taken - swapped,
                longest_gap_after_swap_s=serving_load.figures(after, swapped, end)[
                    "longest_gap_s"])
            figures["end_rss_mb"], figures["end_pss_mb"] = serving_load.memory_mb(
                server.process.pid)
            if hostile is not None:
                figures["hostile_peak_pss_mb"] = peak.stop()
                found["hostile"] = [{"request": n, "answer": a, "seconds": s, "clear": c}
                                    for n, a, s, c in hostile]
            found["rounds"].append(figures)
        codes, slowest = serving_load.burst(server.grpc_address, FLAGS.burst_requests,
                                            texts[:1], deadline)
        found["burst"] = {"requests": FLAGS.burst_requests, "answers": codes,
                          "slowest_overload_answer_s": slowest,
                          "served_again_after_s": _first_answers(server, texts, deadline, 1)}
        answered, errors = serving_load.simultaneous_connections(server.rest_url,
                                                                 FLAGS.connections)
        found["connections"] = {"clients": FLAGS.connections, "answered": answered,
                                "errors": errors[:5]}
    finally:
        code, out, err = server.stop()
    found["server_exit"] = code
    found["failed_checks"] = load_report.checks(found)
    slow = load_report.timing_checks(found)
    if FLAGS.timing_checks:
        found["failed_checks"] += slow
    else:
        found["timing_checks_not_enforced"] = slow
    return found


def _install(path, base, version):
    """Copies the export to `base/<version>` the safe way (a hidden copy, then a rename)."""
    import shutil

    staging = base / f".incoming-{version}"
    shutil.copytree(path, staging)
    staging.rename(base / str(version))


def _first_answers(server, texts, deadline, clients=None):
    """Seconds until each of `clients` (default --connections) gRPC clients with `deadline`
    deadlines, started at once, has its first answer (the slowest); None if one had none
    within 30 s."""
    from benchmarks.common import serving_load

    count = clients or FLAGS.connections
    start = time.monotonic()
    firsts = [None] * count

    def one(i):
        call, close = serving_load.grpc_caller(server.grpc_address)
        try:
            while time.monotonic() < start + 30:
                if call(texts[i:i + 1], deadline)[0] == "OK":
                    firsts[i] = time.monotonic() - start
                    return
        finally:
            close()

    threads = [threading.Thread(target=one, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return None if None in firsts else max(firsts)


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
    gains = _summary(best, calls, failures)["batching_gain"]
    for mode, gain in gains.items():
        print(f"batching gain over unbatched serving, {mode}: {gain:.2f}x")
    print("rows per model call: " + ", ".join(f"{mode} server {value:.2f}"
                                             for mode, value in calls.items()))
    for failure in failures[:20]:
        print(f"FAILED {failure}")


def _summary(best, calls, failures):
    floor = max(best[_LOOP]["qps"], best[_THREADS]["qps"])
    gains = {name: best[name]["qps"] / best[f"{name.split()[0]} unbatched"]["qps"]
             for name in best if name.split()[0] in FLAGS.protocols and "unbatched" not in name}
    return {"model": FLAGS.model, "seq_length": FLAGS.seq_length, "clients": FLAGS.clients,
            "requests": FLAGS.requests, "texts_per_request": FLAGS.texts_per_request,
            "max_batch_size": FLAGS.max_batch_size,
            "batch_timeout_micros": FLAGS.batch_timeout_micros,
            "num_batch_threads": FLAGS.num_batch_threads, "modes": best, "floor_qps": floor,
            "batching_gain": gains, "rows_per_call": calls}


if __name__ == "__main__":
    harness.run(main)
