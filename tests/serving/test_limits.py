"""keras_bert/serving/limits.py: each limit refuses what passes it with a message naming the
limit and its flag, counts a TensorProto by its DECLARED shape (TensorFlow repeats the last
value to fill it), and lets through what is within it. The servers' answers to the same
requests are in test_grpc_service.py and test_rest.py."""

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.serving import RequestLimits, ServingError


def _refused(call, *args):
    with pytest.raises(ServingError) as error:
        call(*args)
    assert error.value.code == "INVALID_ARGUMENT"
    return error.value.message


def _strings(values, shape):
    proto = tf.make_tensor_proto(np.array([v.encode() for v in values], dtype=object))
    del proto.tensor_shape.dim[:]
    for size in shape:
        proto.tensor_shape.dim.add(size=size)
    return proto


def test_a_declared_shape_is_counted_as_tensorflow_expands_it():
    limits = RequestLimits(max_request_batch=100, max_request_bytes=1000)
    one_value = _strings(["abc"], [5000])  # 41 bytes on the wire, 5,000 rows once decoded
    assert one_value.ByteSize() < 50
    assert tf.make_ndarray(one_value).shape == (5000,)  # what TensorFlow would build
    assert _refused(limits.check_tensor_proto, "text", one_value, None) == (
        "the request has a batch of 5000 rows; this server takes at most 100 per request "
        "(--max_request_batch)")
    # Within the rows, over the bytes: 90 rows of the one 20-byte value repeated.
    message = _refused(limits.check_tensor_proto, "text", _strings(["x" * 20], [90]), None)
    assert message.startswith("input 'text' (shape [90]) has 1800 bytes; this server takes "
                              "at most 1000 bytes per request (--max_request_bytes); counted "
                              "as TensorFlow expands it")
    limits.check_tensor_proto("text", _strings(["x" * 20], [40]), None)  # 800 bytes: fine
    ids = tf.make_tensor_proto(np.zeros([1, 1], np.int32))
    ids.tensor_shape.dim[1].size = 10**9  # one value, declared [1, 10**9]: 4 GB of int32
    assert "has 4000000000 bytes" in _refused(limits.check_tensor_proto, "ids", ids, 4)


@pytest.mark.parametrize("shape,words", [([-5], "a negative dimension -5"),
                                         ([2, -1], "a negative dimension -1")])
def test_a_negative_dimension_is_refused(shape, words):
    message = _refused(RequestLimits().check_tensor_proto, "text", _strings(["a"], shape), None)
    assert message == (f"input 'text' declares the shape {shape} with {words}: a request's "
                       "tensors need a known shape of sizes >= 0")


def test_a_huge_dimension_names_the_rows_limit():
    message = _refused(RequestLimits().check_tensor_proto, "text", _strings(["a"], [10**12]),
                       None)
    assert message == ("the request has a batch of 1000000000000 rows; this server takes at "
                       "most 1024 per request (--max_request_batch)")


def test_text_length_and_body_bytes():
    limits = RequestLimits(max_text_bytes=8)
    texts = np.array([[b"short", b"x" * 9]], dtype=object)
    assert _refused(limits.check_texts, "choices", texts) == (
        "input 'choices' at [0, 1] is a string of 9 bytes; this server takes at most 8 bytes "
        "per string (--max_text_bytes)")
    limits.check_texts("choices", np.array([b"x" * 8], dtype=object))
    limits.check_texts("ids", np.zeros([2, 3], np.int32))  # numbers: not texts
    assert RequestLimits(max_request_bytes=10).body_message(11) == (
        "the request body has 11 bytes; this server takes at most 10 bytes per request "
        "(--max_request_bytes)")
    assert RequestLimits(max_request_bytes=10).body_message(10) is None


def test_zero_turns_a_limit_off_and_bad_values_are_named():
    off = RequestLimits(max_request_bytes=0, max_request_batch=0, max_text_bytes=0)
    off.check_rows(10**6)
    off.check_texts("text", np.array([b"x" * 10**6], dtype=object))
    off.check_tensor_proto("text", _strings(["a"], [10**6]), None)
    with pytest.raises(ValueError, match=r"max_text_bytes must be an integer >= 0 \(0: no "
                                         r"limit\), got -1"):
        RequestLimits(max_text_bytes=-1)
