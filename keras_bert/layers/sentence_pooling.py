"""`SentencePooling`: token embeddings and their mask -> one vector per text."""

import keras
from keras import ops

from keras_bert.checks import check_layer_kwargs

MODES = ("mean", "cls", "max", "mean_sqrt_len")


def pooling_modes(mode):
    """``mode`` (a name of `MODES`, or a list of them) as a tuple of names; ValueError
    naming the modes otherwise."""
    modes = (mode,) if isinstance(mode, str) else tuple(mode) if isinstance(
        mode, (list, tuple)) else None
    if not modes or any(not isinstance(m, str) or m not in MODES for m in modes):
        raise ValueError(f"pooling must be one of {', '.join(map(repr, MODES))}, or a list of "
                         f"them (concatenated in order), got {mode!r}.")
    return modes


@keras.saving.register_keras_serializable(package="keras_bert")
class SentencePooling(keras.layers.Layer):
    """Pools ``sequence_output`` ``[batch, seq, hidden]`` over the real tokens of
    ``input_mask`` ``[batch, seq]`` (1: a token, 0: padding), as sentence-transformers'
    ``Pooling`` module does:

    * ``"mean"``: the mean of the real tokens' vectors (sum / count, the count at least 1e-9);
    * ``"cls"``: the first real token's vector (``[CLS]``);
    * ``"max"``: the element-wise maximum over the real tokens (padding counts as -inf);
    * ``"mean_sqrt_len"``: the sum divided by the square root of the count.

    A list of modes concatenates their vectors in its order: ``[batch, hidden * len(modes)]``.
    Padding never changes the result, so a batch cut to its longest text gives the same
    vectors. The layer computes in float32 whatever its inputs' dtype (as sentence-transformers
    accumulates half-precision outputs), and returns its dtype policy's compute dtype.

    Example:

    >>> import numpy as np
    >>> tokens = np.array([[[1., 2.], [3., 4.], [9., 9.]]], "float32")  # [1, 3, 2]
    >>> mask = np.array([[1, 1, 0]], "int32")  # the third is padding
    >>> SentencePooling("mean")(tokens, mask).numpy()
    array([[2., 3.]], dtype=float32)
    >>> SentencePooling(["cls", "max"])(tokens, mask).numpy()
    array([[1., 2., 3., 4.]], dtype=float32)
    """

    def __init__(self, mode="mean", **kwargs):
        check_layer_kwargs(self, kwargs)
        super().__init__(**kwargs)
        self.modes = pooling_modes(mode)
        self.mode = self.modes[0] if len(self.modes) == 1 else list(self.modes)
        self.built = True

    def call(self, sequence_output, input_mask):
        tokens = ops.cast(sequence_output, "float32")  # [batch, seq, hidden]
        mask = ops.cast(ops.expand_dims(input_mask, -1), "float32")  # [batch, seq, 1]
        vectors = []
        for mode in self.modes:
            if mode == "cls":
                # The first real token: position 0 unless the padding is on the left.
                first = ops.logical_and(ops.cumsum(mask, axis=1) == 1.0, mask > 0)
                vectors.append(ops.sum(tokens * ops.cast(first, "float32"), axis=1))
            elif mode == "max":
                vectors.append(ops.max(ops.where(mask > 0, tokens, float("-inf")), axis=1))
            else:
                total = ops.sum(tokens * mask, axis=1)  # [batch, hidden]
                count = ops.maximum(ops.sum(mask, axis=1), 1e-9)  # [batch, 1]
                vectors.append(total / (count if mode == "mean" else ops.sqrt(count)))
        pooled = vectors[0] if len(vectors) == 1 else ops.concatenate(vectors, axis=-1)
        return ops.cast(pooled, self.compute_dtype)  # [batch, hidden * modes]

    def compute_output_shape(self, sequence_output_shape, input_mask_shape=None):
        hidden = sequence_output_shape[-1]
        return (sequence_output_shape[0], None if hidden is None else hidden * len(self.modes))

    def get_config(self):
        config = super().get_config()
        config["mode"] = self.mode
        return config
