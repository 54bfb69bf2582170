"""`MaskedLMHead`: BERT's masked-LM output layer, applied at the masked positions only."""

import keras
import tensorflow as tf

from keras_bert.layers import activations
from keras_bert.checks import check_layer_kwargs
from keras_bert.layers.dense import Dense
from keras_bert.layers.layer_norm import layer_norm_float32


@keras.saving.register_keras_serializable(package="keras_bert")
class MaskedLMHead(keras.layers.Layer):
    """Predicts the tokens at ``masked_lm_positions``, as the original BERT pre-training does.

    ``sequence_output`` ``[batch, seq, hidden]`` is gathered at ``masked_lm_positions``
    ``[batch, predictions]`` first (vocabulary logits are never computed for the other
    positions; without ``masked_lm_positions`` its rows are those positions already, as
    ``BertEncoder(..., output_positions=masked_lm_positions)`` returns them), then
    transformed (dense ``hidden -> hidden``, the encoder's activation, LayerNorm) and decoded
    with the word-embedding table, transposed, plus a bias per token: logits
    ``[batch, predictions, vocab_size]`` in float32.

    Args:
        vocab_size, hidden_size: sizes of the decoder.
        hidden_act: the transform's activation (`BertConfig.hidden_act`).
        embeddings: the layer holding the encoder's word-embedding table,
            ``encoder.token_embedding`` (a `BertEmbeddings`): the decoder is tied to its
            ``word_embeddings`` (as in BERT). Without it the head holds its own decoder of
            the same shape (a layer rebuilt from ``get_config`` alone is untied).
        layer_norm_eps, initializer_range: as in `BertConfig`.

    Its weights, by Google's names: `canonical_variables()`.

    Example:

    >>> import numpy as np
    >>> head = MaskedLMHead(vocab_size=30, hidden_size=8)
    >>> sequence = np.random.rand(2, 5, 8).astype("float32")
    >>> head(sequence, np.array([[1, 3], [0, 0]], "int32")).shape
    TensorShape([2, 2, 30])
    """

    def __init__(self, vocab_size, hidden_size, hidden_act="gelu", embeddings=None,
                 layer_norm_eps=1e-12, initializer_range=0.02, **kwargs):
        check_layer_kwargs(self, kwargs)
        super().__init__(**kwargs)
        self.vocab_size = int(vocab_size)
        self.hidden_size = int(hidden_size)
        self.hidden_act = hidden_act
        self._activation = activations.get(hidden_act)
        self.layer_norm_eps = layer_norm_eps
        self.initializer_range = initializer_range
        if embeddings is not None and (embeddings.vocab_size, embeddings.hidden_size) != (
                self.vocab_size, self.hidden_size):
            raise ValueError(
                f"MaskedLMHead({self.vocab_size}, {self.hidden_size}) cannot tie to embeddings "
                f"of vocab_size={embeddings.vocab_size}, hidden_size={embeddings.hidden_size}."
            )
        self.embeddings = embeddings
        self.dense = Dense(
            self.hidden_size,
            kernel_initializer=keras.initializers.TruncatedNormal(stddev=initializer_range),
            dtype=self.dtype_policy,
            name="transform_dense",
        )
        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_eps, dtype=self.dtype_policy, name="transform_layer_norm")

    def build(self, sequence_output_shape, masked_lm_positions_shape=None):
        self.dense.build((None, None, self.hidden_size))
        self.layer_norm.build((None, None, self.hidden_size))
        if self.embeddings is None:
            self.decoder = self.add_weight(
                name="decoder", shape=(self.vocab_size, self.hidden_size),
                initializer=keras.initializers.TruncatedNormal(stddev=self.initializer_range))
        self.output_bias = self.add_weight(name="output_bias", shape=(self.vocab_size,),
                                           initializer="zeros", autocast=False)
        self.built = True

    @property
    def decoder_table(self):
        """The [vocab_size, hidden_size] table the logits are decoded with."""
        return self.embeddings.word_embeddings if self.embeddings is not None else self.decoder

    def call(self, sequence_output, masked_lm_positions=None):
        # [batch, seq, hidden] -> [batch, predictions, hidden] -> [batch * predictions, hidden]:
        # two-dimensional matmuls. A [batch, predictions, hidden] x [vocab, hidden]^T batch
        # matmul broadcasts the table, and its gradient for the table is a [batch, vocab,
        # hidden] tensor summed over the batch (a third of a BERT-small training step on CPU).
        if masked_lm_positions is None:
            x = sequence_output
        else:
            x = tf.gather(sequence_output, tf.cast(masked_lm_positions, tf.int32), batch_dims=1)
        prediction_shape = tf.shape(x)[:2]
        x = tf.reshape(x, [-1, self.hidden_size])
        x = self.dense(x)
        if self._activation is not None:
            x = self._activation(x)
        x = tf.cast(layer_norm_float32(x, self.layer_norm), self.compute_dtype)
        table = tf.cast(self.decoder_table, self.compute_dtype)
        logits = tf.matmul(x, table, transpose_b=True)  # [batch * predictions, vocab]
        logits = tf.nn.bias_add(tf.cast(logits, tf.float32),
                                tf.cast(self.output_bias, tf.float32))
        return tf.reshape(logits, tf.concat([prediction_shape, [self.vocab_size]], 0))

    def compute_output_shape(self, sequence_output_shape, masked_lm_positions_shape=None):
        if masked_lm_positions_shape is None:
            return tuple(sequence_output_shape[:2]) + (self.vocab_size,)
        return tuple(masked_lm_positions_shape) + (self.vocab_size,)

    def canonical_variables(self):
        """Variables by their names in Google's pre-training checkpoints (the decoder is the
        tied ``bert/embeddings/word_embeddings`` and is not listed)."""
        return {
            "cls/predictions/transform/dense/kernel": self.dense.kernel,
            "cls/predictions/transform/dense/bias": self.dense.bias,
            "cls/predictions/transform/LayerNorm/gamma": self.layer_norm.gamma,
            "cls/predictions/transform/LayerNorm/beta": self.layer_norm.beta,
            "cls/predictions/output_bias": self.output_bias,
        }

    def get_config(self):
        config = super().get_config()
        config.update({
            "vocab_size": self.vocab_size,
            "hidden_size": self.hidden_size,
            "hidden_act": self.hidden_act,
            "layer_norm_eps": self.layer_norm_eps,
            "initializer_range": self.initializer_range,
        })
        return config
