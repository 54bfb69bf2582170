"""Training-time fused kernels of the transformer block.

In a training step the matmuls run in TensorFlow's oneDNN kernels, near the CPU's peak, and
what is left is a chain of element-wise ops between them: dropout's random numbers,
compares and selects, the residual sum, LayerNorm and its gradient, GELU and its gradient,
softmax and its gradient. Run op by op, each of those reads and writes the whole activation
again (and the autodiff gradients of LayerNorm and GELU are a dozen ops each). Here each
chain, forward and backward, is one small XLA-compiled function (``jit_compile=True``)
between the matmuls, with its gradient written out (``tf.custom_gradient``); the matmuls
stay outside XLA, whose CPU matmuls are slower than oneDNN's.

Dropout's random bits come from TensorFlow's stateless Philox kernel (XLA's random numbers
are slow on CPU): 16 bits per element, drawn from the Keras ``Dropout`` layer's own
``SeedGenerator``, so seeding, checkpointing and resuming follow that layer. An element is
kept when its bits are at least ``round(rate * 65536)`` (the rate is exact to 1/65536) and
scaled by ``1 / (1 - rate)``, as Keras does.

The math is that of the unfused block (LayerNorm, softmax and GELU in float32; results in
the compute dtype). `TransformerBlock` uses these only while training (``training=True``):
inference keeps the plain ops, which TensorFlow's graph rewrite fuses with the matmuls.
Set ``ENABLED = False`` to train with the plain ops instead (it acts when a step is traced:
a ``tf.function`` already traced keeps the path it was traced with).
"""

import math

import tensorflow as tf

# The block's training path uses the fused functions when True (tests compare both paths).
ENABLED = True

_BITS = 65536  # dropout resolution: 16 random bits per element


