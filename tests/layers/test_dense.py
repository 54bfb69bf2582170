"""keras_bert.layers.dense.Dense: Keras' Dense, with LoRA computed in the paper's form, kept
whole through saving, and merged into the kernel on request; once quantized to int8, its
inference runs on oneDNN's int8 kernel (everything else as Keras' int8 Dense)."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_bert  # noqa: F401  (selects the TensorFlow backend)
from keras_bert.layers import dense, int8
from keras_bert.layers.dense import Dense


def _model(units=5, lora_rank=None, seed=0):
    keras.utils.set_random_seed(seed)
    inputs = keras.Input((4,))
    layer = Dense(units, name="projection")
    model = keras.Model(inputs, layer(inputs))
    if lora_rank:
        layer.enable_lora(lora_rank)
    return model, layer


def _x():
    return np.random.default_rng(1).normal(size=(3, 4)).astype("float32")


def _randomize_factors(layer, seed=2):
    rng = np.random.default_rng(seed)
    layer.lora_kernel_a.assign(rng.normal(size=layer.lora_kernel_a.shape).astype("float32"))
    layer.lora_kernel_b.assign(rng.normal(size=layer.lora_kernel_b.shape).astype("float32"))


def test_without_lora_it_is_keras_dense():
    model, layer = _model()
    plain = keras.layers.Dense(5)
    plain.build((None, 4))
    plain.set_weights(layer.get_weights())
    np.testing.assert_array_equal(model(_x()).numpy(), plain(_x()).numpy())
    assert [v.name for v in layer.weights] == ["kernel", "bias"]


def test_lora_output_is_the_merged_kernels():
    model, layer = _model(lora_rank=2)
    _randomize_factors(layer)
    x = _x()
    # lora_alpha defaults to the rank: the update is A @ B, unscaled.
    expected = x @ (layer._kernel.numpy() + layer.lora_kernel_a.numpy()
                    @ layer.lora_kernel_b.numpy()) + layer.bias.numpy()
    np.testing.assert_allclose(model(x).numpy(), expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(layer.merged_kernel()),
                               np.asarray(keras.ops.convert_to_numpy(layer.kernel)), atol=1e-6)


def test_lora_alpha_scales_the_update():
    model, layer = _model()
    layer_scaled = Dense(5)
    layer_scaled.build((None, 4))
    layer_scaled.set_weights(layer.get_weights())
    layer.enable_lora(2)
    layer_scaled.enable_lora(2, lora_alpha=6)
    _randomize_factors(layer)
    _randomize_factors(layer_scaled)
    x = _x()
    base = x @ layer._kernel.numpy() + layer.bias.numpy()
    np.testing.assert_allclose(layer_scaled(x).numpy() - base, 3 * (layer(x).numpy() - base),
                               rtol=1e-4, atol=1e-5)


def test_weights_file_keeps_the_factors(tmp_path):
    model, layer = _model(lora_rank=2)
    _randomize_factors(layer)
    path = str(tmp_path / "m.weights.h5")
    model.save_weights(path)
    again, again_layer = _model(lora_rank=2, seed=5)
    again.load_weights(path)
    for name in ("_kernel", "bias", "lora_kernel_a", "lora_kernel_b"):
        np.testing.assert_array_equal(getattr(again_layer, name).numpy(),
                                      getattr(layer, name).numpy())
    # Keras' own Dense would save W + A @ B and load A = B = 0: here the base kernel stays.
    assert not np.allclose(again_layer._kernel.numpy(), np.asarray(layer.merged_kernel()))


def test_weights_without_factors_load_into_a_lora_layer_with_b_zero(tmp_path):
    plain, plain_layer = _model(seed=3)
    path = str(tmp_path / "plain.weights.h5")
    plain.save_weights(path)
    model, layer = _model(lora_rank=2)
    _randomize_factors(layer)
    a = layer.lora_kernel_a.numpy()
    model.load_weights(path)
    np.testing.assert_array_equal(layer._kernel.numpy(), plain_layer._kernel.numpy())
    np.testing.assert_array_equal(layer.lora_kernel_b.numpy(), 0)
    np.testing.assert_array_equal(layer.lora_kernel_a.numpy(), a)  # B = 0 alone: A still trains
    np.testing.assert_allclose(model(_x()).numpy(), plain(_x()).numpy(), atol=1e-6)


def test_factors_of_another_rank_are_refused(tmp_path):
    model, layer = _model(lora_rank=2)
    path = str(tmp_path / "m.weights.h5")
    model.save_weights(path)
    other, _ = _model(lora_rank=3)
    with pytest.raises(ValueError, match=r"lora_kernel_a has shape \(4, 2\).*\(4, 3\)"):
        other.load_weights(path)


def test_merge_folds_the_update_and_removes_the_factors():
    model, layer = _model(lora_rank=2)
    _randomize_factors(layer)
    x = _x()
    before = model(x).numpy()
    layer.merge_lora()
    assert not layer.lora_enabled and [v.name for v in layer.weights] == ["kernel", "bias"]
    assert not layer._kernel.trainable  # frozen, as LoRA left it
    np.testing.assert_allclose(model(x).numpy(), before, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="LoRA is not enabled"):
        layer.merge_lora()


def test_int8_quantization_still_works():
    model, layer = _model()
    before = model(_x()).numpy()
    model.quantize("int8")
    assert layer.quantization_mode == "int8"
    assert 0 < np.abs(model(_x()).numpy() - before).max() < 0.1


# ------------------------------------------------------------ int8

RNG = np.random.default_rng(0)
X = RNG.normal(size=(12, 16)).astype("float32")


def _pair(activation=None, units=8, seed=0):
    """Our Dense and keras.layers.Dense with the same (random) weights, both built."""
    rng = np.random.default_rng(seed)
    ours, theirs = Dense(units, activation=activation), keras.layers.Dense(units, activation)
    for layer in (ours, theirs):
        layer.build((None, X.shape[1]))
    weights = [rng.normal(size=(X.shape[1], units)).astype("float32") * 0.3,
               rng.normal(size=units).astype("float32")]
    ours.set_weights(weights)
    theirs.set_weights(weights)
    return ours, theirs


def _exact(layer, x):
    """What the int8 kernel computes for `layer` (no activation) on `x`, in float64."""
    q = int8.quantize(x)
    values = np.frombuffer(q.values.numpy().tobytes(), np.uint8).reshape(x.shape)
    dequantized = float(q.low) + float(q.width) / 255 * values.astype(np.float64)
    kernel = keras.ops.convert_to_numpy(layer._kernel).astype(np.float64)
    return dequantized @ (kernel / layer.kernel_scale.numpy()) + layer.bias.numpy()


def _ops(fn, *args):
    return {n.op for n in tf.function(fn).get_concrete_function(*args).graph.as_graph_def().node}


def test_registered_and_configured_as_keras_dense():
    ours, theirs = _pair("relu")
    assert isinstance(ours, keras.layers.Dense)
    np.testing.assert_array_equal(ours(X), theirs(X))
    config = ours.get_config()
    assert type(Dense.from_config(config)) is Dense
    assert keras.saving.get_registered_name(Dense) == "keras_bert>Dense"


def test_int8_inference_runs_the_kernel():
    ours, theirs = _pair()
    float_y = ours(X).numpy()
    ours.quantize("int8")
    theirs.quantize("int8")
    np.testing.assert_array_equal(ours._kernel.numpy(), theirs._kernel.numpy())
    np.testing.assert_allclose(ours.kernel_column_sums.numpy(),
                               int8.column_sums(ours._kernel, ours.kernel_scale).numpy())
    assert not ours.kernel_column_sums.trainable
    assert ours.int8_kernel_applies() and not ours.int8_kernel_applies(training=True)
    x = tf.constant(X)
    assert int8.OP in _ops(lambda x: ours(x), x)
    assert int8.OP not in _ops(lambda x: theirs(x), x)
    y = ours(x).numpy()
    np.testing.assert_allclose(y, _exact(ours, X), atol=1e-5)
    np.testing.assert_allclose(tf.function(lambda x: ours(x))(x), y, atol=1e-6)
    # int8's error of the float layer, like Keras' own int8 path (which rounds differently)
    scale = np.abs(float_y).max()
    assert np.abs(y - float_y).max() < 0.02 * scale
    assert np.abs(theirs(x).numpy() - float_y).max() < 0.02 * scale
    # any rank: the rows are all but the last axis
    np.testing.assert_allclose(ours(X.reshape(3, 4, 16)).numpy().reshape(12, 8), y, atol=1e-6)


@pytest.mark.parametrize("activation", ["tanh", "gelu", "relu", "sigmoid", "silu"])
def test_the_layers_activation(activation):
    ours, _ = _pair(activation)
    ours.quantize("int8")
    got = ours(X).numpy()
    np.testing.assert_allclose(got, ours.activation(_exact(ours, X)).numpy(), atol=1e-5)


def test_training_other_dtypes_and_the_switch_run_keras_int8_path(monkeypatch):
    ours, theirs = _pair()
    ours.quantize("int8")
    theirs.quantize("int8")
    want = theirs(X).numpy()
    np.testing.assert_array_equal(ours(X, training=True), want)
    x = tf.constant(X)
    with tf.GradientTape() as tape:  # Keras' int8 path has gradients for the inputs
        tape.watch(x)
        y = ours(x, training=True)
    assert tape.gradient(y, x).shape == X.shape
    monkeypatch.setattr(dense, "INT8_KERNEL", False)
    assert int8.OP not in _ops(lambda x: ours(x), x)
    np.testing.assert_array_equal(ours(X), want)
    monkeypatch.setattr(dense, "INT8_KERNEL", True)
    bf16 = Dense(8, dtype="mixed_bfloat16")
    bf16.build((None, 16))
    bf16.quantize("int8")
    assert not bf16.int8_kernel_applies()
    assert int8.OP not in _ops(lambda x: bf16(x), x)


def test_an_inference_call_has_no_gradient():
    ours, _ = _pair()
    ours.quantize("int8")
    x = tf.constant(X)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = ours(x)
    with pytest.raises(int8.NoGradientError, match="training=True"):
        tape.gradient(y, x)


def test_keras_files_round_trip_and_keep_keras_format(tmp_path):
    inputs = keras.Input((16,))
    model = keras.Model(inputs, Dense(8, activation="tanh", name="dense")(inputs))
    model.get_layer("dense").set_weights(_pair()[0].get_weights())
    model.quantize("int8")
    want = model.predict(X, verbose=0)
    model.save(tmp_path / "model.keras")
    loaded = keras.saving.load_model(tmp_path / "model.keras")
    layer = loaded.get_layer("dense")
    assert type(layer) is Dense and layer.quantization_mode == "int8"
    np.testing.assert_allclose(layer.kernel_column_sums.numpy(),
                               model.get_layer("dense").kernel_column_sums.numpy())
    np.testing.assert_allclose(loaded.predict(X, verbose=0), want, atol=1e-6)
    # The weights file holds Keras' variables (kernel, bias, kernel_scale), not the derived
    # column sums: weights written by keras.layers.Dense in int8 load into this layer.
    model.save_weights(tmp_path / "ours.weights.h5")
    inputs = keras.Input((16,))
    plain = keras.Model(inputs, keras.layers.Dense(8, activation="tanh", name="dense")(inputs))
    plain.quantize("int8")
    plain.load_weights(tmp_path / "ours.weights.h5")
    plain.save_weights(tmp_path / "keras.weights.h5")
    fresh = keras.saving.load_model(tmp_path / "model.keras")
    fresh.get_layer("dense").kernel_column_sums.assign(np.zeros(8, "float32"))
    fresh.load_weights(tmp_path / "keras.weights.h5")
    np.testing.assert_allclose(fresh.predict(X, verbose=0), want, atol=1e-6)
    with pytest.raises(ValueError, match="expected 3 variables, but received 2"):
        two = {"0": layer._kernel.numpy(), "1": layer.bias.numpy()}
        layer.load_own_variables(two)


def test_lora_on_an_int8_layer():
    ours, _ = _pair()
    ours.quantize("int8")
    base = ours(X).numpy()
    ours.enable_lora(2)
    np.testing.assert_allclose(ours(X), base, atol=1e-6)  # B starts at 0
    ours.lora_kernel_b.assign(np.random.default_rng(1).normal(size=(2, 8)) * 0.1)
    lora = X @ ours.lora_kernel_a.numpy() @ ours.lora_kernel_b.numpy()
    np.testing.assert_allclose(ours(X), base + lora, atol=1e-5)
    assert int8.OP in _ops(lambda x: ours(x), tf.constant(X))
    with pytest.raises(ValueError, match="LoRA enabled: pass the float input"):
        ours.int8_matmul(int8.quantize(X))
    # training (Keras' path) trains the LoRA factors only
    assert {v.path.split("/")[-1] for v in ours.trainable_variables} == {
        "bias", "lora_kernel_a", "lora_kernel_b"}


def test_int8_matmul_fuses_an_activation_or_an_addend():
    ours, _ = _pair()
    ours.quantize("int8")
    residual = RNG.normal(size=(12, 8)).astype("float32")
    np.testing.assert_allclose(ours.int8_matmul(X, activation="gelu"),
                               tf.nn.gelu(_exact(ours, X)), atol=1e-5)
    np.testing.assert_allclose(ours.int8_matmul(X, addend=residual),
                               _exact(ours, X) + residual, atol=1e-5)
    own, _ = _pair("tanh")
    own.quantize("int8")
    with pytest.raises(ValueError, match="has its own activation"):
        own.int8_matmul(X, activation="gelu")
