"""`BertEmbeddings`: word + position + token-type embeddings, LayerNorm, dropout."""

import keras
import tensorflow as tf

from keras_bert.checks import check_layer_kwargs
from keras_bert.layers.layer_norm import layer_norm_float32


@keras.saving.register_keras_serializable(package="keras_bert")
class BertEmbeddings(keras.layers.Layer):
    """Sums word, position and token-type embeddings, then LayerNorm and dropout.

    Call it on ``(input_word_ids, input_type_ids)``, int tensors of shape ``[batch, seq]``;
    it returns ``[batch, seq, hidden_size]``. ``seq`` may be anything up to
    ``max_position_embeddings``; longer sequences raise an error naming both lengths.

    Example:

    >>> import numpy as np
    >>> from keras_bert.layers import BertEmbeddings
    >>> layer = BertEmbeddings(vocab_size=100, hidden_size=16, max_position_embeddings=32)
    >>> ids = np.array([[2, 5, 7, 0]], dtype="int32")
    >>> layer((ids, np.zeros_like(ids))).shape
    TensorShape([1, 4, 16])
    """

    def __init__(
        self,
        vocab_size,
        hidden_size,
        max_position_embeddings=512,
        type_vocab_size=2,
        initializer_range=0.02,
        layer_norm_eps=1e-12,
        dropout=0.1,
        **kwargs,
    ):
        check_layer_kwargs(self, kwargs)
        super().__init__(**kwargs)
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.max_position_embeddings = max_position_embeddings
        self.type_vocab_size = type_vocab_size
        self.initializer_range = initializer_range
        self.layer_norm_eps = layer_norm_eps
        self.dropout_rate = dropout
        # Like keras.layers.Embedding: gather float32 rows instead of casting whole tables to
        # the compute dtype under mixed precision; the sum and LayerNorm stay in float32.
        self.autocast = False
        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_eps, dtype=self.dtype_policy, name="layer_norm"
        )
        self.dropout = keras.layers.Dropout(dropout, dtype=self.dtype_policy, name="dropout")

    def build(self, input_shape):
        init = keras.initializers.TruncatedNormal(stddev=self.initializer_range)
        self.word_embeddings = self.add_weight(
            name="word_embeddings", shape=(self.vocab_size, self.hidden_size), initializer=init
        )
        self.position_embeddings = self.add_weight(
            name="position_embeddings",
            shape=(self.max_position_embeddings, self.hidden_size),
            initializer=init,
        )
        self.token_type_embeddings = self.add_weight(
            name="token_type_embeddings",
            shape=(self.type_vocab_size, self.hidden_size),
            initializer=init,
        )
        self.layer_norm.build((None, None, self.hidden_size))
        super().build(input_shape)

    def call(self, inputs, training=None):
        input_word_ids, input_type_ids = inputs
        seq_length = self._checked_seq_length(input_word_ids)
        # [batch, seq] -> [batch, seq, hidden]
        words = tf.gather(self.word_embeddings, input_word_ids)
        types = tf.gather(self.token_type_embeddings, input_type_ids)
        positions = self.position_embeddings[:seq_length]  # [seq, hidden]
        x = words + types + positions[tf.newaxis]
        x = tf.cast(layer_norm_float32(x, self.layer_norm), self.compute_dtype)
        return self.dropout(x, training=training)

    def _checked_seq_length(self, input_word_ids):
        static = input_word_ids.shape[-1]
        limit = self.max_position_embeddings
        if static is not None:
            if static > limit:
                raise ValueError(
                    f"Sequence length {static} is longer than max_position_embeddings={limit}; "
                    f"truncate inputs to at most {limit} tokens."
                )
            return static
        seq_length = tf.shape(input_word_ids)[-1]
        with tf.control_dependencies(
            [
                tf.debugging.assert_less_equal(
                    seq_length,
                    limit,
                    message=f"Sequence length is longer than max_position_embeddings={limit}; "
                    f"truncate inputs to at most {limit} tokens.",
                )
            ]
        ):
            return tf.identity(seq_length)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[0]) + (self.hidden_size,)

    def canonical_variables(self):
        """Variables by their names in Google's checkpoints, relative to ``bert/embeddings/``."""
        return {
            "word_embeddings": self.word_embeddings,
            "position_embeddings": self.position_embeddings,
            "token_type_embeddings": self.token_type_embeddings,
            "LayerNorm/gamma": self.layer_norm.gamma,
            "LayerNorm/beta": self.layer_norm.beta,
        }

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocab_size": self.vocab_size,
                "hidden_size": self.hidden_size,
                "max_position_embeddings": self.max_position_embeddings,
                "type_vocab_size": self.type_vocab_size,
                "initializer_range": self.initializer_range,
                "layer_norm_eps": self.layer_norm_eps,
                "dropout": self.dropout_rate,
            }
        )
        return config
