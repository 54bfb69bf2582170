"""The parts of benchmarks/serve.py's load run: clients that keep asking a `tools/serve.py`
on 127.0.0.1 with a deadline and record every answer, the figures of what they recorded, the
memory of the server's processes, and the hostile requests of the server's probe, each of
which must be refused with a clear 4xx / INVALID_ARGUMENT while the server keeps serving.
Every loop here is bounded in time and count, and every address is loopback."""

import http.client
import json
import socket
import threading
import time

import numpy as np

OVERLOAD = {"RESOURCE_EXHAUSTED", "UNAVAILABLE", "429", "503"}


class Answers:
    """Every answer of the load clients: (protocol, sent, answered, code, version), code "OK"
    for a success (the gRPC code name or the HTTP status otherwise)."""

    def __init__(self):
        self.items = []
        self._lock = threading.Lock()

    def add(self, *item):
        with self._lock:
            self.items.append(item)

    def between(self, start, end):
        with self._lock:
            return [a for a in self.items if start <= a[1] and a[2] <= end]


def _texts_proto(texts):
    import tensorflow as tf

    return tf.make_tensor_proto(np.array([t.encode("utf-8") for t in texts], dtype=object))


def grpc_caller(address, model="model"):
    """A callable ``(texts, timeout) -> (code, version)`` on its own channel, and its closer."""
    import grpc
    from tensorflow_serving.apis import predict_pb2, prediction_service_pb2_grpc

    channel = grpc.insecure_channel(address)
    stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)

    def call(texts, timeout):
        request = predict_pb2.PredictRequest()
        request.model_spec.name = model
        request.inputs["text"].CopyFrom(_texts_proto(texts))
        try:
            response = stub.Predict(request, timeout=timeout)
        except grpc.RpcError as error:
            return error.code().name, None
        return "OK", response.model_spec.version.value

    return call, channel.close


def rest_caller(url, model="model"):
    """As `grpc_caller`, over one keep-alive HTTP connection (reopened after an error)."""
    host, port = url[len("http://"):].rsplit(":", 1)
    state = {"connection": None}

    def call(texts, timeout):
        if state["connection"] is None:
            state["connection"] = http.client.HTTPConnection(host, int(port), timeout=timeout)
        connection = state["connection"]
        connection.timeout = timeout
        if connection.sock is not None:
            connection.sock.settimeout(timeout)
        try:
            connection.request("POST", f"/v1/models/{model}:predict",
                               body=json.dumps({"instances": texts}).encode("utf-8"),
                               headers={"Content-Type": "application/json"})
            response = connection.getresponse()
            response.read()
        except (OSError, http.client.HTTPException):
            connection.close()
            state["connection"] = None
            return "TIMEOUT_OR_RESET", None
        if response.status != 200:
            return str(response.status), None
        return "OK", None  # REST answers do not name the version

    return call, lambda: state["connection"] and state["connection"].close()


def keep_asking(callers, texts, deadline, answers, stop, batch=1):
    """One thread per caller (protocol, make) sends `batch` texts at a time with `deadline`
    seconds each until `stop` is set; returns the threads (started)."""
    def loop(index, protocol, make):
        call, close = make()
        i = index
        try:
            while not stop.is_set():
                chunk = [texts[(i + k) % len(texts)] for k in range(batch)]
                i += batch
                sent = time.monotonic()
                code, version = call(chunk, deadline)
                answers.add(protocol, sent, time.monotonic(), code, version)
                if code != "OK":
                    stop.wait(0.05)  # a refused client backs off a little, as clients do
        finally:
            close()

    threads = [threading.Thread(target=loop, args=(i, protocol, make), daemon=True)
               for i, (protocol, make) in enumerate(callers)]
    for thread in threads:
        thread.start()
    return threads


def figures(items, start, end):
    """Requests, failures, overload answers, p50/p99 ms and the longest time without a
    successful answer (s) of the answers in [start, end]."""
    ok = sorted((a[2] - a[1]) * 1000 for a in items if a[3] == "OK")
    failed = [a for a in items if a[3] != "OK"]
    overload = [a for a in failed if a[3] in OVERLOAD]
    done = sorted([start] + [a[2] for a in items if a[3] == "OK"] + [end])
    gap = max(b - a for a, b in zip(done, done[1:])) if len(done) > 1 else end - start
    pick = (lambda q: ok[min(len(ok) - 1, int(q * len(ok)))]) if ok else (lambda q: float("nan"))
    codes = {}
    for a in failed:
        codes[a[3]] = codes.get(a[3], 0) + 1
    return {"requests": len(items), "failed": len(failed) - len(overload),
            "overload": len(overload), "failure_codes": codes, "p50_ms": pick(0.5),
            "p99_ms": pick(0.99), "longest_gap_s": gap}