def keep_bits(dropout, shape):
    """16 random bits per element of ``shape`` for a Keras ``Dropout`` layer (uint16).

    The seed is the layer's ``seed_generator.next()``, as ``keras.layers.Dropout`` draws it.
    """
    seed = tf.cast(dropout.seed_generator.next(), tf.int32)
    size = tf.reduce_prod(shape)
    words = tf.random.stateless_uniform(
        [(size + 1) // 2], seed=seed, minval=None, maxval=None, dtype=tf.uint32
    )
    bits = tf.reshape(tf.bitcast(words, tf.uint16), [-1])[:size]
    return tf.reshape(bits, shape)


def _dropout_params(dropout, training):
    """(threshold, scale) of an active dropout, or None when it drops nothing."""
    rate = float(dropout.rate) if training else 0.0
    if rate <= 0.0:
        return None
    threshold = int(round(rate * _BITS))
    if threshold <= 0:
        return None
    if threshold >= _BITS:
        return (_BITS, 0.0)  # rate 1: everything dropped
    return (threshold, 1.0 / (1.0 - rate))


def _apply_keep(x, bits, params):
    """``x`` where the bits keep it, scaled; 0 elsewhere (float32 math)."""
    if params is None:
        return x
    threshold, scale = params
    if threshold >= _BITS:
        return tf.zeros_like(x)
    keep = bits >= tf.constant(threshold, tf.uint16)
    return tf.where(keep, x * scale, tf.zeros((), x.dtype))


# --- dropout, residual sum and LayerNorm ----------------------------------------------------


@tf.function(jit_compile=True, autograph=False, reduce_retracing=True)
def _add_norm_forward(branch, residual, bits, gamma, beta, params, epsilon):
    h = tf.cast(residual, tf.float32) + _apply_keep(tf.cast(branch, tf.float32), bits, params)
    centered = h - tf.reduce_mean(h, axis=-1, keepdims=True)
    rstd = tf.math.rsqrt(tf.reduce_mean(tf.square(centered), axis=-1, keepdims=True) + epsilon)
    normed = centered * rstd
    return normed * gamma + beta, normed, rstd


@tf.function(jit_compile=True, autograph=False, reduce_retracing=True)
def _add_norm_backward(dy, normed, rstd, bits, gamma, params):
    dy = tf.cast(dy, tf.float32)
    reduce_axes = list(range(len(dy.shape) - 1))
    dgamma = tf.reduce_sum(dy * normed, axis=reduce_axes)
    dbeta = tf.reduce_sum(dy, axis=reduce_axes)
    g = dy * gamma
    dh = rstd * (
        g
        - tf.reduce_mean(g, axis=-1, keepdims=True)
        - normed * tf.reduce_mean(g * normed, axis=-1, keepdims=True)
    )
    return _apply_keep(dh, bits, params), dh, dgamma, dbeta


def dropout_add_layer_norm(branch, residual, dropout, norm, training):
    """``norm(residual + dropout(branch))`` in float32, as one fused kernel each way.

    Args:
        branch: the sublayer output that dropout applies to, any float dtype.
        residual: the block input added to it.
        dropout: the Keras ``Dropout`` layer (its rate and seed generator).
        norm: the Keras ``LayerNormalization`` layer (its gamma, beta and epsilon).
        training: dropout is active only when true.

    Returns:
        The normalised sum in float32 (the caller casts it).
    """
    params = _dropout_params(dropout, training)
    bits = keep_bits(dropout, tf.shape(branch)) if params is not None else None
    epsilon = float(norm.epsilon)
    branch_dtype, residual_dtype = branch.dtype, residual.dtype

    @tf.custom_gradient
    def fused(branch, residual, gamma, beta):
        y, normed, rstd = _add_norm_forward(branch, residual, bits, gamma, beta, params,
                                            epsilon)

        def grad(dy):
            dbranch, dresidual, dgamma, dbeta = _add_norm_backward(
                dy, normed, rstd, bits, gamma, params)
            return (tf.cast(dbranch, branch_dtype), tf.cast(dresidual, residual_dtype),
                    dgamma, dbeta)

        return y, grad

    gamma = tf.cast(norm.gamma, tf.float32)
    beta = tf.cast(norm.beta, tf.float32)
    return fused(branch, residual, gamma, beta)


# --- softmax and dropout of the attention probabilities --------------------------------------


@tf.function(jit_compile=True, autograph=False, reduce_retracing=True)
def _softmax_dropout_forward(scores, bits, params, out_dtype):
    probs = tf.nn.softmax(tf.cast(scores, tf.float32), axis=-1)
    # Dropout applies to the probabilities rounded to the compute dtype, as in the plain path.
    rounded = tf.cast(tf.cast(probs, out_dtype), tf.float32)
    return tf.cast(_apply_keep(rounded, bits, params), out_dtype), probs


@tf.function(jit_compile=True, autograph=False, reduce_retracing=True)
def _softmax_dropout_backward(dy, probs, bits, params):
    g = _apply_keep(tf.cast(dy, tf.float32), bits, params)
    return probs * (g - tf.reduce_sum(g * probs, axis=-1, keepdims=True))


def softmax_dropout(scores, dropout, training, dtype):
    """``dropout(softmax(scores))`` over the last axis, softmax in float32, result in
    ``dtype``; one fused kernel each way. ``scores`` is float32."""
    params = _dropout_params(dropout, training)
    bits = keep_bits(dropout, tf.shape(scores)) if params is not None else None
    dtype = tf.as_dtype(dtype)

    @tf.custom_gradient
    def fused(scores):
        y, probs = _softmax_dropout_forward(scores, bits, params, dtype)

        def grad(dy):
            return tf.cast(_softmax_dropout_backward(dy, probs, bits, params), scores.dtype)

        return y, grad

    return fused(scores)


# --- GELU -----------------------------------------------------------------------------------

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_TANH_COEFF = 0.044715


@tf.function(jit_compile=True, autograph=False, reduce_retracing=True)
def _gelu_forward(x, approximate):
    return tf.cast(tf.nn.gelu(tf.cast(x, tf.float32), approximate=approximate), x.dtype)


@tf.function(jit_compile=True, autograph=False, reduce_retracing=True)
def _gelu_backward(x, dy, approximate):
    x32 = tf.cast(x, tf.float32)
    if approximate:
        x2 = x32 * x32
        t = tf.tanh(_SQRT_2_OVER_PI * x32 * (1.0 + _TANH_COEFF * x2))
        slope = 0.5 * (1.0 + t) + 0.5 * x32 * (1.0 - t * t) * (
            _SQRT_2_OVER_PI * (1.0 + 3.0 * _TANH_COEFF * x2))
    else:
        cdf = 0.5 * (1.0 + tf.math.erf(x32 * (1.0 / math.sqrt(2.0))))
        pdf = tf.exp(-0.5 * x32 * x32) * (1.0 / math.sqrt(2.0 * math.pi))
        slope = cdf + x32 * pdf
    return tf.cast(tf.cast(dy, tf.float32) * slope, x.dtype)


def gelu(x, approximate):
    """GELU (``approximate``: the tanh form) computed in float32, with its gradient as one
    fused kernel; returns ``x``'s dtype."""

    @tf.custom_gradient
    def fused(x):
        y = _gelu_forward(x, approximate)

        def grad(dy):
            return _gelu_backward(x, dy, approximate)

        return y, grad

    return fused(x)
