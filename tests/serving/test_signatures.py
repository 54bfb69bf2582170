"""keras_bert/serving/signatures.py: a loaded signature's inputs and outputs, every mismatch
of a request refused as INVALID_ARGUMENT naming the input and the signature, runs counted,
TensorFlow's errors turned into status codes with their first useful line."""

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.serving.errors import ServingError
from keras_bert.serving.servable import read_signature_defs
from keras_bert.serving.signatures import Signature, dtype_name, first_line, shape_text

from toy_models import write_doubler  # tests/serving/toy_models.py


@pytest.fixture(scope="module")
def signatures(tmp_path_factory):
    path = write_doubler(tmp_path_factory.mktemp("doubler"))
    loaded, defs = tf.saved_model.load(path), read_signature_defs(path)
    return {key: Signature(key, function, defs[key]) for key, function in loaded.signatures.items()}


def _refused(signature, inputs, message):
    with pytest.raises(ServingError, match=message) as info:
        signature.check(inputs)
    assert info.value.code == "INVALID_ARGUMENT"


def test_inputs_outputs_and_a_run(signatures):
    pair = signatures["pair"]
    assert sorted(pair.inputs) == ["a", "b"]
    assert pair.outputs == {"sum": (tf.float32, tf.TensorShape([None]))}
    inputs = pair.check({"a": np.array([1.0, 2.0], "float32"), "b": np.array([3, 4], "int32")})
    assert pair.run(inputs)["sum"].tolist() == [4.0, 6.0]
    assert (pair.calls, pair.rows_run) == (1, 2)
    text = signatures["text"]
    out = text.run(text.check({"s": np.array([b"ab", "c\u00e9".encode()], object)}))
    assert out["length"].tolist() == [2, 3]  # bytes


def test_mismatched_requests_are_named(signatures):
    pair, text = signatures["pair"], signatures["text"]
    a, b = np.array([1.0], "float32"), np.array([1], "int32")
    _refused(pair, {"a": a}, r"do not match signature 'pair': missing input\(s\) \['b'\]")
    _refused(pair, {"a": a, "b": b, "c": b}, r"unexpected input\(s\) \['c'\]; it takes")
    _refused(pair, {"a": a, "b": a}, "input 'b' of signature 'pair' expects int32 values, "
                                     "got float")
    _refused(pair, {"a": a[None], "b": b}, r"input 'a' of signature 'pair' has shape \[1, 1\]")
    _refused(pair, {"a": np.array([1.0, 2.0], "float32"), "b": b},
             r"must share their first \(batch\) dimension, got \{'a': 2, 'b': 1\}")
    _refused(text, {"s": np.array(["text"], object)}, "string inputs must be bytes, got str")


def test_a_model_error_is_invalid_argument_with_its_first_line(signatures):
    checked = signatures["checked"]
    assert checked.run({"x": np.array([1.0], "float32")})["x"].tolist() == [1.0]
    with pytest.raises(ServingError, match="signature 'checked' refused the inputs: .*negative"
                       ) as info:
        checked.run({"x": np.array([-1.0], "float32")})
    assert info.value.code == "INVALID_ARGUMENT"
    assert first_line("Graph execution error:\n\nDetected at node x\nbad value\n[[node]]") == \
        "bad value"


def test_names_in_messages_are_tf_serving_s():
    assert (dtype_name(tf.string), dtype_name(tf.float32), dtype_name(tf.int32)) == (
        "string", "float", "int32")
    assert shape_text([None, 3]) == "[?, 3]"
