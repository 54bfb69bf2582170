"""keras_bert/serving/rest_json.py: TF Serving's REST JSON, both ways: a request body parsed,
its row or columnar inputs as arrays of the signature's dtypes (b64 strings), the answer in
the request's form; every problem an INVALID_ARGUMENT naming what was wrong."""

import base64

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.serving import rest_json
from keras_bert.serving.errors import ServingError
from keras_bert.serving.servable import read_signature_defs
from keras_bert.serving.signatures import Signature

from toy_models import write_doubler  # tests/serving/toy_models.py


@pytest.fixture(scope="module")
def signatures(tmp_path_factory):
    path = write_doubler(tmp_path_factory.mktemp("doubler"))
    loaded, defs = tf.saved_model.load(path), read_signature_defs(path)
    return {key: Signature(key, function, defs[key]) for key, function in
            loaded.signatures.items()}


def _invalid(call, message):
    with pytest.raises(ServingError, match=message) as info:
        call()
    assert info.value.code == "INVALID_ARGUMENT"


@pytest.mark.parametrize("body, message", [
    (b"\xff{}", r"not valid UTF-8 \(byte 0"),
    (b"{", "not valid JSON: Expecting property name"),
    (b"[1]", "must be a JSON object with 'instances' or 'inputs', got a JSON list"),
    (b'{"instances": [], "extra": 1}', r"unknown key\(s\) \['extra'\]"),
    (b'{"instances": [], "inputs": []}', "either 'instances' .* or 'inputs' .*, not both"),
    (b'{"signature_name": "x"}', "and has neither"),
    (b'{"instances": [], "signature_name": 1}', "'signature_name' must be a string"),
])
def test_bad_bodies_are_named(body, message):
    _invalid(lambda: rest_json.parse_request(body), message)


def test_row_and_columnar_inputs(signatures):
    single, pair, text = signatures["serving_default"], signatures["pair"], signatures["text"]
    inputs, form = rest_json.request_inputs({"instances": [1.5, 2]}, single)
    assert form == "row" and inputs["x"].dtype == np.float32 and inputs["x"].tolist() == [1.5, 2]
    inputs, form = rest_json.request_inputs(
        {"instances": [{"a": 1.0, "b": 2}, {"a": 3.0, "b": 4}]}, pair)
    assert form == "row" and inputs["b"].dtype == np.int32 and inputs["b"].tolist() == [2, 4]
    inputs, form = rest_json.request_inputs({"inputs": {"a": [1.0], "b": [2]}}, pair)
    assert form == "columnar" and inputs["a"].tolist() == [1.0]
    b64 = base64.b64encode(b"\xff\x00").decode()
    inputs, _ = rest_json.request_inputs({"inputs": ["caf\u00e9", {"b64": b64}]}, text)
    assert inputs["s"].tolist() == ["caf\u00e9".encode(), b"\xff\x00"]
    inputs, _ = rest_json.request_inputs({"instances": []}, single)  # an empty batch
    assert inputs["x"].shape == (0,)


def test_bad_inputs_are_named(signatures):
    pair = signatures["pair"]
    _invalid(lambda: rest_json.request_inputs({"instances": [1.0]}, pair),
             r"signature 'pair' has 2 inputs \['a', 'b'\]: give instances as objects")
    _invalid(lambda: rest_json.request_inputs(
        {"instances": [{"a": 1.0, "b": 2}, {"a": 1.0}]}, pair),
        r"instance 1 has inputs \['a'\], instance 0 has \['a', 'b'\]")
    _invalid(lambda: rest_json.request_inputs({"instances": {"a": 1}}, pair),
             "'instances' must be a list")


def test_answers_in_the_request_s_form():
    outputs = {"y": np.array([0.5011597275733948, 2.0], np.float32),
               "name_bytes": np.array([b"\xff", b"ok"], object),
               "label": np.array([b"pos", b"neg"], object)}
    row = rest_json.response_body(outputs, "row")
    assert row == {"predictions": [
        {"y": 0.5011597, "name_bytes": {"b64": "/w=="}, "label": "pos"},
        {"y": 2.0, "name_bytes": {"b64": "b2s="}, "label": "neg"}]}
    assert rest_json.response_body({"y": outputs["y"]}, "columnar") == {
        "outputs": [0.5011597, 2.0]}
    _invalid(lambda: rest_json.response_body({"a": np.zeros(2), "b": np.zeros(3)}, "row"),
             "their batch sizes differ")
