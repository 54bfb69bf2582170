"""keras_bert/layers/int8.py: oneDNN's int8 kernel computes the integer arithmetic of dynamic
uint8 x int8 quantization exactly (to float32 rounding), close to the float matmul."""

import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

import keras_bert  # noqa: F401  (selects the TensorFlow backend)
from keras_bert.layers import int8

RNG = np.random.default_rng(0)
X = (RNG.normal(size=(40, 48)) + 0.4).astype("float32")
W = (RNG.normal(size=(48, 24)) * 0.1).astype("float32")
BIAS = RNG.normal(size=24).astype("float32")
RESIDUAL = RNG.normal(size=(40, 24)).astype("float32")
SCALE = (127 / np.abs(W).max(axis=0)).astype("float32")  # Keras' kernel_scale
KERNEL = np.round(W * SCALE).astype("int8")
SUMS = int8.column_sums(KERNEL, SCALE)


def _uint8(values):
    return np.frombuffer(values.numpy().tobytes(), np.uint8).reshape(values.shape)


def _exact(x, activation=None, addend=None):
    """The layer's output from the integer values `quantize` gives, in float64."""
    q = int8.quantize(x)
    dequantized = float(q.low) + float(q.width) / 255 * _uint8(q.values).astype(np.float64)
    y = dequantized @ (KERNEL.astype(np.float64) / SCALE) + BIAS
    if activation is not None:
        y = int8.activate(activation, tf.constant(y)).numpy()
    return y if addend is None else y + addend


def test_the_kernel_is_there():
    assert int8.available()  # TensorFlow's x86 build (oneDNN) on the test machines


def test_quantize_covers_the_range_with_zero_in_it():
    q = int8.quantize(X)
    assert q.values.dtype == tf.quint8
    values = _uint8(q.values)
    assert values.min() == 0 and values.max() == 255
    np.testing.assert_allclose(float(q.low), min(X.min(), 0.0), rtol=1e-6)
    np.testing.assert_allclose(float(q.width), X.max() - min(X.min(), 0.0), rtol=1e-6)
    step = float(q.width) / 255
    np.testing.assert_allclose(float(q.low) + step * values, X, atol=step / 2 * 1.001)
    positive = int8.quantize(np.abs(X) + 1)  # all above 1: the range still starts at 0
    assert float(positive.low) == 0.0
    assert _uint8(positive.values).min() >= np.floor(255 / float(positive.width))


def test_a_known_low_bounds_the_range():
    x = tf.nn.gelu(tf.constant(X * 3)).numpy()
    q = int8.quantize(x, low=int8.ACTIVATION_LOW["gelu"])
    # A Python float, as given: the kernel's offset (low * column sums) folds into a constant.
    assert q.low == int8.ACTIVATION_LOW["gelu"] and isinstance(q.low, float)
    np.testing.assert_allclose(float(q.width), x.max() - q.low, rtol=1e-6)
    step = float(q.width) / 255
    np.testing.assert_allclose(q.low + step * _uint8(q.values), x, atol=step / 2 * 1.001)
    y = int8.matmul(q, KERNEL, SCALE, SUMS, BIAS).numpy()
    want = (q.low + step * _uint8(q.values).astype(np.float64)) @ (KERNEL / SCALE) + BIAS
    np.testing.assert_allclose(y, want, atol=1e-5 * np.abs(want).max())
    below = int8.quantize([[-1.0, 0.5, 2.0]], low=-0.5)  # values below the bound clamp to it
    assert _uint8(below.values).tolist() == [[0, 102, 255]]  # 255 * 1.0 / 2.5
    assert int8.quantize([[1.0, 2.0]], low=0.5).low == 0.0  # the range still holds 0
    # Each bound holds for its activation.
    grid = tf.linspace(-20.0, 20.0, 400001)
    for name, low in int8.ACTIVATION_LOW.items():
        assert float(tf.reduce_min(int8.activate(name, grid))) >= low, name
        assert name in int8.ACTIVATIONS


def test_quantize_reads_its_input_in_one_pass():
    # Its range (two reductions) and the quantization itself: no op computing x - low first.
    graph = tf.function(lambda x: tuple(int8.quantize(x))).get_concrete_function(
        tf.TensorSpec([None, 48])).graph
    assert sorted(op.type for op in graph.inputs[0].consumers()) == ["Max", "Min", "QuantizeV2"]


def test_zeros_and_empty_inputs():
    q = int8.quantize(np.zeros((3, 48), "float32"))
    assert _uint8(q.values).max() == 0 and float(q.low) == 0.0
    y = int8.matmul(q, KERNEL, SCALE, SUMS, BIAS)
    np.testing.assert_allclose(y.numpy(), np.tile(BIAS, (3, 1)), atol=1e-6)
    empty = int8.matmul(int8.quantize(np.zeros((0, 48), "float32")), KERNEL, SCALE, SUMS, BIAS)
    assert empty.shape == (0, 24)


