import math

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.layers import activations

_X = np.linspace(-6.0, 6.0, 241).astype("float32")


def test_gelu_is_exact_erf_form():
    want = np.array([0.5 * x * (1.0 + math.erf(x / math.sqrt(2.0))) for x in _X.astype("float64")])
    np.testing.assert_allclose(activations.gelu(tf.constant(_X)).numpy(), want, atol=1e-6)
    np.testing.assert_allclose(tf.nn.gelu(_X, approximate=False).numpy(), want, atol=1e-6)


def test_gelu_tanh_is_googles_approximation():
    x = _X.astype("float64")
    want = 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))
    np.testing.assert_allclose(activations.gelu_tanh(tf.constant(_X)).numpy(), want, atol=1e-6)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_half_precision_stays_finite_and_close(dtype):
    for name in ("gelu", "gelu_tanh"):
        fn = activations.get(name)
        half = fn(tf.cast(_X, dtype)).numpy().astype("float32")
        assert np.isfinite(half).all()
        np.testing.assert_allclose(half, fn(tf.constant(_X)).numpy(), atol=0.05, rtol=0.02)


def test_get_by_config_name():
    assert activations.get("linear") is None
    assert activations.get("relu") is tf.nn.relu
    with pytest.raises(ValueError, match="Unknown activation 'swish'"):
        activations.get("swish")
