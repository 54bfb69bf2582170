"""`MultipleNegativesRankingLoss`: in-batch negatives, the loss `BertTextEmbedder` trains with."""

import keras
from keras import ops

from keras_bert import checks


@keras.saving.register_keras_serializable(package="keras_bert")
class MultipleNegativesRankingLoss(keras.losses.Loss):
    """sentence-transformers' ``MultipleNegativesRankingLoss`` (InfoNCE with in-batch
    negatives), optionally as its ``MatryoshkaLoss``.

    ``y_pred`` is the embeddings of a batch of columns, ``[batch, columns, dim]``: anchors,
    positives and optionally hard negatives (what `BertTextEmbedder` gives for ``(anchors,
    positives)`` or ``(anchors, positives, negatives)``). Each anchor is scored against every
    positive and every negative of the batch by cosine similarity times ``scale``; the loss
    is the cross-entropy of picking its own positive, averaged over the anchors. ``y_true``
    is not read (the pairs are the labels): pass none.

    Args:
        scale: the similarities' factor (1 / temperature); sentence-transformers' 20.
        matryoshka_dims: None, or embedding sizes (e.g. ``[384, 256, 128, 64]``): the loss is
            then the weighted sum, over these sizes, of the same loss on the embeddings cut to
            their first ``d`` values (re-normalized), so that a prefix of the vector is an
            embedding of its own (sentence-transformers' ``MatryoshkaLoss``).
        matryoshka_weights: one weight per size (default 1 each).

    Example:

    >>> import numpy as np
    >>> anchors = np.array([[1., 0.], [0., 1.]], "float32")
    >>> positives = np.array([[0.9, 0.1], [0.1, 0.9]], "float32")
    >>> loss = MultipleNegativesRankingLoss()
    >>> round(float(loss(None, np.stack([anchors, positives], axis=1))), 4)  # close pairs
    0.0
    >>> round(float(loss(None, np.stack([anchors, positives[::-1]], axis=1))), 2)  # swapped
    17.67
    """

    def __init__(self, scale=20.0, matryoshka_dims=None, matryoshka_weights=None,
                 reduction="sum_over_batch_size", name="multiple_negatives_ranking_loss",
                 dtype=None):
        super().__init__(name=name, reduction=reduction, dtype=dtype)
        self.scale = checks.hyperparameter("scale", scale, low=0, low_inclusive=False)
        self.matryoshka_dims = None if matryoshka_dims is None else [
            checks.count("matryoshka_dims", d) for d in matryoshka_dims]
        if self.matryoshka_dims is not None and not self.matryoshka_dims:
            raise ValueError("matryoshka_dims must name at least one embedding size, or be "
                             "None.")
        if matryoshka_weights is not None:
            if self.matryoshka_dims is None or len(matryoshka_weights) != len(
                    self.matryoshka_dims):
                raise ValueError(f"matryoshka_weights ({matryoshka_weights!r}) needs one weight "
                                 f"per size of matryoshka_dims ({self.matryoshka_dims!r}).")
            matryoshka_weights = [checks.hyperparameter("matryoshka_weights", w, low=0)
                                  for w in matryoshka_weights]
        self.matryoshka_weights = matryoshka_weights

    def __call__(self, y_true, y_pred, sample_weight=None):
        # y_true is never read: a dummy of the batch's size, for Keras' reduction.
        return super().__call__(ops.zeros(ops.shape(y_pred)[:1]), y_pred, sample_weight)

    def call(self, y_true, y_pred):
        if len(y_pred.shape) != 3:
            raise ValueError(
                f"{self.name} takes the embeddings of columns, [batch, columns, dim] "
                "(anchors, positives[, negatives]); got shape "
                f"{tuple(y_pred.shape)}. Train on (anchors, positives) pairs or "
                "(anchors, positives, negatives) triples.")
        if y_pred.shape[1] is not None and y_pred.shape[1] < 2:
            raise ValueError(f"{self.name} needs anchors and positives (2 or 3 columns); got "
                             f"{y_pred.shape[1]} column.")
        dims = self.matryoshka_dims or [y_pred.shape[-1]]
        weights = self.matryoshka_weights or [1.0] * len(dims)
        total = 0.0
        for dim, weight in zip(dims, weights):
            total += weight * _ranking_loss(y_pred[..., :dim], self.scale)
        return total

    def get_config(self):
        config = super().get_config()
        config.update({"scale": self.scale, "matryoshka_dims": self.matryoshka_dims,
                       "matryoshka_weights": self.matryoshka_weights})
        return config


def _ranking_loss(embeddings, scale):
    """The per-anchor loss [batch] of ``embeddings`` [batch, columns, dim]."""
    embeddings = ops.cast(embeddings, "float32")
    embeddings = embeddings / ops.maximum(
        ops.sqrt(ops.sum(ops.square(embeddings), axis=-1, keepdims=True)), 1e-12)
    anchors = embeddings[:, 0, :]  # [batch, dim]
    # Every other column's texts, positives first: [columns - 1, batch, dim] -> rows.
    candidates = ops.reshape(ops.transpose(embeddings[:, 1:, :], (1, 0, 2)),
                             (-1, ops.shape(embeddings)[-1]))  # [(columns - 1) * batch, dim]
    scores = scale * ops.matmul(anchors, ops.transpose(candidates))  # [batch, candidates]
    positive = ops.sum(anchors * embeddings[:, 1, :], axis=-1) * scale  # the diagonal
    return ops.logsumexp(scores, axis=-1) - positive  # -log softmax of the own positive