@pytest.mark.parametrize("graph", [False, True])
@pytest.mark.parametrize("fusion", [None, "gelu", "gelu_tanh", "relu", "tanh", "addend"])
def test_the_kernel_computes_the_integer_arithmetic(fusion, graph):
    activation = None if fusion in (None, "addend") else fusion
    addend = RESIDUAL if fusion == "addend" else None

    def call(x):
        return int8.matmul(int8.quantize(x), KERNEL, SCALE, SUMS, BIAS, activation=activation,
                           addend=addend)

    y = (tf.function(call) if graph else call)(tf.constant(X)).numpy()
    want = _exact(X, activation, addend)
    # float32 rounding of sums of 48 products of this size: well under 1e-5 here
    np.testing.assert_allclose(y, want, atol=1e-5 * np.abs(want).max())
    # ... and within int8's error of the float layer: activations in 255 steps, weights in
    # 127 per column (measured here: 0.7% of the largest output)
    float_y = X @ W + BIAS
    if activation is not None:
        float_y = int8.activate(activation, tf.constant(float_y)).numpy()
    if addend is not None:
        float_y = float_y + addend
    assert np.abs(y - float_y).max() < 0.02 * np.abs(float_y).max()


def test_a_kernel_range_made_in_advance_is_the_scale_s():
    # what a serving export gives the kernel (the same float32 division, made once)
    x = int8.quantize(tf.constant(X))
    want = int8.matmul(x, KERNEL, SCALE, SUMS, BIAS, activation="gelu").numpy()
    ranged = int8.matmul(x, KERNEL, None, SUMS, BIAS, activation="gelu",
                         kernel_range=tf.constant(int8.kernel_range(SCALE)))
    np.testing.assert_array_equal(ranged.numpy(), want)


def test_without_tensorflows_onednn_rewrites_the_results_are_the_same(tmp_path):
    # TF_ENABLE_ONEDNN_OPTS=0 turns off TensorFlow's oneDNN graph rewrites (the int8 kernel
    # stays): the quantization then runs the same kernel and the results do not change.
    code = ("import numpy as np, tensorflow as tf\n"
            "from tests.layers.test_int8 import X, KERNEL, SCALE, SUMS, BIAS\n"
            "from keras_bert.layers import int8\n"
            "f = tf.function(lambda x: int8.matmul(int8.quantize(x), KERNEL, SCALE, SUMS,"
            " BIAS, activation='gelu'))\n"
            f"np.save({str(tmp_path / 'y.npy')!r}, f(tf.constant(X)).numpy())\n")
    env = dict(os.environ, TF_ENABLE_ONEDNN_OPTS="0", TF_CPP_MIN_LOG_LEVEL="2")
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=300,
                   cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    want = tf.function(lambda x: int8.matmul(int8.quantize(x), KERNEL, SCALE, SUMS, BIAS,
                                             activation="gelu"))(tf.constant(X))
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), want.numpy(), atol=1e-6)


def test_the_kernel_keeps_its_weights_under_constant_weights():
    kernel = tf.Variable(KERNEL)
    with int8.constant_weights():
        f = tf.function(lambda x: int8.matmul(int8.quantize(x), kernel, SCALE, SUMS, BIAS))
        first = f(tf.constant(X)).numpy()
    graph = f.get_concrete_function(tf.constant(X)).graph.as_graph_def()
    assert [n.attr["is_weight_const"].b for n in graph.node if n.op == int8.OP] == [True]
    kernel.assign(-KERNEL)  # a later assignment is not seen: what the docstring warns of
    np.testing.assert_allclose(f(tf.constant(X)).numpy(), first)
    g = tf.function(lambda x: int8.matmul(int8.quantize(x), kernel, SCALE, SUMS, BIAS))
    graph = g.get_concrete_function(tf.constant(X)).graph.as_graph_def()
    assert [n.attr["is_weight_const"].b for n in graph.node if n.op == int8.OP] == [False]


def test_the_kernel_has_no_gradient():
    x = tf.constant(X)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = int8.matmul(int8.quantize(x), KERNEL, SCALE, SUMS, BIAS)
    with pytest.raises(int8.NoGradientError, match="training=True"):
        tape.gradient(y, x)


def test_bad_fusions():
    q = int8.quantize(X)
    with pytest.raises(ValueError, match="an activation or an addend, not both"):
        int8.matmul(q, KERNEL, SCALE, SUMS, activation="gelu", addend=RESIDUAL)
    with pytest.raises(ValueError, match="'silu' is not one of"):
        int8.matmul(q, KERNEL, SCALE, SUMS, activation="silu")
