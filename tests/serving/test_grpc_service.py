"""keras_bert/serving/grpc_service.py through TF Serving's own client: the
tensorflow-serving-api PredictionServiceStub and ModelServiceStub over a real gRPC channel to
127.0.0.1. Answers equal the Keras models'; an empty batch is answered with no rows, as
over REST; every bad request gets its status code and a
message naming the problem, and the server keeps serving; batching merges concurrent requests
into one model call with the same answers; a version dropped in under load takes over with no
failed request."""

import re
import threading
import time

import grpc
import numpy as np
import pytest
import tensorflow as tf

from keras_bert import BertPreprocessor
from keras_bert.serving import BatchingOptions, ModelConfig, ModelServer, RequestLimits
from keras_bert.serving.batching import length_class
from tests.serving.clients import (
    TIMEOUT,
    GrpcClient,
    outputs,
    predict_request,
    run_concurrently,
    texts,
)
from tests.export.serving_models import SENTENCES, VOCAB, install_version


def _close(got, expected, rows=slice(None)):
    np.testing.assert_allclose(got["probabilities"], expected["probabilities"][rows], atol=1e-5)
    np.testing.assert_array_equal(got["label_ids"], expected["label_ids"][rows])


@pytest.fixture(scope="module")
def bases(serving_models, tmp_path_factory):
    root = tmp_path_factory.mktemp("grpc_models")
    install_version(serving_models["sentiment_v1"][0], root / "sentiment", 1)
    install_version(serving_models["topics_v1"][0], root / "topics", 1)
    return [ModelConfig("sentiment", str(root / "sentiment"), version_labels=(("stable", 1),)),
            ModelConfig("topics", str(root / "topics"))]


@pytest.fixture(scope="module")
def server(bases):
    limits = RequestLimits(max_request_batch=16, max_text_bytes=8000,
                           max_request_bytes=64 * 1024)
    with ModelServer(bases, grpc_port=0, limits=limits, poll_wait_seconds=-1) as server:
        yield server


@pytest.fixture(scope="module")
def client(server):
    client = GrpcClient(server.grpc_address)
    yield client
    client.close()


def test_predict_answers_as_the_keras_model(client, serving_models):
    response = client.predict("sentiment", {"text": texts(SENTENCES)})
    assert (response.model_spec.name, response.model_spec.version.value,
            response.model_spec.signature_name) == ("sentiment", 1, "serving_default")
    _close(outputs(response), serving_models["sentiment_v1"][1])
    response = client.predict("topics", {"text": texts(SENTENCES[:3])}, version=1)
    _close(outputs(response), serving_models["topics_v1"][1], slice(0, 3))
    labelled = client.predict("sentiment", {"text": texts(SENTENCES)}, label="stable")
    assert labelled.model_spec.version.value == 1


def test_the_serving_ids_signature_agrees_with_the_text_one(client, serving_models):
    packed = BertPreprocessor(VOCAB, seq_length=16)(SENTENCES)
    response = client.predict("sentiment", {k: v.numpy() for k, v in packed.items()},
                              signature_name="serving_ids")
    assert response.model_spec.signature_name == "serving_ids"
    _close(outputs(response), serving_models["sentiment_v1"][1])


def test_an_empty_batch_gets_no_rows(client):
    """As REST answers it in both formats (tests/serving/test_rest.py): OK, every output with
    no rows and the shape past the batch of a one-row answer, for text and packed ids."""
    one = outputs(client.predict("sentiment", {"text": texts(["a great movie"])}))
    for signature_name, inputs in [
            ("", {"text": texts([])}),
            ("serving_ids", {k: np.zeros([0, 16], np.int32)
                             for k in ("input_word_ids", "input_mask", "input_type_ids")})]:
        got = outputs(client.predict("sentiment", inputs, signature_name=signature_name))
        assert {k: (v.shape, v.dtype) for k, v in got.items()} == {
            k: ((0,) + v.shape[1:], v.dtype) for k, v in one.items()}, signature_name


def test_output_filter_and_invalid_utf8_bytes(client):
    response = client.predict("sentiment", {"text": texts([b"a great \xffmovie", b"\xc3"])},
                              output_filter=["label_ids"])
    assert list(response.outputs) == ["label_ids"]
    # The tokenizer drops bytes that are not UTF-8, as the reference does.
    clean = outputs(client.predict("sentiment", {"text": texts(["a great movie", ""])}))
    np.testing.assert_array_equal(outputs(response)["label_ids"], clean["label_ids"])


