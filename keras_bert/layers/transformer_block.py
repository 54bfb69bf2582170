"""`TransformerBlock`: BERT's post-LayerNorm encoder block."""

import math

import keras
import tensorflow as tf

from keras_bert.layers import activations, fused
from keras_bert.layers.dense import Dense
from keras_bert.checks import check_layer_kwargs

# Added to attention scores of padding positions, as in Google's modeling.py.
_MASK_BIAS = -10000.0


@keras.saving.register_keras_serializable(package="keras_bert")
class TransformerBlock(keras.layers.Layer):
    """One BERT encoder block: self-attention and feed-forward, each followed by
    dropout, a residual connection and LayerNorm (the original post-LN order).

    Call it on ``(hidden_states, input_mask)``: ``hidden_states`` is
    ``[batch, seq, hidden_size]``, ``input_mask`` is ``[batch, seq]`` with 1 for real tokens
    and 0 for padding. Padding positions receive no attention. Under mixed precision the
    matmuls run in the compute dtype (bfloat16 or float16) while softmax, the residual sums
    and LayerNorm stay in float32; the output has the compute dtype.

    The block calls its Dense and LayerNormalization sublayers, so Keras features that act on
    them (``enable_lora``, ``quantize``) change what it computes; their names and
    ``canonical_variables()`` are Google's. The projections are `keras_bert.layers.dense.Dense`
    (Keras' `Dense` whose LoRA factors save as they are and merge into the kernel). For speed
    every projection runs as a 2-D matmul over all ``batch * seq`` tokens (TensorFlow's
    oneDNN rewrite fuses the matmul with its bias and with the GELU of the intermediate
    layer), and the attention scores are written as ``matmul * scale + mask_bias``, which it
    fuses into one batched matmul in float32.
    While training, the element-wise chains between the matmuls (softmax and dropout of the
    attention probabilities; dropout, residual sum and LayerNorm; GELU), and their
    gradients, run as small XLA-compiled kernels (`keras_bert.layers.fused`), the same math.

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
        check_layer_kwargs(self, kwargs)
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
            return Dense(
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
        # The activation (by `BertConfig.hidden_act` name) is applied in call(), right after
        # the intermediate Dense: the same ops as Dense(activation=...), one name table.
        self._activation = activations.get(hidden_act)
        self.intermediate = dense(intermediate_size, "intermediate")
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

    def _heads(self, x, batch, seq):
        # [batch * seq, hidden] -> [batch, heads, seq, head_size]
        x = tf.reshape(x, [batch, seq, self.num_attention_heads, self.head_size])
        return tf.transpose(x, [0, 2, 1, 3])

    def _self_attention(self, x_q, x, input_mask, batch, q_len, seq, training):
        # x_q: [batch * q_len, hidden] queries; x: [batch * seq, hidden] keys and values
        # -> context [batch * q_len, hidden]
        q = self._heads(self.query(x_q), batch, q_len)
        k = self._heads(self.key(x), batch, seq)
        v = self._heads(self.value(x), batch, seq)
        # input_mask [batch, seq] -> additive bias [batch, 1, 1, seq], in float32.
        mask_bias = (1.0 - tf.cast(input_mask, tf.float32)) * _MASK_BIAS
        scale = 1.0 / math.sqrt(self.head_size)
        if q.dtype == tf.float16:
            # float16 overflows at 65504: scale the query before the product instead.
            q, scale = q * tf.cast(scale, q.dtype), 1.0
        # [batch, heads, q_len, seq] in float32. Written as matmul, then * scale, then + bias
        # so that oneDNN fuses the three into one kernel in float32.
        scores = tf.cast(tf.matmul(q, k, transpose_b=True), tf.float32)
        if scale != 1.0:
            scores = scores * scale
        # (A reshape, not [:, tf.newaxis, tf.newaxis, :]: LiteRT has no builtin for a
        # strided slice that adds axes.)
        scores = scores + tf.reshape(mask_bias, [batch, 1, 1, seq])
        if self._fused(training):
            probs = fused.softmax_dropout(scores, self.attention_probs_dropout, training,
                                          self.compute_dtype)
        else:
            probs = tf.cast(tf.nn.softmax(scores, axis=-1), self.compute_dtype)
            probs = self.attention_probs_dropout(probs, training=training)
        context = tf.matmul(probs, v)  # [batch, heads, q_len, head_size]
        context = tf.transpose(context, [0, 2, 1, 3])  # [batch, q_len, heads, head_size]
        return tf.reshape(context, [batch * q_len, self.hidden_size])

    def _fused(self, training):
        # Training steps run the element-wise chains as fused kernels (layers/fused.py);
        # inference keeps the plain ops, which TensorFlow fuses with the matmuls.
        return fused.ENABLED and isinstance(training, bool) and training

    def _add_norm(self, branch, residual, dropout, norm, training):
        # norm(residual + dropout(branch)), the sum and LayerNorm in float32.
        if self._fused(training):
            y = fused.dropout_add_layer_norm(branch, residual, dropout, norm, training)
            return tf.cast(y, self.compute_dtype)
        branch = dropout(branch, training=training)
        # LayerNormalization computes in float32 for float32 input and returns the compute
        # dtype.
        return norm(tf.cast(residual, tf.float32) + tf.cast(branch, tf.float32))

    def _activate(self, hidden, training):
        if self._activation is None:
            return hidden
        if self._fused(training) and self.hidden_act in ("gelu", "gelu_tanh"):
            return fused.gelu(hidden, approximate=self.hidden_act == "gelu_tanh")
        return self._activation(hidden)

    def call(self, inputs, training=None, output_positions=None):
        """``output_positions``: None for every position's output, or only some of them:
        an int ``n`` (the first ``n``) or an int tensor ``[batch, positions]`` of indices.
        Keys and values still come from every position, so those rows are exactly the
        full output's; the other rows are never computed (queries, attention output,
        feed-forward and LayerNorms run on the chosen rows only)."""
        x, input_mask = inputs
        batch, seq = tf.shape(x)[0], tf.shape(x)[1]
        x = tf.cast(x, self.compute_dtype)
        if output_positions is None:
            rows = x
        elif isinstance(output_positions, int):
            rows = x[:, :output_positions]
        else:
            rows = tf.gather(x, tf.cast(output_positions, tf.int32), batch_dims=1)
        q_len = tf.shape(rows)[1]
        x = tf.reshape(x, [batch * seq, self.hidden_size])
        # [batch * q_len, hidden]: the rows whose output is computed
        x_q = x if output_positions is None else tf.reshape(rows, [-1, self.hidden_size])
        context = self._self_attention(x_q, x, input_mask, batch, q_len, seq, training)
        attention = self.attention_output(context)  # [batch * q_len, hidden]
        x = self._add_norm(attention, x_q, self.attention_output_dropout,
                           self.attention_layer_norm, training)
        hidden = self._activate(self.intermediate(x), training)  # [batch * q_len, intermediate]
        y = self._add_norm(self.output_dense(hidden), x, self.output_dropout,
                           self.output_layer_norm, training)
        return tf.reshape(y, [batch, q_len, self.hidden_size])

    def compute_output_spec(self, inputs, training=None, output_positions=None):
        batch, seq = inputs[0].shape[0], inputs[0].shape[1]
        if isinstance(output_positions, int):
            seq = output_positions if seq is None else min(output_positions, seq)
        elif output_positions is not None:
            seq = output_positions.shape[1]
        return keras.KerasTensor((batch, seq, self.hidden_size), dtype=self.compute_dtype)

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
            # The kernel variable itself: with LoRA enabled `layer.kernel` is the merged
            # tensor (kernel + a @ b), which a checkpoint cannot be assigned to.
            out[f"{prefix}/kernel"] = layer._kernel
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
