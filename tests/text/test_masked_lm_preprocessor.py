"""BertMaskedLMPreprocessor / BertPretrainerPreprocessor: packed features, labels that are
the original ids at the masked positions, weights, NSP labels, config and .keras round trip."""

import numpy as np
import pytest

from keras_bert import BertPreprocessor
from keras_bert.text.masked_lm_preprocessor import (
    BertMaskedLMPreprocessor,
    BertPretrainerPreprocessor,
)

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "down", "on",
         "a", "mat", "dog", "ran"]
TEXTS = ["the cat sat down on a mat", "a dog ran", "the dog sat on the cat"]


def test_labels_are_the_original_ids_at_the_masked_positions():
    pre = BertMaskedLMPreprocessor(VOCAB, seq_length=10, max_predictions_per_seq=3, seed=3)
    x, y, w = pre(TEXTS)
    plain = BertPreprocessor(VOCAB, seq_length=10)(TEXTS)
    original = plain["input_word_ids"].numpy()
    positions, y, w = x["masked_lm_positions"].numpy(), y.numpy(), w.numpy()
    assert sorted(x) == ["input_mask", "input_type_ids", "input_word_ids", "masked_lm_positions"]
    assert y.shape == w.shape == positions.shape == (3, 3)
    np.testing.assert_array_equal(x["input_mask"], plain["input_mask"])
    for row in range(3):
        for p, label, weight in zip(positions[row], y[row], w[row]):
            if weight:
                assert label == original[row, p] and label >= 5  # never a special token
    # Unmasked positions keep their ids.
    masked = np.zeros_like(original, bool)
    for row in range(3):
        masked[row, positions[row][w[row] > 0]] = True
    ids = x["input_word_ids"].numpy()
    np.testing.assert_array_equal(ids[~masked], original[~masked])


def test_pretrainer_labels_and_segments():
    pre = BertPretrainerPreprocessor(VOCAB, seq_length=12, max_predictions_per_seq=2, seed=0)
    x, y, w = pre((TEXTS[:2], TEXTS[1:]), [0, 1])
    assert sorted(y) == ["mlm_logits", "nsp_logits"]
    assert y["nsp_logits"].numpy().tolist() == [0, 1]
    assert x["input_type_ids"].numpy()[0].max() == 1  # the second segment is type 1


def test_config_round_trip_and_bad_arguments():
    pre = BertMaskedLMPreprocessor(VOCAB, seq_length=10, max_predictions_per_seq=3, seed=3)
    again = BertMaskedLMPreprocessor.from_config(pre.get_config())
    assert again.get_config() == pre.get_config()
    with pytest.raises(ValueError, match="max_predictions_per_seq"):
        BertMaskedLMPreprocessor(VOCAB, max_predictions_per_seq=0)


def test_seq_length_must_hold_a_token_of_each_text():
    pre = BertPretrainerPreprocessor(VOCAB, seq_length=4, seed=0)
    with pytest.raises(ValueError, match=r"BertPretrainerPreprocessor: seq_length must be at "
                                         r"least 5 to hold \[CLS\] a \[SEP\] b \[SEP\]"):
        pre((["the cat"], ["sat"]), [0])
    with pytest.raises(ValueError, match=r"BertMaskedLMPreprocessor: seq_length must be at "
                                         r"least 3"):
        BertMaskedLMPreprocessor(VOCAB, seq_length=2)


def test_from_preset_takes_the_masking_arguments_and_names_its_class():
    pre = BertMaskedLMPreprocessor.from_preset("tiny_random", seq_length=10,
                                               max_predictions_per_seq=2, seed=4)
    config = pre.get_config()
    assert (config["seq_length"], config["max_predictions_per_seq"], config["seed"]) == (10, 2, 4)
    pretrainer = BertPretrainerPreprocessor.from_preset("tiny_random", whole_word_masking=True)
    assert pretrainer.get_config()["whole_word_masking"] is True
    with pytest.raises(TypeError, match=r"BertMaskedLMPreprocessor\.from_preset\(\) got unknown "
                                        r"keyword argument 'sed' \(did you mean 'seed'\?\)"):
        BertMaskedLMPreprocessor.from_preset("tiny_random", sed=0)
