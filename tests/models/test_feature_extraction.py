"""extract_features: Google's extract_features.py records, layers by index, pairs."""

import numpy as np
import pytest

from keras_bert import BertPreprocessor
from keras_bert.models.feature_extraction import extract_features
from tests.models.tiny import VOCAB, tiny_encoder


def test_records_hold_each_real_token_and_the_chosen_layers():
    encoder = tiny_encoder(seed=0)
    pre = BertPreprocessor(VOCAB, seq_length=16)
    records = list(extract_features(encoder, pre, ["the cat sat", "a dog"], layers=[-1, 0],
                                    batch_size=1))
    assert [r["linex_index"] for r in records] == [0, 1]
    assert [f["token"] for f in records[0]["features"]] == ["[CLS]", "the", "cat", "sat", "[SEP]"]
    packed = pre(["the cat sat"])
    outputs = encoder(packed)["encoder_outputs"]
    first = records[0]["features"][2]["layers"]
    assert [layer["index"] for layer in first] == [-1, 0]
    np.testing.assert_allclose(first[0]["values"], np.asarray(outputs[-1])[0, 2], atol=1e-6)
    np.testing.assert_allclose(first[1]["values"], np.asarray(outputs[0])[0, 2], atol=1e-6)


def test_pairs_and_inputs_without_a_second_segment():
    encoder = tiny_encoder(seed=0)
    pre = BertPreprocessor(VOCAB, seq_length=16)
    records = list(extract_features(encoder, pre, ["the cat", "a dog"], ["sat", ""]))
    assert [f["token"] for f in records[0]["features"]] == ["[CLS]", "the", "cat", "[SEP]",
                                                            "sat", "[SEP]"]
    assert [f["token"] for f in records[1]["features"]] == ["[CLS]", "a", "dog", "[SEP]"]


def test_bad_arguments():
    encoder = tiny_encoder(seed=0)
    pre = BertPreprocessor(VOCAB, seq_length=16)
    with pytest.raises(ValueError, match=r"layers must be indices into the encoder's 2 blocks "
                                         r"\(-2\.\.1\); got \[-3\]"):
        next(extract_features(encoder, pre, ["the cat"], layers=[-3]))
    with pytest.raises(ValueError, match="texts has 1 entries but texts_b 2"):
        next(extract_features(encoder, pre, ["the cat"], ["a", "b"]))
