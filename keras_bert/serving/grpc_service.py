"""TF Serving's gRPC API over a `ModelManager`: ``tensorflow.serving.PredictionService``
(Predict, GetModelMetadata) and ``ModelService`` (GetModelStatus), with the protos and
generated stubs of tensorflow-serving-api. Client code written for TF Serving
(``prediction_service_pb2_grpc.PredictionServiceStub``) works unchanged.

Classify, Regress, MultiInference and HandleReloadConfigRequest answer UNIMPLEMENTED. grpc and
tensorflow_serving are imported only when a server starts.

A Predict carries its client's deadline to the queue and a way to ask whether the client is
still there (``context.is_active()``): a request whose client gave up is dropped before it
runs. The server takes at most ``grpc_max_threads`` RPCs at once and answers more at once with
RESOURCE_EXHAUSTED; a message over twice ``--max_request_bytes`` is refused by gRPC itself,
one over ``--max_request_bytes`` with INVALID_ARGUMENT naming the flag, and a TensorProto's
declared shape is checked before it is decoded (`keras_bert.serving.limits`).
"""

import logging

from keras_bert.serving.errors import ServerConfigError, ServingError, invalid

log = logging.getLogger("keras_bert.serving")


def _spec(request_spec):
    """(name, version or None, label or None) of a request's ModelSpec."""
    version = request_spec.version.value if request_spec.HasField("version") else None
    label = request_spec.version_label if request_spec.HasField("version_label") else None
    return request_spec.name, version, label


def _serve(context, method, *args):
    """Runs a handler; a ServingError becomes its gRPC status, anything else INTERNAL."""
    import grpc

    try:
        return method(*args)
    except ServingError as error:
        context.abort(getattr(grpc.StatusCode, error.code), error.message)
    except Exception as error:  # a bug, not the request's fault: say so, keep serving
        log.exception("gRPC request failed")
        context.abort(grpc.StatusCode.INTERNAL, f"{type(error).__name__}: {error}")


def _unimplemented(context, what):
    import grpc

    context.abort(grpc.StatusCode.UNIMPLEMENTED,
                  f"{what} is not supported by this server (keras_bert's local server serves "
                  "Predict, GetModelMetadata and GetModelStatus)")


def _inputs(signature, request, limits):
    """The request's TensorProtos as numpy arrays, each dtype and declared shape checked
    before decoding."""
    import tensorflow as tf

    limits.check_bytes(request.ByteSize())
    signature.check_names(request.inputs)
    arrays = {}
    for key, proto in request.inputs.items():
        try:
            dtype = tf.as_dtype(proto.dtype)
        except TypeError:
            raise invalid(f"input {key!r}: unknown dtype enum {proto.dtype}") from None
        signature.check_dtype(key, dtype)
        limits.check_tensor_proto(key, proto, None if dtype == tf.string else dtype.size)
        try:
            arrays[key] = to_array(proto, dtype)
        except Exception as error:  # content that does not fit its shape, and the like
            raise invalid(f"input {key!r} is not a valid TensorProto: {error}") from None
    return arrays


def to_array(proto, dtype):
    """`tf.make_ndarray`, with fast paths for what clients send most (strings in string_val,
    numbers in tensor_content): it is a good part of a small request's time."""
    import numpy as np
    import tensorflow as tf

    shape = [d.size for d in proto.tensor_shape.dim]
    count = int(np.prod(shape, dtype=np.int64))
    if dtype == tf.string and len(proto.string_val) == count:
        array = np.empty(count, dtype=object)
        array[:] = list(proto.string_val)
        return array.reshape(shape)
    if dtype != tf.string and proto.tensor_content and dtype.is_numpy_compatible:
        numpy_dtype = np.dtype(dtype.as_numpy_dtype)
        if len(proto.tensor_content) == count * numpy_dtype.itemsize:
            return np.frombuffer(proto.tensor_content, numpy_dtype).reshape(shape).copy()
    return tf.make_ndarray(proto)


def to_proto(array):
    """`tf.make_tensor_proto` of an output, the way TensorFlow writes tensors (numbers in
    tensor_content), without its per-call overhead."""
    import numpy as np
    import tensorflow as tf
    from tensorflow.core.framework import tensor_pb2

    array = np.asarray(array)
    if array.dtype.kind in "OSU":
        proto = tensor_pb2.TensorProto(dtype=tf.string.as_datatype_enum)
        proto.string_val.extend(v if isinstance(v, bytes) else str(v).encode("utf-8")
                                for v in array.ravel().tolist())
    else:
        proto = tensor_pb2.TensorProto(dtype=tf.as_dtype(array.dtype).as_datatype_enum)
        proto.tensor_content = np.ascontiguousarray(array).tobytes()
    for size in array.shape:
        proto.tensor_shape.dim.add(size=size)
    return proto


