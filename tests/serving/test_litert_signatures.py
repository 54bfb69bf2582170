"""The server with a LiteRT model (keras_bert/serving/litert_signatures.py), as TF Serving's
--prefer_tflite_model: on 127.0.0.1, REST (row and columnar) and gRPC Predict answer the
interpreter's outputs, GetModelMetadata reports SignatureDefs derived from the .tflite, bad
requests get the errors the SavedModel gets; which file serves is never chosen silently."""

import logging
import re
import shutil

import numpy as np
import pytest

from keras_bert import BertPreprocessor
from keras_bert.export import litert_model
from keras_bert.serving import (BatchingOptions, ModelConfig, ModelManager, ModelServer,
                                ServerConfigError)
from tests.export.serving_models import SENTENCES, VOCAB
from tests.serving.clients import TIMEOUT, GrpcClient, http, outputs, run_concurrently, texts


@pytest.fixture(scope="module")
def bases(litert_version, tmp_path_factory):
    """Base paths: "both" (saved_model.pb and model.tflite), "lite" (model.tflite only),
    "saved" (saved_model.pb only)."""
    version, tflite = litert_version
    root = tmp_path_factory.mktemp("litert_bases")
    shutil.copytree(version, root / "both" / "1")
    (root / "lite" / "1").mkdir(parents=True)
    shutil.copy(tflite, root / "lite" / "1" / "model.tflite")
    shutil.copytree(version, root / "saved" / "1", ignore=shutil.ignore_patterns("*.tflite"))
    return {name: str(root / name) for name in ("both", "lite", "saved")}


@pytest.fixture(scope="module")
def servers(bases):
    """(the server preferring LiteRT, the one serving the SavedModel of the same version)."""
    # (a batch waits up to 50 ms for more requests: eight released together arrive within it
    # even on a loaded machine, where 1 ms saw each of them computed alone)
    batching = BatchingOptions(max_batch_size=16, batch_timeout_micros=50_000)
    lite = ModelServer([ModelConfig("sentiment", bases["both"]),
                        ModelConfig("lite_only", bases["lite"])],
                       grpc_port=0, rest_api_port=0, batching=batching, poll_wait_seconds=-1,
                       prefer_tflite_model=True)
    saved = ModelServer([ModelConfig("sentiment", bases["both"])], grpc_port=0,
                        rest_api_port=0, batching=batching, poll_wait_seconds=-1)
    with lite, saved:
        yield lite, saved


@pytest.fixture(scope="module")
def interpreter(litert_version):
    return litert_model.load(litert_version[1])


def test_which_file_serves_is_the_flags_choice_and_logged(servers, bases, caplog):
    lite, saved = servers
    assert lite.manager.resolve("sentiment").served_file == "model.tflite"
    assert lite.manager.resolve("lite_only").served_file == "model.tflite"
    assert saved.manager.resolve("sentiment").served_file == "saved_model.pb"
    with caplog.at_level(logging.INFO, logger="keras_bert.serving"):
        fallback = ModelManager([ModelConfig("m", bases["saved"])], poll_wait_seconds=-1,
                                prefer_tflite_model=True)
        fallback.start()
        ignored = ModelManager([ModelConfig("m", bases["both"])], poll_wait_seconds=-1)
        ignored.start()
    assert fallback.resolve("m").served_file == "saved_model.pb"
    assert ignored.resolve("m").served_file == "saved_model.pb"
    fallback.stop()
    ignored.stop()
    logged = caplog.text
    assert re.search(r"saved/1 has no model\.tflite: serving its SavedModel "
                     r"\(--prefer_tflite_model falls back", logged)
    assert re.search(r"both/1 also holds model\.tflite, not served: --prefer_tflite_model "
                     r"is off", logged)
    assert re.search(r"serving version 1 from .*saved/1/saved_model\.pb", logged)
    with pytest.raises(ServerConfigError, match=r"lite/1 holds only model\.tflite \(a LiteRT "
                                                r"model\) and no saved_model\.pb: serve it "
                                                r"with --prefer_tflite_model"):
        ModelManager([ModelConfig("m", bases["lite"])], poll_wait_seconds=-1).start()


def test_rest_row_and_columnar_answer_the_interpreters_outputs(servers, interpreter):
    lite = servers[0]
    want = interpreter(text=SENTENCES)
    for name in ("sentiment", "lite_only"):
        status, answer = http(f"{lite.rest_url}/v1/models/{name}:predict",
                              {"instances": SENTENCES})
        assert status == 200, answer
        rows = answer["predictions"]
        np.testing.assert_allclose([r["logits"] for r in rows], want["logits"], atol=1e-6)
        assert [r["label_ids"] for r in rows] == want["label_ids"].tolist()
        status, answer = http(f"{lite.rest_url}/v1/models/{name}:predict",
                              {"inputs": {"text": SENTENCES}})
        assert status == 200, answer
        np.testing.assert_allclose(answer["outputs"]["probabilities"], want["probabilities"],
                                   atol=1e-6)


