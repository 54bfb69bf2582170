import numpy as np
import pytest
import tensorflow as tf

import keras_bert  # noqa: F401  (selects the TensorFlow backend)
import keras
from keras_bert.layers.layer_norm import layer_norm_float32


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
@pytest.mark.parametrize("jit_compile", [False, True])
def test_matches_keras_layer_norm_in_float32(dtype, jit_compile):
    rng = np.random.default_rng(0)
    x = (rng.normal(size=(6, 5, 32)) * 3 + 1).astype("float32")
    norm = keras.layers.LayerNormalization(epsilon=1e-12)
    norm.build(x.shape)
    norm.gamma.assign(rng.normal(size=32).astype("float32"))
    norm.beta.assign(rng.normal(size=32).astype("float32"))
    half = tf.cast(x, dtype)
    got = tf.function(lambda t: layer_norm_float32(t, norm), jit_compile=jit_compile)(half)
    assert got.dtype == tf.float32
    # Reference: Keras on the same (rounded) input, in float32.
    want = norm(tf.cast(half, tf.float32)).numpy()
    np.testing.assert_allclose(got.numpy(), want, atol=2e-5, rtol=0)
