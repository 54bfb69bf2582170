"""The inference graph a serving export traces: what the layers do differently when a call
is traced for a SavedModel whose weights never change.

A served BERT runs its graph op by op, and at batch 1 its time goes less to arithmetic than
to the fixed cost of each op. In a profile of the demo classifier (all-MiniLM-L6-v2, int8,
about 30 tokens, one thread), oneDNN's transposes of the attention heads cost 0.1-0.7 ms
each, four per layer (oneDNN builds a reorder for each call); the same data movement written
as a one-operand ``tf.einsum`` runs on TensorFlow's own transpose in ~5 us. Inside
`building`, layers trace their inference calls for such an export:

* the attention heads move with ``tf.einsum`` (`heads_first`, `heads_last`) instead of
  ``tf.transpose``: the same values; projections computed side by side move together and
  split along the first axis, without a copy (`split_heads`);
* with ``constants=True`` (weights read once, at trace time), query, key and value run as
  one matmul on a kernel concatenated from the three layers' weights (`fused_projection`),
  then split: float32 sums in another order (within float32 rounding), int8 exactly the
  three kernels' arithmetic, per column; the attention's scale is folded into the queries'
  weights. What is computed so becomes a constant of the graph, or with ``variables=[...]``
  (what a serving export does) a new variable when it is large (`tensor`);
* the conds that choose kernels by size (`attention`, `layer_norm`) take few tensors: each
  costs a few nodes per call;
* int8 kernels keep their reordered weights between calls (`int8.constant_weights`);
* large LayerNorms run as one fused kernel (`layer_norm`): TensorFlow's oneDNN graph rewrite
  turns a batch norm over rows into its layer-norm kernel, 2-4x faster than the mean,
  variance and scaling ops from a few hundred rows on (slower below: the cond picks).
  A block whose int8 feed-forward layers run in halves at few rows (`TransformerBlock`)
  picks both its LayerNorms' kernels in the same cond (``layer_norm(..., large=...)``);
* a call known to be small (`bounded`: a serving export's cond around its calls of few
  tokens, `small_tokens`) traces the small side of each of those choices with no cond at
  all: at batch 1 a cond's own nodes cost more than the choice gains.

Outside `building`, layers trace and run as they always do (training, ``predict``, LiteRT).

>>> import numpy as np, tensorflow as tf
>>> from keras_bert.layers import TransformerBlock, serving_graph
>>> block = TransformerBlock(hidden_size=16, num_attention_heads=4, intermediate_size=32)
>>> x = np.random.default_rng(0).normal(size=(2, 5, 16)).astype("float32")
>>> mask = np.ones((2, 5), "int32")
>>> want = block((x, mask)).numpy()
>>> with serving_graph.building():
...     serve = tf.function(lambda x, m: block((x, m), training=False)).get_concrete_function(
...         tf.TensorSpec([None, None, 16]), tf.TensorSpec([None, None], tf.int32))
>>> ops = {op.type for op in serve.graph.get_operations()}
>>> "Transpose" in ops, "Einsum" in ops
(False, True)
>>> bool(np.abs(serve(x, mask).numpy() - want).max() < 1e-5)
True
"""

import contextlib
import functools
import hashlib
import math

import keras
import numpy as np
import tensorflow as tf

from keras_bert.layers import int8

# Read when a call is traced (see `building`): None outside it, else whether weights may be
# read as constants.
_STATE = None
# Read when a call is traced (see `bounded`): None, or the most tokens of the traced call.
_TOKENS = None
# Inside `building`: what `constant` made, by graph and variable.
_CONSTANTS = {}
# Inside `building(variables=...)`: that list, and the variables `tensor` made, by content.
_STORE = None
_STORED = {}


