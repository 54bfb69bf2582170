"""BertPackInputs: [CLS]/[SEP] layout, truncation, shapes, dense and ragged inputs."""

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.text import BertPackInputs


def _packer(**kwargs):
    return BertPackInputs(start_of_sequence_id=2, end_of_segment_id=3, padding_id=0, **kwargs)


def test_single_segment_and_padding():
    out = _packer(seq_length=6)(tf.ragged.constant([[7, 8], [9, 10, 11, 12, 13, 14, 15]]))
    assert out["input_word_ids"].numpy().tolist() == [[2, 7, 8, 3, 0, 0], [2, 9, 10, 11, 12, 3]]
    assert out["input_mask"].numpy().tolist() == [[1, 1, 1, 1, 0, 0], [1] * 6]
    assert out["input_type_ids"].numpy().tolist() == [[0] * 6, [0] * 6]
    assert all(v.dtype == tf.int32 for v in out.values())


def test_round_robin_matches_bert_truncate_seq_pair():
    def truncate_seq_pair(a, b, max_length):  # google-research/bert run_classifier.py
        a, b = list(a), list(b)
        while len(a) + len(b) > max_length:
            (a if len(a) > len(b) else b).pop()
        return a, b

    rng = np.random.default_rng(0)
    packer = _packer(seq_length=16)
    for _ in range(20):
        la, lb = rng.integers(0, 20, size=2)
        a, b = list(range(100, 100 + la)), list(range(200, 200 + lb))
        ta, tb = truncate_seq_pair(a, b, 16 - 3)
        out = packer([tf.ragged.constant([a], dtype=tf.int32),
                      tf.ragged.constant([b], dtype=tf.int32)])
        want = [2] + ta + [3] + tb + [3]
        want += [0] * (16 - len(want))
        assert out["input_word_ids"].numpy()[0].tolist() == want


def test_waterfall_three_segments_and_per_call_length():
    packer = _packer(seq_length=10, truncator="waterfall")
    a = tf.ragged.constant([[10, 11, 12, 13, 14]])
    b = tf.ragged.constant([[20, 21, 22]])
    c = tf.ragged.constant([[30]])
    out = packer([a, b, c])
    assert out["input_word_ids"].numpy().tolist() == [[2, 10, 11, 12, 13, 14, 3, 20, 3, 3]]
    assert out["input_type_ids"].numpy().tolist() == [[0, 0, 0, 0, 0, 0, 0, 1, 1, 2]]
    longer = packer([a, b, c], seq_length=16)
    assert longer["input_word_ids"].shape == (1, 16)
    assert longer["input_word_ids"].numpy()[0, :13].tolist() == [
        2, 10, 11, 12, 13, 14, 3, 20, 21, 22, 3, 30, 3]


def test_dense_unbatched_empty_and_errors():
    packer = _packer(seq_length=5)
    dense = packer(tf.constant([[7, 8, 9, 10, 11, 12]]))
    assert dense["input_word_ids"].numpy().tolist() == [[2, 7, 8, 9, 3]]
    single = packer(tf.constant([7, 8]))
    assert single["input_word_ids"].numpy().tolist() == [2, 7, 8, 3, 0]
    empty = packer(tf.ragged.constant([], dtype=tf.int32, ragged_rank=1, inner_shape=()))
    assert empty["input_word_ids"].shape == (0, 5)
    with pytest.raises(ValueError, match="1 to 3"):
        packer([tf.constant([[1]])] * 4)
    with pytest.raises(ValueError, match="too short"):
        _packer(seq_length=2)([tf.constant([[1]]), tf.constant([[1]])])
    with pytest.raises(ValueError, match="truncator"):
        _packer(truncator="middle")


def test_config_round_trip():
    packer = _packer(seq_length=9, truncator="waterfall")
    clone = BertPackInputs.from_config(packer.get_config())
    assert clone.get_config() == packer.get_config()