def test_metadata_and_status(client):
    from tensorflow_serving.apis import get_model_metadata_pb2, get_model_status_pb2

    request = get_model_metadata_pb2.GetModelMetadataRequest(metadata_field=["signature_def"])
    request.model_spec.name = "sentiment"
    response = client.prediction.GetModelMetadata(request, timeout=TIMEOUT)
    assert response.model_spec.version.value == 1
    signatures = get_model_metadata_pb2.SignatureDefMap()
    response.metadata["signature_def"].Unpack(signatures)
    serving = signatures.signature_def["serving_default"]
    assert serving.method_name == "tensorflow/serving/predict"
    assert serving.inputs["text"].dtype == tf.string.as_datatype_enum
    assert sorted(serving.outputs) == ["label_ids", "logits", "probabilities"]
    assert sorted(signatures.signature_def["serving_ids"].inputs) == [
        "input_mask", "input_type_ids", "input_word_ids"]

    request = get_model_status_pb2.GetModelStatusRequest()
    request.model_spec.name = "topics"
    response = client.models.GetModelStatus(request, timeout=TIMEOUT)
    (status,) = response.model_version_status
    assert (status.version, status.state, status.status.error_code) == (
        1, get_model_status_pb2.ModelVersionStatus.AVAILABLE, 0)


def _ids(*shape, value=2):
    return np.full(shape, value, dtype=np.int32)


def _declared_ids(shape):
    """An int32 TensorProto with one value declaring `shape`."""
    proto = tf.make_tensor_proto(np.int32(2))
    for size in shape:
        proto.tensor_shape.dim.add(size=size)
    proto.ClearField("tensor_content")
    proto.int_val[:] = [2]
    return proto


def _declared(values, shape):
    """A string TensorProto carrying `values` but declaring `shape` (TensorFlow repeats the
    last value to fill it, as TF Serving decodes it)."""
    proto = tf.make_tensor_proto(texts(values))
    del proto.tensor_shape.dim[:]
    for size in shape:
        proto.tensor_shape.dim.add(size=size)
    return proto


BAD_REQUESTS = {  # name: (request arguments, status code, message pattern)
    "unknown model": (("nope", {"text": texts(["a"])}), "NOT_FOUND",
                      r"Servable not found for request: Latest\(nope\)"),
    "unknown version": (("sentiment", {"text": texts(["a"])}, "", 3), "NOT_FOUND",
                        r"Specific\(sentiment, 3\): model 'sentiment' serves version\(s\) \[1\]"),
    "unknown label": (("sentiment", {"text": texts(["a"])}, "", None, "beta"),
                      "INVALID_ARGUMENT", r"Unrecognized servable version label: 'beta'"),
    "unknown signature": (("sentiment", {"text": texts(["a"])}, "classify"),
                          "FAILED_PRECONDITION", r"Serving signature key \"classify\" not found"),
    "wrong dtype": (("sentiment", {"text": np.array([1, 2], np.int32)}), "INVALID_ARGUMENT",
                    r"input 'text' of signature 'serving_default' expects string values, got "
                    r"int32"),
    "missing input": (("sentiment", {"input_word_ids": _ids(1, 4), "input_type_ids": _ids(1, 4)},
                       "serving_ids"), "INVALID_ARGUMENT",
                      r"missing input\(s\) \['input_mask'\]"),
    "extra input": (("sentiment", {"text": texts(["a"]), "label": texts(["b"])}),
                    "INVALID_ARGUMENT", r"unexpected input\(s\) \['label'\]; it takes \['text'\]"),
    "wrong rank": (("sentiment", {"text": texts(["a", "b"]).reshape(1, 2)}), "INVALID_ARGUMENT",
                   r"input 'text' .* has shape \[1, 2\]; the signature takes \[\?\]"),
    "batch sizes differ": (("sentiment", {"input_word_ids": _ids(2, 4), "input_mask": _ids(1, 4),
                                          "input_type_ids": _ids(2, 4)}, "serving_ids"),
                           "INVALID_ARGUMENT", r"must share their first \(batch\) dimension"),
    "oversized batch": (("sentiment", {"text": texts(["a"] * 17)}), "INVALID_ARGUMENT",
                        r"batch of 17 rows; this server takes at most 16 per request "
                        r"\(--max_request_batch\)"),
    "ids outside the vocabulary": (("sentiment", {"input_word_ids": _ids(1, 4, value=10**6),
                                                  "input_mask": _ids(1, 4),
                                                  "input_type_ids": _ids(1, 4, value=0)},
                                    "serving_ids"), "INVALID_ARGUMENT",
                                   r"signature 'serving_ids' refused the inputs: .*1000000"),
    "unknown output": (("sentiment", {"text": texts(["a"])}, "", None, None, ["scores"]),
                       "INVALID_ARGUMENT", r"output tensor alias not found in signature "
                       r"'serving_default': 'scores'"),
    # Hostile requests: each refused before anything is decoded or run, naming the flag.
    "one value declaring 5000 rows": (("sentiment", {"text": _declared(["a"], [5000])}),
                                      "INVALID_ARGUMENT", r"^the request has a batch of 5000 "
                                      r"rows; this server takes at most 16 per request "
                                      r"\(--max_request_batch\)$"),
    "a negative dimension": (("sentiment", {"text": _declared(["a"], [-5])}),
                             "INVALID_ARGUMENT", r"^input 'text' declares the shape \[-5\] "
                             r"with a negative dimension -5"),
    "a dimension of 10**12": (("sentiment", {"text": _declared(["a"], [10**12])}),
                              "INVALID_ARGUMENT", r"batch of 1000000000000 rows; .* at most "
                              r"16 per request \(--max_request_batch\)"),
    "ids declared [1, 10**9]": (("sentiment", {"input_word_ids": _declared_ids([1, 10**9]),
                                               "input_mask": _ids(1, 4),
                                               "input_type_ids": _ids(1, 4)}, "serving_ids"),
                                "INVALID_ARGUMENT", r"input 'input_word_ids' \(shape \[1, "
                                r"1000000000\]\) has 4000000000 bytes; .* "
                                r"\(--max_request_bytes\); counted as TensorFlow expands it"),
    "a text over the length limit": (("sentiment", {"text": texts(["x" * 8001])}),
                                     "INVALID_ARGUMENT", r"^input 'text' at \[0\] is a string "
                                     r"of 8001 bytes; this server takes at most 8000 bytes per "
                                     r"string \(--max_text_bytes\)$"),
    "a request over the byte limit": (("sentiment", {"text": texts(["x" * 5000] * 16)}),
                                      "INVALID_ARGUMENT", r"^the request has 80\d\d\d bytes; "
                                      r"this server takes at most 65536 bytes per request "
                                      r"\(--max_request_bytes\)$"),
    "a message over twice the byte limit": (("sentiment", {"text": texts(["x" * 8000] * 17)}),
                                            "RESOURCE_EXHAUSTED", r"larger than max"),
}