@contextlib.contextmanager
def building(constants=True, variables=None):
    """Layer calls traced inside the block build the serving inference graph (see the module
    docstring). ``constants``: weights may be read once, at trace time, into constants (a
    graph traced so keeps the weights it saw).

    ``variables``, a list (with ``constants``): what is read at trace time and takes more
    than `SMALL_WEIGHT_BYTES` stays in variables instead of constants: the weights the layers
    compute from theirs (the concatenated kernels of `fused_projection`, an int8 block's
    feed-forward halves) become new non-trainable variables, appended to the list (one per
    distinct value), and a layer's own weights are read from its variables. An export saves
    those with its graph: the computation of a graph with constants, and the memory of one
    with variables where it is loaded (TensorFlow's loaders copy a graph's constants several
    times)."""
    global _STATE, _CONSTANTS, _STORE, _STORED
    if variables is not None and not constants:
        raise ValueError("building(variables=...) keeps what is read at trace time: it "
                         "needs constants=True")
    previous, _STATE = (_STATE, _CONSTANTS, _STORE, _STORED), bool(constants)
    _CONSTANTS, _STORE, _STORED = {}, variables, {}
    try:
        with int8.constant_weights():
            yield
    finally:
        _STATE, _CONSTANTS, _STORE, _STORED = previous


@contextlib.contextmanager
def bounded(tokens):
    """Layer calls traced inside the block (and inside `building`) take at most ``tokens``
    tokens (rows of ``[tokens, hidden]``; the caller's cond sees to it): the choices by size
    that this bound decides (`attention`, `layer_norm`, a block's int8 feed-forward halves)
    are made at trace time, without a cond. ``tokens`` from `small_tokens` decides them
    all."""
    global _TOKENS
    previous, _TOKENS = _TOKENS, int(tokens)
    try:
        yield
    finally:
        _TOKENS = previous


def bound():
    """The most tokens of the call being traced (`bounded`), or None when not known."""
    return _TOKENS if active() else None


def small_tokens(model):
    """The most tokens (sequences x positions) of a call of ``model`` whose every choice by
    size in its serving graph takes the small side: the least of its layers'
    ``small_serving_tokens()`` (`TransformerBlock`), or None when none of them tells or one
    says None (a graph of its own would not pay). A serving export traces its calls up to
    that many tokens (`bounded`) beside the general graph."""
    limits = [layer.small_serving_tokens() for layer in model._flatten_layers()
              if hasattr(layer, "small_serving_tokens")]
    return None if not limits or None in limits else min(limits)


