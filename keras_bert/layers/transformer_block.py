"""`TransformerBlock`: BERT's post-LayerNorm encoder block."""

import math

import keras
import tensorflow as tf

from keras_bert.layers import activations

# Added to attention scores of padding positions, as in Google's modeling.py.
_MASK_BIAS = -10000.0


@keras.saving.register_keras_serializable(package="keras_bert")
class TransformerBlock(keras.layers.Layer):
    """One BERT encoder block: self-attention and feed-forward, each followed by
    dropout, a residual connection and LayerNorm (the original post-LN order).

    Call it on ``(hidden_states, input_mask)``: ``hidden_states`` is
    ``[batch, seq, hidden_size]``, ``input_mask`` is ``[batch, seq]`` with 1 for real tokens
    and 0 for padding. Padding positions receive no attention. Softmax is computed in float32
    under mixed precision, and Keras' LayerNorm computes in float32 too.

    Example:

    >>> import numpy as np
    >>> from keras_bert.layers import TransformerBlock
    >>> block = TransformerBlock(hidden_size=16, num_attention_heads=4, intermediate_size=32)
    >>> x = np.random.rand(2, 5, 16).astype("float32")
    >>> mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], dtype="int32")
    >>> block((x, mask)).shape
    TensorShape([2, 5, 16])
    """

    def __init__(
        self,
        hidden_size,
        num_attention_heads,
        intermediate_size,
        hidden_act="gelu",
        dropout=0.1,
        attention_dropout=0.1,
        initializer_range=0.02,
        layer_norm_eps=1e-12,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if hidden_size % num_attention_heads:
            raise ValueError(
                f"hidden_size ({hidden_size}) must be divisible by "
                f"num_attention_heads ({num_attention_heads})."
            )
        self.hidden_size = hidden_size
        self.num_attention_heads = num_attention_heads
        self.head_size = hidden_size // num_attention_heads
        self.intermediate_size = intermediate_size
        self.hidden_act = hidden_act
        self.dropout_rate = dropout
        self.attention_dropout_rate = attention_dropout
        self.initializer_range = initializer_range
        self.layer_norm_eps = layer_norm_eps

        def dense(units, name, activation=None):
            return keras.layers.Dense(
                units,
                activation=activation,
                kernel_initializer=keras.initializers.TruncatedNormal(stddev=initializer_range),
                dtype=self.dtype_policy,
                name=name,
            )

        def layer_norm(name):
            return keras.layers.LayerNormalization(
                epsilon=layer_norm_eps, dtype=self.dtype_policy, name=name
            )

        self.query = dense(hidden_size, "query")
        self.key = dense(hidden_size, "key")
        self.value = dense(hidden_size, "value")
        self.attention_output = dense(hidden_size, "attention_output")
        self.attention_layer_norm = layer_norm("attention_layer_norm")
        self.intermediate = dense(
            intermediate_size, "intermediate", activation=activations.get(hidden_act)
        )
        self.output_dense = dense(hidden_size, "output")
        self.output_layer_norm = layer_norm("output_layer_norm")
        self.attention_probs_dropout = keras.layers.Dropout(
            attention_dropout, dtype=self.dtype_policy, name="attention_probs_dropout"
        )
        self.attention_output_dropout = keras.layers.Dropout(
            dropout, dtype=self.dtype_policy, name="attention_output_dropout"
        )
        self.output_dropout = keras.layers.Dropout(
            dropout, dtype=self.dtype_policy, name="output_dropout"
        )

    def build(self, input_shape):
        hidden_shape = (None, None, self.hidden_size)
        for layer in (self.query, self.key, self.value, self.attention_output, self.intermediate):
            layer.build(hidden_shape)
        self.output_dense.build((None, None, self.intermediate_size))
        self.attention_layer_norm.build(hidden_shape)
        self.output_layer_norm.build(hidden_shape)
        super().build(input_shape)

    def _split_heads(self, x, batch, seq):
        # [batch, seq, hidden] -> [batch, heads, seq, head_size]
        x = tf.reshape(x, [batch, seq, self.num_attention_heads, self.head_size])
        return tf.transpose(x, [0, 2, 1, 3])

    def _self_attention(self, x, input_mask, training):
        batch, seq = tf.shape(x)[0], tf.shape(x)[1]
        # Scaling the queries first is the same product as scaling the scores, on fewer numbers.
        q = self._split_heads(self.query(x), batch, seq) * (1.0 / math.sqrt(self.head_size))
        k = self._split_heads(self.key(x), batch, seq)
        v = self._split_heads(self.value(x), batch, seq)
        scores = tf.matmul(q, k, transpose_b=True)  # [batch, heads, seq, seq]
        # input_mask [batch, seq] -> additive bias [batch, 1, 1, seq], in float32.
        bias = (1.0 - tf.cast(input_mask, tf.float32)) * _MASK_BIAS
        scores = tf.cast(scores, tf.float32) + bias[:, tf.newaxis, tf.newaxis, :]
        probs = tf.nn.softmax(scores, axis=-1)
        probs = self.attention_probs_dropout(tf.cast(probs, x.dtype), training=training)
        context = tf.matmul(probs, v)  # [batch, heads, seq, head_size]
        context = tf.transpose(context, [0, 2, 1, 3])
        return tf.reshape(context, [batch, seq, self.hidden_size])

    def call(self, inputs, training=None):
        x, input_mask = inputs
        attention = self.attention_output(self._self_attention(x, input_mask, training))
        attention = self.attention_output_dropout(attention, training=training)
        x = self.attention_layer_norm(x + attention)
        ffn = self.output_dense(self.intermediate(x))
        ffn = self.output_dropout(ffn, training=training)
        return self.output_layer_norm(x + ffn)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[0])

    def canonical_variables(self):
        """Variables by their names in Google's checkpoints, relative to ``layer_N/``."""
        named = {
            "attention/self/query": self.query,
            "attention/self/key": self.key,
            "attention/self/value": self.value,
            "attention/output/dense": self.attention_output,
            "intermediate/dense": self.intermediate,
            "output/dense": self.output_dense,
        }
        out = {}
        for prefix, layer in named.items():
            out[f"{prefix}/kernel"] = layer.kernel
            out[f"{prefix}/bias"] = layer.bias
        for prefix, norm in (
            ("attention/output/LayerNorm", self.attention_layer_norm),
            ("output/LayerNorm", self.output_layer_norm),
        ):
            out[f"{prefix}/gamma"] = norm.gamma
            out[f"{prefix}/beta"] = norm.beta
        return out

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "hidden_size": self.hidden_size,
                "num_attention_heads": self.num_attention_heads,
                "intermediate_size": self.intermediate_size,
                "hidden_act": self.hidden_act,
                "dropout": self.dropout_rate,
                "attention_dropout": self.attention_dropout_rate,
                "initializer_range": self.initializer_range,
                "layer_norm_eps": self.layer_norm_eps,
            }
        )
        return config