@pytest.mark.parametrize("case", sorted(BAD_REQUESTS))
def test_a_bad_request_gets_its_code_and_the_server_keeps_serving(client, case):
    args, code, pattern = BAD_REQUESTS[case]
    with pytest.raises(grpc.RpcError) as error:
        client.predict(*args)
    assert error.value.code() == getattr(grpc.StatusCode, code), error.value.details()
    assert re.search(pattern, error.value.details()), error.value.details()
    assert client.predict("sentiment", {"text": texts(["still serving"])}).outputs


def test_a_malformed_tensor_proto_and_unsupported_methods(client):
    from tensorflow_serving.apis import classification_pb2, get_model_metadata_pb2

    proto = tf.make_tensor_proto(np.zeros((1, 4), np.int32))
    proto.tensor_content = b"\x00" * 3  # 3 bytes for 4 int32s
    with pytest.raises(grpc.RpcError) as error:
        client.predict("sentiment", {"input_word_ids": proto, "input_mask": _ids(1, 4),
                                     "input_type_ids": _ids(1, 4)}, "serving_ids")
    assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "input 'input_word_ids' is not a valid TensorProto" in error.value.details()

    request = get_model_metadata_pb2.GetModelMetadataRequest(metadata_field=["graph"])
    request.model_spec.name = "sentiment"
    with pytest.raises(grpc.RpcError, match=r"Metadata field\(s\) \['graph'\] not supported"):
        client.prediction.GetModelMetadata(request, timeout=TIMEOUT)
    with pytest.raises(grpc.RpcError) as error:
        client.prediction.Classify(classification_pb2.ClassificationRequest(), timeout=TIMEOUT)
    assert error.value.code() == grpc.StatusCode.UNIMPLEMENTED


def _concurrent_predictions(server, count):
    """`count` clients, each with its own channel, send one sentence each at the same time."""
    clients = [GrpcClient(server.grpc_address) for _ in range(count)]
    try:
        return run_concurrently(count, lambda i: outputs(clients[i].predict(
            "sentiment", {"text": texts([SENTENCES[i % len(SENTENCES)]])})))
    finally:
        for c in clients:
            c.close()