class PredictionService:
    """``tensorflow.serving.PredictionService`` over a `ModelManager`.

    Example (`start_grpc_server` serves it; called directly here, with a stand-in for the
    call context gRPC passes):

    >>> import tempfile
    >>> import tensorflow as tf
    >>> class Doubler(tf.Module):
    ...     @tf.function(input_signature=[tf.TensorSpec([None], tf.float32, name="x")])
    ...     def double(self, x):
    ...         return {"y": 2 * x}
    >>> doubler = Doubler()
    >>> from keras_bert.serving import ModelConfig, ModelManager
    >>> base = tempfile.mkdtemp()
    >>> tf.saved_model.save(doubler, f"{base}/1", signatures={"serving_default": doubler.double})
    >>> manager = ModelManager([ModelConfig("doubler", base)], poll_wait_seconds=0)
    >>> manager.start()
    >>> from tensorflow_serving.apis import predict_pb2
    >>> request = predict_pb2.PredictRequest()
    >>> request.model_spec.name = "doubler"
    >>> request.inputs["x"].CopyFrom(tf.make_tensor_proto([3.0], dtype=tf.float32))
    >>> class Context:
    ...     def time_remaining(self):  # seconds left before the client's deadline
    ...         return 60.0
    ...     def is_active(self):  # False once the client has gone
    ...         return True
    >>> response = PredictionService(manager).Predict(request, Context())
    >>> tf.make_ndarray(response.outputs["y"]), response.model_spec.version.value
    (array([6.], dtype=float32), 1)
    >>> manager.stop()
    """

    def __init__(self, manager):
        self.manager = manager

    def Predict(self, request, context):  # noqa: N802  (the gRPC method's name)
        return _serve(context, self._predict, request, context.time_remaining(),
                      context.is_active)

    def _predict(self, request, timeout=None, alive=None):
        from tensorflow_serving.apis import predict_pb2

        if timeout is not None and timeout <= 0 or alive is not None and not alive():
            raise ServingError("DEADLINE_EXCEEDED", "the request's deadline passed before "
                               "it was read (the server is busy)")
        name, version, label = _spec(request.model_spec)
        with self.manager.servable(name, version, label) as servable:
            signature = servable.signature(request.model_spec.signature_name)
            inputs = _inputs(signature, request, self.manager.limits)
            outputs = servable.predict(signature, inputs, tuple(request.output_filter),
                                       timeout, alive)
        response = predict_pb2.PredictResponse()
        response.model_spec.name = name
        response.model_spec.version.value = servable.version
        response.model_spec.signature_name = signature.name
        for key, value in outputs.items():
            response.outputs[key].CopyFrom(to_proto(value))
        return response

    def GetModelMetadata(self, request, context):  # noqa: N802
        fields = list(request.metadata_field)
        return _serve(context, metadata_response, self.manager, *_spec(request.model_spec),
                      fields)

    def Classify(self, request, context):  # noqa: N802
        _unimplemented(context, "Classify")

    def Regress(self, request, context):  # noqa: N802
        _unimplemented(context, "Regress")

    def MultiInference(self, request, context):  # noqa: N802
        _unimplemented(context, "MultiInference")


# tensorflow.error.Code values of the status in GetModelStatus (error_codes.proto).
_OK, _UNKNOWN = 0, 2


def metadata_response(manager, name, version=None, label=None, fields=("signature_def",)):
    """GetModelMetadataResponse: the served version's SignatureDefs, as TF Serving gives them
    (also the REST API's ``/metadata``)."""
    from tensorflow_serving.apis import get_model_metadata_pb2

    if list(fields) != ["signature_def"]:
        raise invalid(f"Metadata field(s) {list(fields)} not supported: ask for "
                      "['signature_def'] (the only one TF Serving knows)")
    with manager.servable(name, version, label) as servable:
        signature_defs = servable.signature_defs
    response = get_model_metadata_pb2.GetModelMetadataResponse()
    response.model_spec.name = name
    response.model_spec.version.value = servable.version
    signature_map = get_model_metadata_pb2.SignatureDefMap()
    for key, signature_def in signature_defs.items():
        signature_map.signature_def[key].CopyFrom(signature_def)
    response.metadata["signature_def"].Pack(signature_map)
    return response