def test_grpc_predict_on_text_and_on_ids(servers, interpreter):
    client = GrpcClient(servers[0].grpc_address)
    try:
        response = client.predict("sentiment", {"text": texts(SENTENCES)})
        assert response.model_spec.version.value == 1
        got, want = outputs(response), interpreter(text=SENTENCES)
        assert sorted(got) == sorted(want)
        for key in want:
            np.testing.assert_array_equal(got[key], want[key])
        packed = {k: v.numpy() for k, v in BertPreprocessor(VOCAB, 16)(SENTENCES).items()}
        response = client.predict("lite_only", packed, signature_name="serving_ids",
                                  output_filter=["logits"])
        assert sorted(outputs(response)) == ["logits"]
        np.testing.assert_array_equal(outputs(response)["logits"],
                                      interpreter("serving_ids", **packed)["logits"])
    finally:
        client.close()


def test_metadata_is_derived_from_the_tflite(servers):
    from tensorflow_serving.apis import get_model_metadata_pb2

    client = GrpcClient(servers[0].grpc_address)
    try:
        request = get_model_metadata_pb2.GetModelMetadataRequest(
            metadata_field=["signature_def"])
        request.model_spec.name = "lite_only"
        response = client.prediction.GetModelMetadata(request, timeout=TIMEOUT)
    finally:
        client.close()
    signatures = get_model_metadata_pb2.SignatureDefMap()
    response.metadata["signature_def"].Unpack(signatures)
    defs = signatures.signature_def
    assert sorted(defs) == ["serving_default", "serving_ids"]
    default = defs["serving_default"]
    assert default.method_name == "tensorflow/serving/predict"
    assert sorted(default.inputs) == ["text"]
    assert sorted(default.outputs) == ["label_ids", "logits", "probabilities"]
    text = default.inputs["text"]
    assert text.dtype == 7 and [d.size for d in text.tensor_shape.dim] == [-1]  # DT_STRING
    logits = default.outputs["logits"]
    assert logits.dtype == 1 and [d.size for d in logits.tensor_shape.dim] == [-1, 2]
    assert sorted(defs["serving_ids"].inputs) == ["input_mask", "input_type_ids",
                                                  "input_word_ids"]
    status, answer = http(f"{servers[0].rest_url}/v1/models/sentiment/metadata")
    assert status == 200, answer
    rest = answer["metadata"]["signature_def"]["signature_def"]["serving_default"]
    assert rest["inputs"]["text"]["dtype"] == "DT_STRING"


BAD_REQUESTS = {
    "missing input": {"inputs": {"texts": ["a"]}},
    "numbers for text": {"instances": [1, 2]},
    "text of rank 2": {"inputs": {"text": [["a", "b"]]}},
    "unknown signature": {"signature_name": "classify", "instances": ["a"]},
    "ids of different batch sizes": {"signature_name": "serving_ids", "inputs": {
        "input_word_ids": [[2, 3]], "input_mask": [[1, 1], [1, 1]],
        "input_type_ids": [[0, 0]]}},
    "oversized batch": {"instances": ["a"] * 17},
}


@pytest.mark.parametrize("case", sorted(BAD_REQUESTS))
def test_bad_requests_get_the_saved_models_errors(servers, case):
    answers = [http(f"{server.rest_url}/v1/models/sentiment:predict", BAD_REQUESTS[case])
               for server in servers]
    assert answers[0] == answers[1]
    assert answers[0][0] == 400, answers[0]


def test_ids_outside_the_vocabulary_are_refused(servers):
    body = {"signature_name": "serving_ids", "inputs": {
        "input_word_ids": [[2, 10_000, 3]], "input_mask": [[1, 1, 1]],
        "input_type_ids": [[0, 0, 0]]}}
    for server in servers:
        status, answer = http(f"{server.rest_url}/v1/models/sentiment:predict", body)
        assert status == 400, answer
        assert "signature 'serving_ids' refused the inputs" in answer["error"], answer


def test_concurrent_requests_are_batched(servers, interpreter):
    lite = servers[0]
    signature = lite.manager.resolve("sentiment").signature("serving_default")
    calls = signature.calls
    answers = run_concurrently(8, lambda i: http(
        f"{lite.rest_url}/v1/models/sentiment:predict", {"instances": SENTENCES[i:i + 1]}))
    want = interpreter(text=SENTENCES)
    for i, (status, answer) in enumerate(answers):
        assert status == 200, answer
        np.testing.assert_allclose(answer["predictions"][0]["logits"], want["logits"][i],
                                   atol=1e-5)
    assert signature.calls - calls < 8  # some requests shared a model call
