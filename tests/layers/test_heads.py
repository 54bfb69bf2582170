"""keras_bert/layers/heads.py: the heads' output dtype under mixed precision, and the checks
of class-id labels (in numpy and in the graph) and of class names."""

import numpy as np
import pytest
import tensorflow as tf

from keras_bert import BertEncoder
from keras_bert.checks import TaskInputError
from keras_bert.layers.heads import (
    check_class_ids,
    check_class_ids_in_graph,
    check_label_names,
    head_dtype,
)


def test_a_head_gives_float32_logits_under_mixed_precision():
    assert head_dtype(BertEncoder.from_preset("tiny_random", load_weights=False,
                                              dtype="mixed_bfloat16")) == "float32"
    encoder = BertEncoder.from_preset("tiny_random", load_weights=False)
    assert head_dtype(encoder) is encoder.dtype_policy


@pytest.mark.parametrize("labels, message", [
    ([0, 1.5], r"^label 1 is 1.5: class labels must be whole numbers in \[0, 3\)\.$"),
    ([[0, 1], [3, -1]], r"^label 2 is 3, outside \[0, 3\) \(num_classes=3\); 2 label\(s\) are "
                        r"out of range\.$"),
])
def test_class_ids_must_be_whole_numbers_in_range(labels, message):
    with pytest.raises(TaskInputError, match=message):
        check_class_ids(np.array(labels), num_classes=3)


def test_good_class_ids_pass_in_numpy_and_in_the_graph():
    check_class_ids(np.array([0.0, 2.0, 1.0]), num_classes=3)  # whole floats are ids too
    check_class_ids(np.array([], "int32"), num_classes=3)
    np.testing.assert_array_equal(check_class_ids_in_graph(tf.constant([0, 2]), 3), [0, 2])
    for bad in ([0, 3], [-1, 0]):
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"class labels must be in \[0, 3\) \(num_classes=3\)"):
            check_class_ids_in_graph(tf.constant(bad), 3)


def test_label_names_are_distinct_strings_one_per_class():
    assert check_label_names(None, 2, "Owner") is None
    assert check_label_names(("neg", "pos"), 2, "Owner") == ("neg", "pos")
    for names, message in [
        ("ab", "label_names must be a list of class names in class-id order, got str"),
        ({0: "a", 1: "b"}, r"label_names must be .*, got a dict; for an id -> name mapping"),
        (["a", ""], r"label_names\[1\] is ''; class names must be non-empty strings"),
        (["a", "a"], "label_names repeats 'a'; each class needs a name of its own"),
        (["a"], r"label_names has 1 names \(\['a'\]\) but num_classes is 2"),
    ]:
        with pytest.raises(ValueError, match="^Owner: " + message):
            check_label_names(names, 2, "Owner")
