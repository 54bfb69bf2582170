"""Client helpers of the server tests: TF Serving's own gRPC stub and plain HTTP, on 127.0.0.1,
each call bounded by a timeout (a hung server fails the test, it does not block CI)."""

import json
import threading
import urllib.error
import urllib.request

import numpy as np

TIMEOUT = 60  # seconds for any one call


def predict_request(name, inputs, signature_name="", version=None, label=None,
                    output_filter=()):
    """A PredictRequest; `inputs` maps names to numpy arrays or ready TensorProtos."""
    import tensorflow as tf
    from tensorflow_serving.apis import predict_pb2

    request = predict_pb2.PredictRequest()
    request.model_spec.name = name
    if signature_name:
        request.model_spec.signature_name = signature_name
    if version is not None:
        request.model_spec.version.value = version
    if label is not None:
        request.model_spec.version_label = label
    for key, value in inputs.items():
        proto = value if hasattr(value, "dtype") and hasattr(value, "tensor_shape") \
            else tf.make_tensor_proto(value)
        request.inputs[key].CopyFrom(proto)
    request.output_filter.extend(output_filter)
    return request


def texts(values):
    """A tf.string batch for `make_tensor_proto`: str as UTF-8, bytes as they are."""
    array = np.empty(len(values), dtype=object)
    array[:] = [v.encode("utf-8") if isinstance(v, str) else v for v in values]
    return array


def outputs(response):
    import tensorflow as tf

    return {key: tf.make_ndarray(proto) for key, proto in response.outputs.items()}


class GrpcClient:
    """PredictionServiceStub and ModelServiceStub over one insecure channel."""

    def __init__(self, address):
        import grpc
        from tensorflow_serving.apis import model_service_pb2_grpc, prediction_service_pb2_grpc

        self.channel = grpc.insecure_channel(address)
        self.prediction = prediction_service_pb2_grpc.PredictionServiceStub(self.channel)
        self.models = model_service_pb2_grpc.ModelServiceStub(self.channel)

    def predict(self, *args, **kwargs):
        return self.prediction.Predict(predict_request(*args, **kwargs), timeout=TIMEOUT)

    def close(self):
        self.channel.close()


def http(url, body=None, method=None):
    """(status, decoded JSON answer) of one HTTP request; `body`: bytes, or JSON-able."""
    if body is not None and not isinstance(body, bytes):
        body = json.dumps(body).encode("utf-8")
    request = urllib.request.Request(url, data=body, method=method)
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        with error:
            return error.code, json.loads(error.read())


def run_concurrently(count, work):
    """Runs `work(i)` for i < count in threads released together; returns the results (or the
    exceptions raised), in order."""
    results = [None] * count
    barrier = threading.Barrier(count)

    def one(i):
        barrier.wait(TIMEOUT)
        try:
            results[i] = work(i)
        except Exception as error:  # returned, for the test to look at
            results[i] = error

    threads = [threading.Thread(target=one, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(TIMEOUT * 2)
        assert not thread.is_alive(), "a client thread hung"
    return results


class ServerProcess:
    """`tools/serve.py` in a subprocess; `start` waits (bounded) for the lines saying where it
    listens and fails with its stderr if it exits first."""

    def __init__(self, *flags, cwd=None):
        import pathlib
        import subprocess
        import sys

        repo = pathlib.Path(__file__).resolve().parents[2]
        self.command = [sys.executable, str(repo / "tools" / "serve.py"), *flags]
        self.process = subprocess.Popen(self.command, cwd=cwd or repo, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True)
        self.lines, self.errors = [], []
        self.grpc_address = self.rest_url = None
        self._ready = threading.Event()  # stdout closed
        threading.Thread(target=self._read, daemon=True).start()
        self._stderr = threading.Thread(target=lambda: self.errors.extend(self.process.stderr),
                                        daemon=True)
        self._stderr.start()

    def _read(self):
        for line in self.process.stdout:
            self.lines.append(line)
            if line.startswith("Running gRPC ModelServer at "):
                self.grpc_address = line.split(" at ", 1)[1].split(" ", 1)[0]
            elif line.startswith("Exporting HTTP/REST API at:"):
                self.rest_url = line.split("at:", 1)[1].split(" ", 1)[0]
        self._ready.set()

    def start(self, timeout=180, rest=False):
        import time

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.grpc_address and (self.rest_url or not rest):
                return self
            if self.process.poll() is not None:
                self._ready.wait(10)
                self._stderr.join(10)
                raise AssertionError(f"serve.py exited with {self.process.returncode}:\n"
                                     f"{''.join(self.lines)}\n{''.join(self.errors)}")
            time.sleep(0.05)
        self.stop()
        raise AssertionError(f"serve.py did not start within {timeout} s:\n{''.join(self.lines)}")

    def stop(self, timeout=60):
        """SIGTERM, then waits; returns (return code, stdout, stderr)."""
        import subprocess

        if self.process.poll() is None:
            self.process.terminate()
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout)
        self._ready.wait(10)
        self._stderr.join(10)
        return self.process.returncode, "".join(self.lines), "".join(self.errors)


def free_port():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
