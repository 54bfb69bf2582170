"""Activation functions by the names `BertConfig.hidden_act` uses."""

import math

import tensorflow as tf


def gelu(x):
    """Exact GELU: ``x * Phi(x)`` with the Gaussian CDF written with erf."""
    return 0.5 * x * (1.0 + tf.math.erf(x / tf.cast(math.sqrt(2.0), x.dtype)))


def gelu_tanh(x):
    """The tanh approximation of GELU that Google's ``modeling.py`` computes."""
    c = tf.cast(math.sqrt(2.0 / math.pi), x.dtype)
    return 0.5 * x * (1.0 + tf.tanh(c * (x + 0.044715 * x * x * x)))


def get(name):
    """The activation function for a `BertConfig.hidden_act` name."""
    table = {
        "gelu": gelu,
        "gelu_tanh": gelu_tanh,
        "relu": tf.nn.relu,
        "tanh": tf.tanh,
        "silu": tf.nn.silu,
        "linear": None,
    }
    if name not in table:
        raise ValueError(f"Unknown activation {name!r}; expected one of {sorted(table)}.")
    return table[name]
