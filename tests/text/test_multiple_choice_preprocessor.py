"""BertMultipleChoicePreprocessor: (context, choice) pairs packed per choice, shaped
[batch, num_choices, seq]; errors for bad shapes."""

import numpy as np
import pytest
import tensorflow as tf

from keras_bert import BertPreprocessor
from keras_bert.text.multiple_choice_preprocessor import BertMultipleChoicePreprocessor

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "he", "she", "ran", "sat", "slept"]


def test_each_choice_is_packed_with_its_context():
    pre = BertMultipleChoicePreprocessor(VOCAB, seq_length=6)
    contexts, choices = ["he", "she"], [["ran", "sat", "slept"], ["sat", "ran", "ran"]]
    out = pre((contexts, choices))
    assert out["input_word_ids"].shape == (2, 3, 6)
    pairs = BertPreprocessor(VOCAB, seq_length=6)(
        (tf.constant(["he"] * 3 + ["she"] * 3), tf.constant(sum(choices, []))))
    for key in out:
        np.testing.assert_array_equal(out[key].numpy().reshape(6, 6), pairs[key].numpy())
    only = pre(tf.constant(choices))  # choices alone: one segment each
    assert only["input_word_ids"].numpy()[0, 0].tolist() == [2, 7, 3, 0, 0, 0]


def test_bad_shapes():
    pre = BertMultipleChoicePreprocessor(VOCAB, seq_length=6)
    with pytest.raises(ValueError, match=r"choices must be \[batch, num_choices\] strings"):
        pre((["he"], ["ran", "sat"]))
    with pytest.raises((ValueError, tf.errors.InvalidArgumentError),
                       match="contexts and choices need the same batch size"):
        pre((["he", "she"], [["ran", "sat"]]))


def test_seq_length_must_hold_a_context_and_a_choice():
    """A context with each choice is a pair ([CLS] context [SEP] choice [SEP]: 5 at least);
    choices alone are single texts (3)."""
    pre = BertMultipleChoicePreprocessor(VOCAB, seq_length=4)
    with pytest.raises(ValueError, match=r"BertMultipleChoicePreprocessor: seq_length must be "
                                         r"at least 5 to hold \[CLS\] a \[SEP\] b \[SEP\]"):
        pre((["he"], [["ran", "sat"]]))
    assert pre(tf.constant([["ran", "sat"]]))["input_word_ids"].numpy().tolist() == [
        [[2, 7, 3, 0], [2, 8, 3, 0]]]
    assert BertMultipleChoicePreprocessor(VOCAB, seq_length=5)((["he"], [["ran", "sat"]]))[
        "input_word_ids"].numpy().tolist() == [[[2, 5, 3, 7, 3], [2, 5, 3, 8, 3]]]
    with pytest.raises(ValueError, match=r"at least 3 to hold \[CLS\] a \[SEP\]"):
        BertMultipleChoicePreprocessor(VOCAB, seq_length=2)
