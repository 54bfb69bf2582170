"""LayerNorm computed in float32 from a Keras `LayerNormalization` layer's weights."""

import tensorflow as tf


def layer_norm_float32(x, norm):
    """Normalizes the last axis of ``x`` in float32 with ``norm``'s gamma, beta and epsilon.

    The same formula as Keras' LayerNormalization (``x * inv + (beta - mean * inv)`` with
    ``inv = gamma / sqrt(variance + epsilon)``), but always in float32 whatever the dtype of
    ``x``, so that mixed-precision models keep their statistics exact. Returns float32.
    """
    x = tf.cast(x, tf.float32)
    mean, variance = tf.nn.moments(x, axes=[-1], keepdims=True)
    inv = tf.math.rsqrt(variance + norm.epsilon) * tf.cast(norm.gamma, tf.float32)
    return x * inv + (tf.cast(norm.beta, tf.float32) - mean * inv)
