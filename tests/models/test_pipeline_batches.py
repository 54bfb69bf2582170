"""`keras_bert.models.pipeline_batches`: labels that are not numbers are named as the user
wrote them; an empty batch of text in every form, read by the preprocessor, is empty; a batch
with rows is not."""

import numpy as np
import pandas as pd
import pytest
import tensorflow as tf

from keras_bert.checks import TaskInputError
from keras_bert.models.pipeline_batches import is_empty, labels_array, zero_rows
from keras_bert.text.raw_inputs import read_raw_inputs


@pytest.mark.parametrize("labels, shown", [
    (["pos", "neg"], "'pos'"),
    (np.array(["pos", "neg"]), "'pos'"),
    ([b"pos", b"neg"], "b'pos'"),
])
def test_string_labels_are_named_as_written(labels, shown):
    with pytest.raises(TaskInputError, match=rf"^y holds the string {shown}, which is not a "
                                             rf"number\.$"):
        labels_array(labels)


def test_a_non_number_among_numbers_is_named():
    with pytest.raises(TaskInputError, match=r"^sample_weight holds \{'label': 1\}, which is "
                                             r"not a number\.$"):
        labels_array([1.0, {"label": 1}], what="sample_weight")


def test_numbers_become_32_bit_arrays():
    assert labels_array([1, 0]).dtype == np.int32
    assert labels_array([0.5, 1.0]).dtype == np.float32
    assert labels_array(None) is None


@pytest.mark.parametrize("empty, segments", [
    ([], 1), ((), 1), (np.array([]), 1), (np.array([], dtype=str), 1),
    (pd.Series([], dtype=object), 1), (tf.constant([], tf.string), 1), (([], []), 2),
    ((np.array([]), pd.Series([], dtype=object)), 2),
])
def test_an_empty_batch_in_every_text_form_is_text_of_no_rows(empty, segments):
    got = read_raw_inputs(empty, batched=True)
    assert [(t.dtype, tuple(t.shape)) for t in got] == [(tf.string, (0,))] * segments
    assert is_empty(empty) and is_empty(got)


@pytest.mark.parametrize("x", [[[]], [""], (["a"], []), {"input_word_ids": np.zeros([1, 4])},
                               tf.constant([[1]]), np.array(["a"])])
def test_a_batch_with_rows_is_not_empty(x):
    assert not is_empty(x)


def test_an_empty_tensor_of_numbers_is_not_text():
    assert is_empty(tf.zeros([0], tf.int32))
    with pytest.raises(TaskInputError, match="texts must be strings"):
        read_raw_inputs(tf.zeros([0], tf.int32), batched=True)


def test_zero_rows_have_the_element_type():
    spec = ((tf.TensorSpec([None], tf.string), tf.TensorSpec([None, 3], tf.string)),
            tf.RaggedTensorSpec([None, None], tf.string, ragged_rank=1),
            {"ids": tf.TensorSpec([None, None], tf.int32)})
    pairs, words, packed = zero_rows(spec)
    assert [tuple(t.shape) for t in pairs] == [(0,), (0, 3)]
    assert isinstance(words, tf.RaggedTensor) and words.shape[0] == 0
    assert packed["ids"].dtype == tf.int32 and tuple(packed["ids"].shape) == (0, 1)