def status_response(manager, name, version=None, label=None):
    """GetModelStatusResponse: each known version's state (also the REST API's status)."""
    from tensorflow_serving.apis import get_model_status_pb2

    if label:
        version = manager.resolve(name, label=label).version
    response = get_model_status_pb2.GetModelStatusResponse()
    for status in manager.status(name, version):
        entry = response.model_version_status.add(version=status.version)
        entry.state = get_model_status_pb2.ModelVersionStatus.State.Value(status.state)
        entry.status.error_code = _UNKNOWN if status.error else _OK
        entry.status.error_message = status.error
    return response


class ModelService:
    """``tensorflow.serving.ModelService``: GetModelStatus over a `ModelManager`.

    Example (`start_grpc_server` serves it; called directly here):

    >>> import tempfile
    >>> import tensorflow as tf
    >>> class Doubler(tf.Module):
    ...     @tf.function(input_signature=[tf.TensorSpec([None], tf.float32, name="x")])
    ...     def double(self, x):
    ...         return {"y": 2 * x}
    >>> doubler = Doubler()
    >>> from keras_bert.serving import ModelConfig, ModelManager
    >>> base = tempfile.mkdtemp()
    >>> tf.saved_model.save(doubler, f"{base}/1", signatures={"serving_default": doubler.double})
    >>> manager = ModelManager([ModelConfig("doubler", base)], poll_wait_seconds=0)
    >>> manager.start()
    >>> from tensorflow_serving.apis import get_model_status_pb2
    >>> request = get_model_status_pb2.GetModelStatusRequest()
    >>> request.model_spec.name = "doubler"
    >>> response = ModelService(manager).GetModelStatus(request, context=None)
    >>> states = get_model_status_pb2.ModelVersionStatus.State
    >>> [(s.version, states.Name(s.state)) for s in response.model_version_status]
    [(1, 'AVAILABLE')]
    >>> manager.stop()
    """

    def __init__(self, manager):
        self.manager = manager

    def GetModelStatus(self, request, context):  # noqa: N802
        return _serve(context, status_response, self.manager, *_spec(request.model_spec))

    def HandleReloadConfigRequest(self, request, context):  # noqa: N802
        _unimplemented(context, "HandleReloadConfigRequest")


def address(host, port):
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def parse_channel_arguments(text):
    """TF Serving's ``--grpc_channel_arguments`` (``"grpc.max_connection_age_ms=2000,..."``)
    as gRPC server options: (name, int or str) pairs."""
    found = []
    for item in filter(None, (part.strip() for part in (text or "").split(","))):
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise ServerConfigError(f"--grpc_channel_arguments: {item!r} is not name=value")
        value = value.strip()
        found.append((name.strip(), int(value) if value.lstrip("-").isdigit() else value))
    return found


def start_grpc_server(manager, host="127.0.0.1", port=8500, max_threads=32,
                      channel_arguments=()):
    """Starts a gRPC server with both services; returns (server, bound port). Port 0 picks a
    free one. A port in use is a `ServerConfigError` (SO_REUSEPORT is off, so a second
    server cannot silently share a port). At most `max_threads` RPCs are handled at once;
    more are answered RESOURCE_EXHAUSTED at once. `channel_arguments`: more gRPC server
    options, (name, value) pairs (they override these)."""
    from concurrent import futures

    import grpc
    from tensorflow_serving.apis import model_service_pb2_grpc, prediction_service_pb2_grpc

    limit = manager.limits.max_request_bytes
    # Messages up to twice the limit are read and refused with a message naming the flag;
    # larger ones gRPC itself refuses (RESOURCE_EXHAUSTED) before they are read whole.
    receive = min(2**31 - 1, 2 * limit) if limit else 2**31 - 1
    options = dict([("grpc.so_reuseport", 0), ("grpc.max_receive_message_length", receive),
                    ("grpc.max_send_message_length", 2**31 - 1)])
    options.update(channel_arguments)
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=max_threads, thread_name_prefix="grpc"),
        options=list(options.items()), maximum_concurrent_rpcs=max_threads)
    prediction_service_pb2_grpc.add_PredictionServiceServicer_to_server(
        PredictionService(manager), server)
    model_service_pb2_grpc.add_ModelServiceServicer_to_server(ModelService(manager), server)
    where = address(host, port)
    try:
        bound = server.add_insecure_port(where)
    except RuntimeError as error:
        bound, detail = 0, str(error)
    else:
        detail = ""
    if not bound:
        server.stop(None)
        raise ServerConfigError(f"--port={port}: cannot listen for gRPC on {where}: the port "
                                f"is in use or the address is not local{detail and ': '}"
                                f"{detail}")
    server.start()
    return server, bound
