"""SentencePooling: every mode is sentence-transformers' Pooling on the same token embeddings
and mask; padding changes nothing; the shared layer checks."""

import numpy as np
import pytest

import keras_bert  # noqa: F401  (selects the TensorFlow backend)
from keras_bert.layers import SentencePooling
from tests.dependencies import require

MODES = {"mean": "mean", "cls": "cls", "max": "max", "mean_sqrt_len": "mean_sqrt_len_tokens"}


def _tokens_and_mask(seed=0, batch=4, seq=7, hidden=6):
    rng = np.random.default_rng(seed)
    tokens = rng.normal(size=(batch, seq, hidden)).astype("float32")
    lengths = np.array([seq, 1, 3, 5])[:batch]
    mask = (np.arange(seq)[None, :] < lengths[:, None]).astype("int32")
    return tokens, mask


def _sentence_transformers(modes, tokens, mask):
    torch = require("torch")
    require("sentence_transformers")
    from sentence_transformers.sentence_transformer.modules import Pooling

    pooling = Pooling(tokens.shape[-1], pooling_mode=tuple(MODES[m] for m in modes))
    features = {"token_embeddings": torch.tensor(tokens), "attention_mask": torch.tensor(mask)}
    return pooling(features)["sentence_embedding"].numpy()


@pytest.mark.parametrize("modes", [["mean"], ["cls"], ["max"], ["mean_sqrt_len"],
                                   ["cls", "mean"], ["max", "mean_sqrt_len", "cls"]])
def test_each_mode_is_sentence_transformers_pooling(modes):
    tokens, mask = _tokens_and_mask()
    want = _sentence_transformers(modes, tokens, mask)
    got = SentencePooling(modes if len(modes) > 1 else modes[0])(tokens, mask).numpy()
    assert got.shape == (4, 6 * len(modes))
    np.testing.assert_allclose(got, want, atol=1e-6, rtol=0)
    # The modes read the text, not the padding: the rows differ, and the padding's values
    # never count (a text of one token pools to that token in every mode).
    assert np.abs(got[0] - got[2]).max() > 0.1
    np.testing.assert_allclose(got[1], np.tile(tokens[1, 0], len(modes)), atol=1e-6)


@pytest.mark.parametrize("mode", list(MODES))
def test_padding_changes_nothing(mode):
    tokens, mask = _tokens_and_mask()
    padded = np.concatenate([tokens, np.full((4, 5, 6), 100.0, "float32")], axis=1)
    padded_mask = np.concatenate([mask, np.zeros((4, 5), "int32")], axis=1)
    np.testing.assert_allclose(SentencePooling(mode)(padded, padded_mask).numpy(),
                               SentencePooling(mode)(tokens, mask).numpy(), atol=1e-6)


def test_left_padding_takes_the_first_real_token_for_cls():
    tokens, _ = _tokens_and_mask(batch=1)
    mask = np.array([[0, 0, 1, 1, 1, 0, 0]], "int32")
    np.testing.assert_allclose(SentencePooling("cls")(tokens, mask).numpy(), tokens[:, 2],
                               atol=0)
    np.testing.assert_allclose(SentencePooling("cls")(tokens, mask).numpy(),
                               _sentence_transformers(["cls"], tokens, mask), atol=1e-6)


def test_config_keeps_the_modes_and_unknown_ones_are_refused():
    assert SentencePooling("max").get_config()["mode"] == "max"
    assert SentencePooling(["cls", "mean"]).get_config()["mode"] == ["cls", "mean"]
    for bad in ("weightedmean", [], ["mean", "sum"], 3):
        with pytest.raises(ValueError, match=r"pooling must be one of 'mean', 'cls', 'max', "
                                             r"'mean_sqrt_len', or a list of them"):
            SentencePooling(bad)


def test_shared_checks():
    from tests.harness import check_layer

    tokens, mask = _tokens_and_mask()
    check_layer(SentencePooling(["cls", "mean"]), (tokens, mask),
                call=lambda layer, x: layer(x[0], x[1]))
