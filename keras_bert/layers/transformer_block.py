"""`TransformerBlock`: BERT's post-LayerNorm encoder block."""

import math

import keras
import numpy as np
import tensorflow as tf

from keras_bert.layers import activations, fused, int8, serving_graph
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
    Once its projections are quantized to int8 (``model.quantize("int8")``), inference
    calls run them on oneDNN's int8 kernel (`keras_bert.layers.Dense`, `layers.int8`): the
    input of query, key and value is quantized once, GELU and the residual sums run inside
    the kernel, and the first position is quantized apart from the other rows in the
    feed-forward layers (its activations there are several times larger). A small model's
    feed-forward layers (an intermediate kernel under ``int8.SINGLE_THREAD_BYTES``, which
    TensorFlow runs on one thread) run at a few rows (batch 1) in two halves side by side
    instead, each half of the activations with its own range.

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

    def _heads(self, x, batch, seq, groups=1):
        # [batch * seq, groups * hidden] -> [batch, groups * heads, seq, head_size]
        x = tf.reshape(x, [batch, seq, groups * self.num_attention_heads, self.head_size])
        if serving_graph.active():
            return serving_graph.heads_first(x)
        return tf.transpose(x, [0, 2, 1, 3])

    def _int8(self, training):
        # Inference with every projection quantized to int8: the int8 kernel, called here
        # directly so that layers with one input quantize it once and the residual sums and
        # GELU run inside the kernel.
        return all(layer.int8_kernel_applies(training) for layer in (
            self.query, self.key, self.value, self.attention_output, self.intermediate,
            self.output_dense))

    def _projections(self, x_q, x, use_int8):
        # Queries of x_q, keys and values of x (2-D): [rows, hidden] each.
        if not use_int8:
            return self.query(x_q), self.key(x), self.value(x)
        if not any(layer.lora_enabled for layer in (self.query, self.key, self.value)):
            # One quantization of x for the three projections (and for the queries when
            # every row's output is computed: then x_q is x).
            same = x_q is x
            x = int8.quantize(x)
            x_q = x if same else int8.quantize(x_q)
        return (self.query.int8_matmul(x_q), self.key.int8_matmul(x),
                self.value.int8_matmul(x))

    def _query_key_value(self, x_q, x, batch, q_len, seq, use_int8):
        # Queries of x_q [batch * q_len, hidden], keys and values of x [batch * seq, hidden]
        # -> [batch, heads, q_len or seq, head_size] each, and the attention's scale still to
        # apply to the scores (1.0 where it is folded into the queries' weights).
        qkv = (self.query, self.key, self.value)
        if serving_graph.fusable(qkv, use_int8):
            # A serving export's graph: one matmul for the three projections (for key and
            # value when the queries are of other rows), one move of the heads, a split.
            same = x_q is x
            if use_int8:
                x = int8.quantize(x)
                x_q = x if same else int8.quantize(x_q)
            heads = self.num_attention_heads
            if same:
                # The attention's scale folded into the queries' weights.
                return serving_graph.split_heads(serving_graph.fused_projection(
                    qkv, x, first_scale=self._attention_scale()), batch, seq, 3, heads) + [1.0]
            q = self.query.int8_matmul(x_q) if use_int8 else self.query(x_q)
            kv = serving_graph.fused_projection(qkv[1:], x)
            return [self._heads(q, batch, q_len)] + serving_graph.split_heads(
                kv, batch, seq, 2, heads) + [self._attention_scale()]
        q, k, v = self._projections(x_q, x, use_int8)
        return (self._heads(q, batch, q_len), self._heads(k, batch, seq),
                self._heads(v, batch, seq), self._attention_scale())

    def _attention_scale(self):
        return 1.0 / math.sqrt(self.head_size)

    def _self_attention(self, x_q, x, input_mask, batch, q_len, seq, training, use_int8=False):
        # x_q: [batch * q_len, hidden] queries; x: [batch * seq, hidden] keys and values
        # -> context [batch * q_len, hidden]
        # The queries' scale still to apply (1.0 where it is folded into their weights).
        q, k, v, scale = self._query_key_value(x_q, x, batch, q_len, seq, use_int8)
        # input_mask [batch, seq] -> additive bias [batch, 1, 1, seq], in float32.
        mask_bias = (1.0 - tf.cast(input_mask, tf.float32)) * _MASK_BIAS
        if q.dtype == tf.float16 and scale != 1.0:
            # float16 overflows at 65504: scale the query before the product instead.
            q, scale = q * tf.cast(scale, q.dtype), 1.0
        # (A reshape, not [:, tf.newaxis, tf.newaxis, :]: LiteRT has no builtin for a
        # strided slice that adds axes.)
        bias = tf.reshape(mask_bias, [batch, 1, 1, seq])
        if serving_graph.inference(training) and q.dtype == tf.float32:
            # A serving export: small products on TensorFlow's own kernels (the same math).
            context = serving_graph.attention(q, k, v, bias, scale)
        else:
            context = self._attend(q, k, v, bias, scale, training)
        # [batch, heads, q_len, head_size] -> [batch, q_len, heads, head_size]
        if serving_graph.active():
            context = serving_graph.heads_last(context)
        else:
            context = tf.transpose(context, [0, 2, 1, 3])
        return tf.reshape(context, [batch * q_len, self.hidden_size])

    def _attend(self, q, k, v, bias, scale, training):
        # softmax(q k^T * scale + bias) v: [batch, heads, q_len, head_size]. The scores
        # [batch, heads, q_len, seq] in float32, written as matmul, then * scale, then + bias
        # so that oneDNN fuses the three into one kernel in float32.
        scores = tf.cast(tf.matmul(q, k, transpose_b=True), tf.float32)
        if scale != 1.0:
            scores = scores * scale
        scores = scores + bias
        if self._fused(training):
            probs = fused.softmax_dropout(scores, self.attention_probs_dropout, training,
                                          self.compute_dtype)
        else:
            probs = tf.cast(tf.nn.softmax(scores, axis=-1), self.compute_dtype)
            probs = self.attention_probs_dropout(probs, training=training)
        return tf.matmul(probs, v)

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
        return self._norm(norm, tf.cast(residual, tf.float32) + tf.cast(branch, tf.float32),
                          training)

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
        if self._int8(training):
            # Only one row per example (output_positions=1): no other rows to keep apart.
            first_apart = not (isinstance(output_positions, int) and output_positions <= 1)
            y = self._int8_rest(x_q, x, input_mask, batch, q_len, seq, training, first_apart)
            return tf.reshape(y, [batch, q_len, self.hidden_size])
        context = self._self_attention(x_q, x, input_mask, batch, q_len, seq, training)
        attention = self.attention_output(context)  # [batch * q_len, hidden]
        x = self._add_norm(attention, x_q, self.attention_output_dropout,
                           self.attention_layer_norm, training)
        hidden = self._activate(self.intermediate(x), training)  # [batch * q_len, intermediate]
        y = self._add_norm(self.output_dense(hidden), x, self.output_dropout,
                           self.output_layer_norm, training)
        return tf.reshape(y, [batch, q_len, self.hidden_size])

    def _int8_rest(self, x_q, x, input_mask, batch, q_len, seq, training, first_apart):
        # The block at inference on the int8 kernel (dropout is the identity): the residual
        # sums and the activation run inside the kernel, LayerNorm follows in float32.
        context = self._self_attention(x_q, x, input_mask, batch, q_len, seq, training,
                                       use_int8=True)
        x = self.attention_output.int8_matmul(context, addend=x_q)
        limit = self._int8_split_rows()
        if not limit:
            x = self._norm(self.attention_layer_norm, x, training)
            return self._norm(self.output_layer_norm, self._int8_feed_forward(
                x, batch, q_len, first_apart, self._int8_feed_forward_rows), training)
        # A small model: up to `limit` rows (batch 1) the feed-forward layers in two halves
        # side by side, where the kernel runs single-threaded; more rows with the first
        # position apart. The cond's branches read no variable: in a serving export with
        # constants the weights are made inside each branch, and one cond holds the
        # LayerNorms too (their separate ops, or one fused kernel each); elsewhere the
        # variables are read before it (a branch that reads one makes TensorFlow's loop
        # optimizer warn).
        arrays = self._int8_feed_forward_arrays()

        def feed_forward(parts):
            weights = self._int8_feed_forward_weights(arrays, parts)  # once per branch
            return lambda t: self._int8_feed_forward_parts(t, weights)

        if serving_graph.bound() is not None and serving_graph.bound() <= limit:
            # A serving export's call of few tokens (`serving_graph.bounded`): the halves,
            # chosen at trace time, each LayerNorm's kernel too.
            y = self._norm(self.attention_layer_norm, x, training)
            return self._norm(self.output_layer_norm, feed_forward(2)(y), training)
        fits = tf.shape(x)[0] <= limit

        def many(y):
            return self._int8_feed_forward(y, batch, q_len, first_apart, feed_forward(1))

        if not (serving_graph.inference(training) and serving_graph.constants()):
            y = self._norm(self.attention_layer_norm, x, training)
            return self._norm(self.output_layer_norm, tf.cond(
                fits, lambda: feed_forward(2)(y), lambda: many(y)), training)

        def norms(large, feed):
            y = serving_graph.layer_norm(self.attention_layer_norm, x, large=large)
            return serving_graph.layer_norm(self.output_layer_norm, feed(y), large=large)

        # (below the fused LayerNorms' size, many rows take their own conds)
        large = True if limit == self._small_norm_rows() else None
        return tf.cond(fits, lambda: norms(False, feed_forward(2)), lambda: norms(large, many))

    def small_serving_tokens(self):
        """The most tokens (sequences x positions) of a call whose every choice by size in a
        serving export's graph takes its small side: the attention's kernels and the
        LayerNorms' (`serving_graph.small_width_tokens`), and where the int8 feed-forward
        layers run in halves, their limit. A serving export traces its calls of up to that
        many tokens without those conds (`serving_graph.small_tokens`). None where the int8
        feed-forward layers do not run in halves: a float32 block's conds cost no
        measurable time beside its matmuls, and a large int8 block's copy would add half
        the export's size for a few percent."""
        limit = self._int8(False) and self._int8_split_rows()
        if not limit:
            return None
        return min(serving_graph.small_width_tokens(self.hidden_size), limit)

    def _small_norm_rows(self):
        # The most rows whose LayerNorm a serving export runs as separate ops.
        return (serving_graph.LARGE_LAYER_NORM - 1) // self.hidden_size

    def _int8_split_rows(self):
        # The most rows whose feed-forward layers run in halves (`_int8_feed_forward_parts`),
        # 0 for none: both layers int8 without LoRA, the activation on the kernel, and an
        # intermediate kernel that runs on one thread (int8.SINGLE_THREAD_BYTES); at most
        # the rows whose LayerNorms a serving export runs as separate ops.
        layers = (self.intermediate, self.output_dense)
        if not (self.hidden_act in int8.ACTIVATIONS and all(
                layer.quantization_mode == "int8" and not layer.lora_enabled
                and layer.use_bias and layer.activation in (None, keras.activations.linear)
                for layer in layers)):
            return 0
        k, n = self.intermediate._kernel.shape
        if n % 2 or k * n >= int8.SINGLE_THREAD_BYTES:
            return 0
        return min((int8.SINGLE_THREAD_BYTES - k * n) // (k + n), self._small_norm_rows())

    def _int8_feed_forward_arrays(self):
        # The feed-forward layers' int8 weights: (kernel, scale, bias, column sums) of the
        # intermediate layer, then of the output layer. NumPy arrays where a serving export
        # allows constants (`_int8_feed_forward_weights` makes them where it is called), else
        # the variables' values, read here.
        variables = [v for layer in (self.intermediate, self.output_dense) for v in (
            layer._kernel, layer.kernel_scale, layer.bias, layer.kernel_column_sums)]
        if serving_graph.constants():
            return [serving_graph.value(v) for v in variables]
        return [tf.convert_to_tensor(v) for v in variables]

    def _int8_feed_forward_weights(self, arrays, parts):
        # `_int8_feed_forward_arrays` in `parts` parts (`_int8_feed_forward_parts`):
        # ([(kernel, kernel range, bias, sums) of each part's intermediate columns], [(kernel,
        # sums) of its output rows], output kernel range, output bias), the ranges
        # `int8.kernel_range`'s; NumPy arrays made tensors here (`serving_graph.tensor`).
        k1, s1, b1, sums1, k2, s2, b2, sums2 = arrays
        constant = isinstance(k1, np.ndarray)
        if parts == 1:
            columns, rows = [(k1, s1, b1, sums1)], [(k2, sums2)]
        else:
            n = k1.shape[1]
            cuts = [slice(i * n // parts, (i + 1) * n // parts) for i in range(parts)]
            columns = [(k1[:, cut], s1[cut], b1[cut], sums1[cut]) for cut in cuts]
            if constant:  # int8.column_sums in NumPy: the integer sums are exact in float32
                rows = [(k2[cut], k2[cut].astype(np.float32).sum(axis=0) / s2) for cut in cuts]
            else:
                rows = [(k2[cut], int8.column_sums(k2[cut], s2)) for cut in cuts]
        columns = [(k, int8.kernel_range(s), b, sums) for k, s, b, sums in columns]
        weights = columns, rows, int8.kernel_range(s2), b2
        return tf.nest.map_structure(serving_graph.tensor, weights) if constant else weights

    def _int8_feed_forward_parts(self, x, weights):
        # x + output(activation(intermediate(x))) for float32 x [rows, hidden] on the int8
        # kernel (`_int8_split_rows` positive) with `_int8_feed_forward_weights` in parts:
        # the intermediate layer's columns and the output layer's rows in parts side by
        # side, each part of the activations quantized with its own range, the parts'
        # outputs summed. One part is what the layers' calls compute.
        columns, rows, kernel_range, bias = weights
        quantized = int8.quantize(x)
        outputs = []
        for i, ((k1, r1, b1, sums1), (k2, sums2)) in enumerate(zip(columns, rows)):
            hidden = int8.matmul(quantized, k1, None, sums1, bias=b1,
                                 activation=self.hidden_act, kernel_range=r1)
            # The first part carries the bias and the residual.
            outputs.append(int8.matmul(
                int8.quantize(hidden, low=int8.ACTIVATION_LOW[self.hidden_act]), k2, None,
                sums2, bias=bias if i == 0 else None, addend=x if i == 0 else None,
                kernel_range=kernel_range))
        return tf.add_n(outputs)

    def _norm(self, norm, x, training):
        # LayerNorm of [rows, hidden] float32: in a serving export's graph, large ones as one
        # fused kernel (the same math).
        if serving_graph.inference(training):
            return serving_graph.layer_norm(norm, x)
        return norm(x)

    def _int8_feed_forward(self, x, batch, q_len, first_apart, feed_forward):
        # x + output(activation(intermediate(x))) on the int8 kernel, before LayerNorm, for
        # x [batch * q_len, hidden] by feed_forward (of rows), the first position's rows apart
        # (first_apart).
        if not first_apart:
            return feed_forward(x)
        # The first position ([CLS]) carries activations several times larger than the other
        # tokens' at the feed-forward layers (up to ~6x in all-MiniLM-L6-v2): one range for
        # all rows would leave the others a fraction of the 256 steps. Its rows go through
        # apart, each part with its own range.
        x = tf.reshape(x, [batch, q_len, self.hidden_size])
        first = feed_forward(tf.reshape(x[:, :1], [batch, self.hidden_size]))
        rest = feed_forward(tf.reshape(x[:, 1:], [-1, self.hidden_size]))
        y = tf.concat([first[:, tf.newaxis], tf.reshape(rest, [batch, -1, self.hidden_size])],
                      axis=1)
        return tf.reshape(y, [-1, self.hidden_size])

    def _int8_feed_forward_rows(self, x):
        if self.hidden_act in int8.ACTIVATIONS:
            hidden = self.intermediate.int8_matmul(x, activation=self.hidden_act)
            # The activation's least value bounds its range from below: fewer ops per call.
            return self.output_dense.int8_matmul(
                hidden, addend=x, low=int8.ACTIVATION_LOW[self.hidden_act])
        hidden = self.intermediate.int8_matmul(x)
        hidden = hidden if self._activation is None else self._activation(hidden)
        return self.output_dense.int8_matmul(hidden, addend=x)

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
