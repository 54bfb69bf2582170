"""`ModelServer`: the model manager behind TF Serving's gRPC and REST APIs, in one process."""

import threading

from keras_bert.serving.grpc_service import address, start_grpc_server
from keras_bert.serving.manager import ModelManager
from keras_bert.serving.rest import RestServer, positive_number


class ModelServer:
    """Serves SavedModels with TF Serving's gRPC API (PredictionService, ModelService) and,
    with `rest_api_port`, its REST API, as `tensorflow_model_server` does.

    Args:
      models: `ModelConfig`s (`config.models_from_flags` reads them from the command line or a
        model config file).
      grpc_port: gRPC port (0: a free one; see `grpc_port` after `start`).
      rest_api_port: REST port (0: a free one), or None for no REST API.
      host: the address both listen on (default loopback only).
      poll_wait_seconds: how often the model base paths are looked at for new versions.
      grpc_max_threads: gRPC requests handled at once (more: RESOURCE_EXHAUSTED at once).
      grpc_channel_arguments: more gRPC server options, (name, value) pairs (TF Serving's
        ``--grpc_channel_arguments``).
      rest_api_num_threads: REST requests processed at once (None: 4 per CPU).
      rest_api_timeout_in_ms: how long a REST request may wait for its answer (0 or None: no
        limit).
      rest_api_read_timeout_in_ms: how long a REST request that has begun may send nothing
        before it is answered 408 and its connection closed.
      **options: how versions are served, the fields of
        `keras_bert.serving.servable.ServableOptions`: ``batching`` (`BatchingOptions`, or
        None), ``limits`` (`RequestLimits`), ``num_request_threads``,
        ``max_enqueued_requests``, ``enable_model_warmup``, ``prefer_tflite_model``, ...

    Example (a SavedModel with one signature, served and asked over REST and gRPC):

    >>> import json, tempfile, urllib.request
    >>> import tensorflow as tf
    >>> from keras_bert.serving import ModelConfig
    >>> class Doubler(tf.Module):
    ...     @tf.function(input_signature=[tf.TensorSpec([None], tf.float32, name="x")])
    ...     def double(self, x):
    ...         return {"y": 2 * x}
    >>> base = tempfile.mkdtemp()
    >>> doubler = Doubler()
    >>> tf.saved_model.save(doubler, f"{base}/1", signatures={"serving_default": doubler.double})
    >>> server = ModelServer([ModelConfig("doubler", base)], grpc_port=0, rest_api_port=0)
    >>> server = server.start()
    >>> request = urllib.request.Request(f"{server.rest_url}/v1/models/doubler:predict",
    ...                                  data=json.dumps({"instances": [1.0, 2.5]}).encode())
    >>> json.load(urllib.request.urlopen(request, timeout=60))
    {'predictions': [2.0, 5.0]}
    >>> import grpc
    >>> from tensorflow_serving.apis import predict_pb2, prediction_service_pb2_grpc
    >>> channel = grpc.insecure_channel(server.grpc_address)
    >>> stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
    >>> grpc_request = predict_pb2.PredictRequest()
    >>> grpc_request.model_spec.name = "doubler"
    >>> grpc_request.inputs["x"].CopyFrom(tf.make_tensor_proto([3.0], dtype=tf.float32))
    >>> response = stub.Predict(grpc_request, timeout=60)
    >>> tf.make_ndarray(response.outputs["y"]), response.model_spec.version.value
    (array([6.], dtype=float32), 1)
    >>> channel.close()
    >>> server.stop()
    """

    def __init__(self, models, grpc_port=8500, rest_api_port=None, host="127.0.0.1",
                 poll_wait_seconds=1.0, grpc_max_threads=32, grpc_channel_arguments=(),
                 rest_api_num_threads=None, rest_api_timeout_in_ms=30000,
                 rest_api_read_timeout_in_ms=5000, **options):
        # Checked before anything is made (the REST server is made only in start()).
        positive_number("rest_api_read_timeout_in_ms", rest_api_read_timeout_in_ms,
                        "milliseconds")
        if rest_api_timeout_in_ms != 0 or isinstance(rest_api_timeout_in_ms, bool):
            positive_number("rest_api_timeout_in_ms", rest_api_timeout_in_ms, "milliseconds",
                            "no limit")  # 0 too, as tools/serve.py's flag
        positive_number("rest_api_num_threads", rest_api_num_threads, "requests",
                        "4 per CPU", whole=True)
        self.manager = ModelManager(models, poll_wait_seconds=poll_wait_seconds, **options)
        self.host = host
        self._grpc_port_wanted = grpc_port
        self._rest_port_wanted = rest_api_port
        self._grpc_max_threads = grpc_max_threads
        self._grpc_channel_arguments = tuple(grpc_channel_arguments)
        self._rest_threads = rest_api_num_threads
        self._rest_timeout = rest_api_timeout_in_ms / 1000 if rest_api_timeout_in_ms else None
        self._rest_read_timeout = rest_api_read_timeout_in_ms / 1000
        self._grpc = self._rest = self._rest_thread = None
        self.grpc_port = self.rest_port = None
        self._stopped = threading.Event()

    def start(self):
        """Loads the models, then listens; returns the server. Raises `ServerConfigError`
        for a model that is missing or does not load, or a port that is in use."""
        try:
            self.manager.start()
            self._grpc, self.grpc_port = start_grpc_server(
                self.manager, self.host, self._grpc_port_wanted, self._grpc_max_threads,
                self._grpc_channel_arguments)
            if self._rest_port_wanted is not None:
                self._rest = RestServer(self.manager, self.host, self._rest_port_wanted,
                                        timeout=self._rest_timeout,
                                        read_timeout=self._rest_read_timeout,
                                        num_threads=self._rest_threads)
                self.rest_port = self._rest.port
                self._rest_thread = threading.Thread(
                    target=self._rest.serve_forever, kwargs={"poll_interval": 0.2},
                    daemon=True, name="rest-server")
                self._rest_thread.start()
        except BaseException:
            self.stop()
            raise
        return self

    @property
    def grpc_address(self):
        return address(self.host, self.grpc_port)

    @property
    def rest_url(self):
        return None if self.rest_port is None else f"http://{address(self.host, self.rest_port)}"

    def stop(self, grace=5.0):
        """Stops listening (gRPC requests in flight get `grace` seconds) and unloads."""
        if self._grpc is not None:
            self._grpc.stop(grace).wait(grace + 5)
            self._grpc = None
        if self._rest is not None:
            self._rest.shutdown()
            self._rest.server_close()
            self._rest = None
        self.manager.stop()
        self._stopped.set()

    def wait(self, timeout=None):
        """Blocks until `stop` (from another thread or a signal handler)."""
        return self._stopped.wait(timeout)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc_info):
        self.stop()
