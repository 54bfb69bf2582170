"""LayerNorm computed in float32 from a Keras `LayerNormalization` layer's weights."""

import tensorflow as tf


def layer_norm_float32(x, norm):
    """Normalizes the last axis of ``x`` in float32 with ``norm``'s gamma, beta and epsilon.

    ``beta + (x - mean) * gamma / sqrt(variance + epsilon)``, the math of Keras'
    LayerNormalization, but always in float32 whatever the dtype of ``x``, so that
    mixed-precision models keep their statistics exact. Returns float32.

    The ops are written in the order that TensorFlow's oneDNN graph rewrite recognises as a
    layer norm (its "custom layer-norm" pattern), which it may replace by one fused kernel.
    """
    x = tf.cast(x, tf.float32)
    gamma = tf.cast(norm.gamma, tf.float32)
    beta = tf.cast(norm.beta, tf.float32)
    mean = tf.reduce_mean(x, axis=-1, keepdims=True)
    variance = tf.reduce_mean(tf.square(x - mean), axis=-1, keepdims=True)
    return beta + (x - mean) * (tf.math.rsqrt(variance + norm.epsilon) * gamma)
