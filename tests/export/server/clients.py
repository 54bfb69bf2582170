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