def _calls(server):
    return server.manager.resolve("sentiment").signatures["serving_default"].calls


def test_batching_merges_concurrent_requests_into_one_model_call(bases, server, serving_models):
    expected = serving_models["sentiment_v1"][1]
    batching = BatchingOptions(max_batch_size=8, batch_timeout_micros=TIMEOUT * 10**6)
    with ModelServer(bases, grpc_port=0, batching=batching, poll_wait_seconds=-1) as batched:
        answers = _concurrent_predictions(batched, 8)
        # 8 requests, one batch (full: it did not wait), one model call per length class of
        # its texts (keras_bert's group_by_length; with it off: 1 call, as TF Serving).
        classes = {length_class({"text": texts([s])}) for s in SENTENCES}
        assert len(classes) > 1 and _calls(batched) == len(classes)
        for i, answer in enumerate(answers):
            _close(answer, expected, slice(i, i + 1))
        client = GrpcClient(batched.grpc_address)
        with pytest.raises(grpc.RpcError, match=r"Task size 9 is larger than maximum input "
                                                r"batch size 8") as error:
            client.predict("sentiment", {"text": texts(["a"] * 9)})
        assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        client.close()
    before = _calls(server)  # the same load without batching: one call per request
    unbatched = _concurrent_predictions(server, 8)
    assert _calls(server) - before == 8
    for got, want in zip(unbatched, answers):
        np.testing.assert_allclose(got["probabilities"], want["probabilities"], atol=1e-6)


def test_a_version_dropped_in_under_load_takes_over_with_no_failed_request(
        tmp_path, serving_models):
    base = tmp_path / "sentiment"
    install_version(serving_models["sentiment_v1"][0], base, 1)
    config = [ModelConfig("sentiment", str(base))]
    seen, failures, stop = [], [], threading.Event()

    def load(client):
        while not stop.is_set():
            try:
                response = client.predict("sentiment", {"text": texts(SENTENCES)})
                seen.append((response.model_spec.version.value, outputs(response)))
            except grpc.RpcError as error:
                failures.append(error)

    with ModelServer(config, grpc_port=0, poll_wait_seconds=0.1) as server:
        clients = [GrpcClient(server.grpc_address) for _ in range(3)]
        threads = [threading.Thread(target=load, args=(c,)) for c in clients]
        for thread in threads:
            thread.start()
        try:
            deadline = time.monotonic() + TIMEOUT
            while len(seen) < 5 and time.monotonic() < deadline:
                time.sleep(0.05)
            install_version(serving_models["sentiment_v2"][0], base, 2)
            while sum(v == 2 for v, _ in seen) < 5 and time.monotonic() < deadline:
                time.sleep(0.05)
        finally:
            stop.set()
            for thread in threads:
                thread.join(TIMEOUT)
            for c in clients:
                c.close()
        old = server.manager.status("sentiment", 1)[0]
    assert failures == []
    versions = [v for v, _ in seen]
    assert 1 in versions and versions.count(2) >= 5, versions
    assert versions.index(2) > 0 and 1 not in versions[versions.index(2) + 3 * 2:]
    for version, got in seen:  # each answer is the one of the version it names
        _close(got, serving_models[f"sentiment_v{version}"][1])
    assert old.state in ("UNLOADING", "END")


def test_a_request_whose_deadline_passed_stops_between_slices(bases):
    """A 100,000-text request with a 0.3 s deadline: the client gets DEADLINE_EXCEEDED, and
    the server stops computing it between two of its 1,563 slices of 64 rows, instead of
    computing the rest (seconds of work) for nobody."""
    limits = RequestLimits(max_request_batch=100_000)
    with ModelServer(bases, grpc_port=0, limits=limits, num_request_threads=1,
                     poll_wait_seconds=-1) as server:
        client = GrpcClient(server.grpc_address)
        with pytest.raises(grpc.RpcError) as error:
            client.prediction.Predict(predict_request(
                "sentiment", {"text": texts(SENTENCES * 12_500)}), timeout=0.3)
        assert error.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
        servable = server.manager.resolve("sentiment")
        deadline = time.monotonic() + TIMEOUT
        while not servable._queues["serving_default"].dropped and time.monotonic() < deadline:
            time.sleep(0.05)
        assert servable._queues["serving_default"].dropped == 1
        assert _calls(server) < 1563
        assert client.predict("sentiment", {"text": texts(["still serving"])}).outputs
        client.close()