def memory_mb(pid):
    """(RSS of process `pid`, PSS summed over it and its descendants) in MB: the server and
    the processes its versions run in (PSS counts pages they share once)."""
    import psutil

    root = psutil.Process(pid)
    rss = root.memory_info().rss
    pss = 0
    for process in [root] + root.children(recursive=True):
        try:
            pss += process.memory_full_info().pss
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return rss / 2**20, pss / 2**20


class MemoryPeak:
    """The highest `memory_mb` PSS of a server's processes while it runs (sampled 4 times a
    second, for at most `seconds`)."""

    def __init__(self, pid, seconds=600):
        self.peak = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, args=(pid, seconds), daemon=True)
        self._thread.start()

    def _sample(self, pid, seconds):
        end = time.monotonic() + seconds
        while not self._stop.wait(0.25) and time.monotonic() < end:
            try:
                self.peak = max(self.peak, memory_mb(pid)[1])
            except Exception:  # noqa: BLE001 - the server went away: the peak stands
                return

    def stop(self):
        self._stop.set()
        self._thread.join(5)
        return self.peak


# ---- bursts --------------------------------------------------------------------------------
def burst(address, count, texts, deadline):
    """`count` gRPC requests released at once, one channel each: (answers, seconds to the
    slowest overload answer or None)."""
    callers = [grpc_caller(address) for _ in range(count)]
    barrier = threading.Barrier(count)
    results = [None] * count

    def one(i):
        barrier.wait(60)
        sent = time.monotonic()
        code, _ = callers[i][0](texts, deadline)
        results[i] = (code, time.monotonic() - sent)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    for _, close in callers:
        close()
    codes = {}
    for code, _ in filter(None, results):
        codes[code] = codes.get(code, 0) + 1
    overload = [s for code, s in filter(None, results) if code in OVERLOAD]
    return codes, max(overload) if overload else None


