"""BertTokenClassifierPreprocessor: word labels on the first piece of each word, weights 0 on
continuation pieces, specials and padding; words cut off by seq_length lose their labels."""

import numpy as np
import tensorflow as tf

from keras_bert.text.token_classifier_preprocessor import BertTokenClassifierPreprocessor

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "paris", "is", "big", "##gest", "city"]


def test_labels_sit_on_first_pieces():
    pre = BertTokenClassifierPreprocessor(VOCAB, seq_length=8)
    x, y, w = pre(tf.ragged.constant([["Paris", "is", "biggest", "city"]]),
                  tf.ragged.constant([[1, 0, 2, 3]]))
    assert x["input_word_ids"].numpy()[0].tolist() == [2, 5, 6, 7, 8, 9, 3, 0]
    assert y.numpy()[0].tolist() == [0, 1, 0, 2, 0, 3, 0, 0]
    assert w.numpy()[0].tolist() == [0, 1, 1, 1, 0, 1, 0, 0]
    positions = pre.first_piece_positions(tf.ragged.constant([["Paris", "is", "biggest"]]))
    assert positions.to_list() == [[1, 2, 3]]


def test_words_cut_off_carry_no_weight():
    pre = BertTokenClassifierPreprocessor(VOCAB, seq_length=5)  # [CLS] 3 pieces [SEP]
    x, y, w = pre(tf.ragged.constant([["Paris", "is", "biggest", "city"]]),
                  tf.ragged.constant([[1, 0, 2, 3]]))
    assert x["input_word_ids"].numpy()[0].tolist() == [2, 5, 6, 7, 3]
    assert np.asarray(w)[0].tolist() == [0, 1, 1, 1, 0]


def test_seq_length_must_hold_one_piece():
    import pytest

    for bad in (2, 0, "8"):
        with pytest.raises(ValueError, match="BertTokenClassifierPreprocessor: seq_length must "
                                             "be at least 3|seq_length must be an integer"):
            BertTokenClassifierPreprocessor(VOCAB, seq_length=bad)
    x = BertTokenClassifierPreprocessor(VOCAB, seq_length=3)(tf.ragged.constant([["Paris",
                                                                                  "is"]]))
    assert x["input_word_ids"].numpy().tolist() == [[2, 5, 3]]
