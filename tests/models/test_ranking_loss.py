"""MultipleNegativesRankingLoss: sentence-transformers' loss (and its MatryoshkaLoss) on the same
embeddings; sample weights; clear errors for what it cannot score."""

import numpy as np
import pytest

import keras
from keras_bert import MultipleNegativesRankingLoss
from tests.dependencies import require


def _embeddings(columns=3, batch=6, dim=8, seed=0):
    return np.random.default_rng(seed).normal(size=(batch, columns, dim)).astype("float32")


def _reference(embeddings, scale=20.0):
    """sentence-transformers' MultipleNegativesRankingLoss of the columns."""
    torch = require("torch")
    require("sentence_transformers")
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    loss = MultipleNegativesRankingLoss(model=None, scale=scale)
    columns = [torch.tensor(embeddings[:, i]) for i in range(embeddings.shape[1])]
    return float(loss.compute_loss_from_embeddings(columns, labels=None))


@pytest.mark.parametrize("columns", [2, 3])
@pytest.mark.parametrize("scale", [20.0, 5.0])
def test_is_sentence_transformers_loss(columns, scale):
    embeddings = _embeddings(columns)
    got = float(MultipleNegativesRankingLoss(scale=scale)(None, embeddings))
    assert got == pytest.approx(_reference(embeddings, scale), rel=1e-5)
    # Pairs that match score lower than the same pairs shuffled across rows.
    matched = embeddings.copy()
    matched[:, 1] = matched[:, 0] + 0.1 * matched[:, 1]
    shuffled = matched.copy()
    shuffled[:, 1] = matched[::-1, 1]
    loss = MultipleNegativesRankingLoss(scale=scale)
    assert 10 * float(loss(None, matched)) < float(loss(None, shuffled))


def test_matryoshka_is_the_weighted_sum_over_prefixes():
    embeddings = _embeddings(3)
    loss = MultipleNegativesRankingLoss(matryoshka_dims=[8, 4, 2], matryoshka_weights=[1, 2, 3])
    want = sum(w * _reference(embeddings[..., :d]) for d, w in ((8, 1), (4, 2), (2, 3)))
    assert float(loss(None, embeddings)) == pytest.approx(want, rel=1e-5)
    unweighted = MultipleNegativesRankingLoss(matryoshka_dims=[8, 4])
    assert float(unweighted(None, embeddings)) == pytest.approx(
        _reference(embeddings) + _reference(embeddings[..., :4]), rel=1e-5)


def test_sample_weights_weigh_the_anchors():
    embeddings = _embeddings(2, batch=4)
    loss = MultipleNegativesRankingLoss()
    per_anchor = [float(loss(None, embeddings, sample_weight=np.eye(4, dtype="float32")[i]))
                  for i in range(4)]
    assert len(set(np.round(per_anchor, 5))) == 4  # each anchor its own loss
    assert float(loss(None, embeddings)) == pytest.approx(np.sum(per_anchor), rel=1e-5)


def test_config_round_trip():
    loss = MultipleNegativesRankingLoss(scale=10.0, matryoshka_dims=[8, 4],
                                        matryoshka_weights=[1.0, 0.5])
    again = keras.losses.deserialize(keras.losses.serialize(loss))
    assert isinstance(again, MultipleNegativesRankingLoss)
    assert (again.scale, again.matryoshka_dims, again.matryoshka_weights) == (
        10.0, [8, 4], [1.0, 0.5])


@pytest.mark.parametrize("kwargs, error", [
    ({"scale": 0}, r"scale must be > 0"),
    ({"matryoshka_dims": []}, r"matryoshka_dims must name at least one embedding size"),
    ({"matryoshka_dims": [8, 0]}, r"matryoshka_dims must be an int >= 1, got 0"),
    ({"matryoshka_weights": [1.0]}, r"needs one weight per size of matryoshka_dims \(None\)"),
    ({"matryoshka_dims": [8, 4], "matryoshka_weights": [1.0]}, r"needs one weight per size"),
])
def test_bad_arguments_are_named(kwargs, error):
    with pytest.raises(ValueError, match=error):
        MultipleNegativesRankingLoss(**kwargs)


def test_embeddings_without_columns_are_refused():
    loss = MultipleNegativesRankingLoss()
    with pytest.raises(ValueError, match=r"takes the embeddings of columns, \[batch, columns, "
                                         r"dim\] .*got shape \(6, 8\)"):
        loss(None, _embeddings(1)[:, 0])
    with pytest.raises(ValueError, match=r"needs anchors and positives \(2 or 3 columns\); got "
                                         r"1 column"):
        loss(None, _embeddings(1))