def simultaneous_connections(url, count=24):
    """`count` REST clients connect at the same moment and send one request each: how many
    got an answer, and the errors (resets, refusals) of the others."""
    host, port = url[len("http://"):].rsplit(":", 1)
    body = json.dumps({"instances": ["a short text"]}).encode()
    request = (b"POST /v1/models/model:predict HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
               b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    barrier = threading.Barrier(count)
    results = [None] * count

    def one(i):
        barrier.wait(60)
        try:
            with socket.create_connection((host, int(port)), timeout=60) as connection:
                connection.sendall(request)
                received = b""
                while chunk := connection.recv(65536):
                    received += chunk
            results[i] = received.split(b"\r\n", 1)[0].decode()
        except OSError as error:
            results[i] = f"{type(error).__name__}: {error}"

    threads = [threading.Thread(target=one, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    answered = sum(1 for r in results if r and r.startswith("HTTP/1.1 200"))
    return answered, [r for r in results if not (r and r.startswith("HTTP/1.1 200"))]


# ---- hostile requests ----------------------------------------------------------------------
def _raw(url, data, timeout=30):
    """(status line, JSON error or None, seconds) of raw bytes sent on a new connection."""
    host, port = url[len("http://"):].rsplit(":", 1)
    sent = time.monotonic()
    with socket.create_connection((host, int(port)), timeout=timeout) as connection:
        connection.sendall(data)
        received = b""
        try:  # one answer: its head, then Content-Length bytes (or until the server closes)
            while chunk := connection.recv(65536):
                received += chunk
                head, found, body = received.partition(b"\r\n\r\n")
                length = [int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                          if line.lower().startswith(b"content-length:")]
                if found and length and len(body) >= length[0]:
                    break
        except socket.timeout:
            pass
    head, _, body = received.partition(b"\r\n\r\n")
    try:
        message = json.loads(body)["error"]
    except (ValueError, KeyError):
        message = body[:200].decode("utf-8", "replace")
    return head.split(b"\r\n", 1)[0].decode(), message, time.monotonic() - sent


def _post(body, *headers):
    head = [b"POST /v1/models/model:predict HTTP/1.1", b"Host: x", *headers]
    return b"\r\n".join(head) + b"\r\n\r\n" + body


def _json_post(value):
    body = value if isinstance(value, bytes) else json.dumps(value).encode()
    return _post(body, b"Content-Length: %d" % len(body))


def _declared(values, shape):
    proto = _texts_proto(values)
    del proto.tensor_shape.dim[:]
    for size in shape:
        proto.tensor_shape.dim.add(size=size)
    return proto


def hostile_requests(grpc_address, rest_url):
    """Sends each hostile request of the server's probe once; returns (name, answer, seconds,
    clear) per request, ``clear`` when it was refused with a 4xx / INVALID_ARGUMENT (or gRPC's
    own RESOURCE_EXHAUSTED for a message over its size limit) and a message."""
    import grpc
    from tensorflow_serving.apis import predict_pb2, prediction_service_pb2_grpc

    smuggled = _json_post({"instances": ["smuggled"]})
    rest = {
        "REST 100,000 short texts (1.7 MB)": _json_post({"instances": ["short text"] * 100_000}),
        "REST 10,000 texts": _json_post({"instances": ["a longer short text"] * 10_000}),
        "REST Content-Length 1000000 on 21 bytes": _post(b'{"instances": ["ab"]}',
                                                         b"Content-Length: 1000000"),
        "REST Content-Length 10**15": _post(b'{"instances": ["a"]}',
                                            b"Content-Length: 1000000000000000"),
        "REST Content-Length -1": _post(b'{"instances": ["a"]}', b"Content-Length: -1"),
        "REST chunk size zz": _post(b"zz\r\n" + smuggled, b"Transfer-Encoding: chunked"),
        "REST chunk size -5": _post(b"-5\r\n" + smuggled, b"Transfer-Encoding: chunked"),
        "REST conflicting Content-Lengths": _post(b'{"instances": ["a"]}' + smuggled,
                                                  b"Content-Length: 20", b"Content-Length: 5"),
        "REST Transfer-Encoding: identity, chunked": _post(
            b"5\r\nhello\r\n0\r\n\r\n" + smuggled, b"Transfer-Encoding: identity, chunked"),
        "REST JSON nested 1000 levels": _json_post(b'{"instances": ' + b"[" * 1000
                                                   + b"]" * 1000 + b"}"),
    }
    answers = {}

    def send(name):
        status, message, seconds = _raw(rest_url, rest[name])
        code = status.split(" ")[1] if " " in status else "none"
        answers[name] = (name, f"{code} {message}"[:160], seconds,
                         code.startswith("4") and bool(message))

    stalled = "REST Content-Length 1000000 on 21 bytes"  # waits out the read timeout: aside
    aside = threading.Thread(target=send, args=(stalled,))
    aside.start()
    for name in rest:
        if name != stalled:
            send(name)
    aside.join(60)
    found = [answers.get(name, (name, "no answer", 60.0, False)) for name in rest]

    channel = grpc.insecure_channel(grpc_address, options=[
        ("grpc.max_send_message_length", 2**31 - 1)])
    stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
    grpc_cases = {
        "gRPC 100 texts of 1 MB": _texts_proto(["x" * 2**20] * 100),
        "gRPC 10 texts of 1 MB": _texts_proto(["x" * 2**20] * 10),
        "gRPC 41 bytes declaring [5000]": _declared(["a short text"], [5000]),
        "gRPC shape [-5]": _declared(["a"], [-5]),
        "gRPC shape [10**12]": _declared(["a"], [10**12]),
        "gRPC 4,000 rows, 0.5 s deadline": _texts_proto(["a short text"] * 4000),
    }
    for name, proto in grpc_cases.items():
        request = predict_pb2.PredictRequest()
        request.model_spec.name = "model"
        request.inputs["text"].CopyFrom(proto)
        sent = time.monotonic()
        try:
            stub.Predict(request, timeout=0.5 if "deadline" in name else 60)
            code, message = "OK", ""
        except grpc.RpcError as error:
            code, message = error.code().name, error.details() or ""
        seconds = time.monotonic() - sent
        clear = code == "INVALID_ARGUMENT" and bool(message) or (
            code == "RESOURCE_EXHAUSTED" and "larger than max" in message)
        found.append((name, f"{code} {message}"[:160], seconds, clear))
    channel.close()
    return found