def small_width_tokens(width):
    """The most tokens whose attention (``width`` = heads x head size) and LayerNorms of
    ``width`` numbers per row all take the small side: the attention's products of ``n``
    tokens are at most ``n * n * width`` multiply-adds (`SMALL_ATTENTION`), the LayerNorms
    ``n * width`` numbers (`LARGE_LAYER_NORM`)."""
    return min(math.isqrt(SMALL_ATTENTION // width), (LARGE_LAYER_NORM - 1) // width)


def active():
    """Whether calls are being traced for the serving inference graph (inside `building`)."""
    return _STATE is not None


def inference(training):
    """Whether a call with this ``training`` argument is traced for the serving graph: inside
    `building`, and ``training`` None or False."""
    return active() and (training is None or (isinstance(training, bool) and not training))


def constants():
    """Whether calls being traced may read weights as constants (``building(constants=True)``)."""
    return bool(_STATE)


def heads_first(x):
    """``[batch, seq, heads, size]`` -> ``[batch, heads, seq, size]`` (``tf.transpose`` with
    ``[0, 2, 1, 3]``, as a one-operand einsum)."""
    return tf.einsum("bshd->bhsd", x)


def split_heads(x, batch, seq, groups, heads):
    """``x`` ``[batch * seq, groups * heads * size]`` (``groups`` projections side by side)
    -> ``groups`` tensors ``[batch, heads, seq, size]``: one move of the heads for all the
    groups (as `heads_first`), then a split along the first axis, which TensorFlow does
    without copying (``tf.split`` along the heads axis copies every group)."""
    size = x.shape[-1] // (groups * heads) if x.shape[-1] is not None else -1  # kept static
    x = tf.reshape(x, [batch, seq, groups, heads, size])
    return tf.unstack(tf.einsum("bsghd->gbhsd", x), num=groups, axis=0)


def heads_last(x):
    """``[batch, heads, seq, size]`` -> ``[batch, seq, heads, size]``."""
    return tf.einsum("bhsd->bshd", x)


def value(variable):
    """A variable's current value as a numpy array, read eagerly even while tracing, in the
    dtype it is stored in (not a mixed-precision layer's compute dtype)."""
    with tf.init_scope(), _stored_dtype():
        return np.asarray(variable.numpy() if hasattr(variable, "numpy") else variable)


def _stored_dtype():
    # Inside a mixed-precision layer's call, Keras reads its float variables in the compute
    # dtype (autocast): reads in this block see the stored values.
    from keras.src.backend.common.variables import AutocastScope  # (no public name)
    return AutocastScope(None)


def constant(variable):
    """``variable``'s value as a constant of the graph being traced (`constants` must hold),
    made once per graph: each branch of a cond is a graph of its own and makes its own (a
    cond takes no tensor for it), calls in the same graph share it. With
    ``building(variables=...)``, a ``variable`` of more than `SMALL_WEIGHT_BYTES` is read
    as it is instead."""
    if _STORE is not None and _nbytes(variable) > SMALL_WEIGHT_BYTES:
        with _stored_dtype():
            return tf.convert_to_tensor(variable)
    graph = tf.compat.v1.get_default_graph()
    key = (id(graph), id(variable))
    if key not in _CONSTANTS:  # (the graph and variable kept: their ids stay theirs)
        _CONSTANTS[key] = graph, variable, tf.constant(value(variable))
    return _CONSTANTS[key][2]


# With ``building(variables=...)``, weights of at most this many bytes (biases, scales,
# LayerNorms' factors) are still constants: tens of KB in all, which TensorFlow folds into
# the ops that use them (each variable read is an op or two in each call).
SMALL_WEIGHT_BYTES = 1 << 16


def _nbytes(variable):
    return int(np.prod(variable.shape)) * _dtype(variable).size


def _dtype(variable):
    with _stored_dtype():
        return tf.as_dtype(variable.dtype)


def tensor(array):
    """The NumPy ``array`` (computed at trace time from weights; `constants` must hold) as a
    tensor of the graph being traced: a constant, or with ``building(variables=...)`` a read
    of a non-trainable variable holding it, made once for each distinct value."""
    array = np.asarray(array)
    if _STORE is None or array.nbytes <= SMALL_WEIGHT_BYTES:
        return tf.constant(array)
    key = (array.dtype.str, array.shape, hashlib.sha256(array.tobytes()).digest())
    if key not in _STORED:
        with tf.init_scope():
            _STORED[key] = tf.Variable(array, trainable=False, name="serving_weight")
        _STORE.append(_STORED[key])
    return tf.convert_to_tensor(_STORED[key])


def weight(variable, dtype=None):
    """``variable``'s value for the graph being traced (`constants` must hold) in ``dtype``
    (default: its own): as `constant` gives it, or, in another dtype (a mixed-precision
    layer's compute dtype), cast once at trace time (`tensor`) rather than in every call."""
    dtype = tf.as_dtype(dtype or _dtype(variable))
    if dtype == _dtype(variable):
        return constant(variable)
    return tensor(value(variable).astype(dtype.as_numpy_dtype))


def fusable(layers, use_int8):
    """Whether the Dense ``layers`` (same input) can run as one matmul: constants allowed, no
    LoRA, the same activation (none), and all on the int8 kernel or none."""
    if not constants():
        return False
    return all(not layer.lora_enabled and layer.use_bias
               and layer.activation in (None, keras.activations.linear)
               and bool(use_int8) == (layer.quantization_mode == "int8") for layer in layers)


def fused_projection(layers, x, first_scale=1.0):
    """The Dense ``layers``' outputs side by side, ``[rows, sum of units]``, from one matmul
    of ``x`` (``[rows, in]`` float, or an `int8.Quantized` activation for int8 layers) by
    their kernels concatenated at trace time (`fusable` must hold). ``first_scale``
    multiplies the first layer's outputs, folded into its weights and bias (e.g. the
    attention's ``1 / sqrt(head_size)`` into the queries)."""
    scales = [np.full([layer.units], first_scale if i == 0 else 1.0, np.float32)
              for i, layer in enumerate(layers)]
    scales = np.concatenate(scales)
    bias = tensor(np.concatenate([value(layer.bias) for layer in layers]) * scales)
    kernel = np.concatenate([value(layer._kernel) for layer in layers], axis=1)
    if isinstance(x, int8.Quantized):
        # The int8 kernel stays; its columns' scales carry the factor.
        kernel_scale = np.concatenate([value(layer.kernel_scale) for layer in layers]) / scales
        sums = np.concatenate([value(layer.kernel_column_sums) for layer in layers]) * scales
        return int8.matmul(x, tensor(kernel), None, tensor(sums), bias=bias,
                           kernel_range=tensor(int8.kernel_range(kernel_scale)))
    # (in the compute dtype at trace time: a mixed-precision call casts nothing)
    kernel = tensor((kernel * scales).astype(x.dtype.as_numpy_dtype))
    return tf.nn.bias_add(tf.matmul(x, kernel), tf.cast(bias, x.dtype))


# Attention products up to this many multiply-adds (batch * heads * q_len * seq * head_size,
# per product) run on TensorFlow's own kernels, larger ones on oneDNN's. A oneDNN batched
# matmul or softmax costs ~0.07 ms per call even on a few thousand numbers (on a 2-core CPU:
# 0.23 ms for one head group's attention at 16 tokens, where TensorFlow's kernels take
# 0.03 ms); TensorFlow's grow faster with the size (even at ~48 tokens of 12 heads of 32).
SMALL_ATTENTION = 1 << 20


def attention(q, k, v, bias, scale):
    """``softmax(q @ k^T * scale + bias) @ v`` for float32 ``q`` ``[batch, heads, q_len,
    size]``, ``k``, ``v`` ``[batch, heads, seq, size]`` and ``bias`` broadcast to the scores
    ``[batch, heads, q_len, seq]``: on TensorFlow's own kernels when the products are small
    (`SMALL_ATTENTION`), on oneDNN's (TensorFlow's x86 default) otherwise. The same math,
    within float32 rounding. ``scale`` 1.0 (a Python float): no multiplication."""
    def scaled(scores):  # as the block's own attention scales them
        return scores * scale if scale != 1.0 else scores

    # q, k and v unstacked from one tensor (`split_heads`) enter the cond as that tensor:
    # each tensor a cond takes costs a few nodes per call.
    source = q.op.inputs[0] if (q.op is k.op is v.op and q.op.type == "Unpack"
                                and [t.value_index for t in (q, k, v)] == [0, 1, 2]
                                and q.op.get_attr("num") == 3) else None

    def unpacked():
        return (q, k, v) if source is None else tf.unstack(source, num=3, axis=0)

    def small():  # BatchMatMulV3 and softmax's ops, which oneDNN's graph rewrite leaves alone
        q, k, v = unpacked()
        scores = scaled(tf.raw_ops.BatchMatMulV3(x=q, y=k, Tout=q.dtype, adj_y=True)) + bias
        e = tf.exp(scores - tf.reduce_max(scores, axis=-1, keepdims=True))
        probs = e / tf.reduce_sum(e, axis=-1, keepdims=True)
        return tf.raw_ops.BatchMatMulV3(x=probs, y=v, Tout=q.dtype)

    def large():  # oneDNN's fused matmul * scale + bias, softmax, matmul
        q, k, v = unpacked()
        scores = scaled(tf.matmul(q, k, transpose_b=True)) + bias
        return tf.matmul(tf.nn.softmax(scores, axis=-1), v)

    # A call of at most n tokens (`bounded`): sequences x queries <= n and keys <= n.
    n, heads, size = bound(), q.shape[1], q.shape[3]
    if n is not None and heads and size and n * n * heads * size <= SMALL_ATTENTION:
        return small()
    return tf.cond(small_attention(q, k), small, large)


def small_attention(q, k):
    """Whether `attention` of queries ``q`` and keys ``k`` takes TensorFlow's own kernels: a
    bool tensor, true when ``batch * heads * q_len * seq * size <= SMALL_ATTENTION``."""
    work = tf.reduce_prod(tf.shape(q, out_type=tf.int64)) * tf.shape(k, out_type=tf.int64)[2]
    return work <= SMALL_ATTENTION


# LayerNorms of at least this many numbers (rows * hidden) run as oneDNN's fused layer norm,
# smaller ones as separate ops. Per call on a 2-core CPU, hidden 384: the separate ops take
# 13-31 us up to 100 rows, then 156 us at 200, 387 at 800, 642 at 1,600; the fused kernel
# 110-135 us up to 200 rows, 166 at 800, 224 at 1,600 (hidden 768: 160 against 96 us at 100
# rows, 1,128 against 316 at 1,600).
LARGE_LAYER_NORM = 1 << 16


def layer_norm(norm, x, large=None):
    """``norm(x)`` for a Keras ``LayerNormalization`` ``norm`` over the last axis of the 2-D
    float32 ``x`` ``[rows, hidden]``, on a TensorFlow with oneDNN (`onednn`; elsewhere the
    layer's call): as ``norm`` computes it for fewer than
    `LARGE_LAYER_NORM` numbers, else as a batch norm whose channels are the rows
    (``FusedBatchNormV3`` on ``[1, rows, hidden, 1]``, NCHW), scaled and shifted after: the
    pattern TensorFlow's oneDNN graph rewrite fuses into one layer-norm kernel (Keras 2's
    own fused LayerNormalization). The same math, within float32 rounding; ``norm``'s
    epsilon as it is (``tf.nn.fused_batch_norm`` would raise it to 1.001e-5). ``large``:
    None to pick by size in a cond (at trace time where `bounded` decides it), or True /
    False for the fused / separate ops (for a caller whose own cond knows the size)."""
    if not (onednn() and x.dtype == tf.float32 and x.shape.rank == 2 and x.shape[-1] is not None
            and norm.compute_dtype == "float32"
            and _last_axis(norm) and norm.center and norm.scale
            and not getattr(norm, "rms_scaling", False)):
        return norm(x)
    hidden = x.shape[-1]
    # Constants made inside each branch (`constant`: a tensor a cond takes costs a few nodes
    # per call); else one read of each variable, used by either branch.
    read = None if constants() else (tf.convert_to_tensor(norm.gamma),
                                     tf.convert_to_tensor(norm.beta))

    def weights():
        return read or (constant(norm.gamma), constant(norm.beta))

    def fused():
        gamma, beta = weights()
        rows = tf.shape(x)[0]
        y, *_ = tf.raw_ops.FusedBatchNormV3(
            x=tf.reshape(x, [1, rows, hidden, 1]), scale=tf.ones([rows]),
            offset=tf.zeros([rows]), mean=tf.zeros([0]), variance=tf.zeros([0]),
            epsilon=norm.epsilon, data_format="NCHW", is_training=True)
        return tf.reshape(y, [rows, hidden]) * gamma + beta

    def separate():  # what the layer's call computes
        gamma, beta = weights()
        return keras.ops.layer_normalization(x, gamma, beta, -1, norm.epsilon)

    if large is None and bound() is not None and bound() * hidden < LARGE_LAYER_NORM:
        large = False  # at most bound() rows (`bounded`)
    if large is None:
        return tf.cond(tf.size(x) >= LARGE_LAYER_NORM, fused, separate)
    return fused() if large else separate()


@functools.lru_cache(maxsize=None)
def onednn():
    """Whether this TensorFlow runs oneDNN's graph rewrites (its x86 builds by default; not
    with ``TF_ENABLE_ONEDNN_OPTS=0``, nor the Linux aarch64 and macOS builds). Without them a
    large `layer_norm` stays the layer's own ops: TensorFlow's own ``FusedBatchNormV3`` over
    rows takes about twice their time (hidden 384, 800 rows: 748 against 396 us)."""
    try:
        from tensorflow.python.util import _pywrap_util_port
        return bool(_pywrap_util_port.IsMklEnabled())
    except (ImportError, AttributeError):  # a TensorFlow without the query: no oneDNN known
        return False


def _last_axis(norm):
    # Whether the LayerNormalization ``norm`` normalizes the last axis only (Keras' default,
    # axis=-1, what every keras_bert layer builds).
    axes = list(norm.axis) if isinstance(norm.axis, (list, tuple)) else [norm.axis]
    return axes == [-1]
