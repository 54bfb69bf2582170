"""keras_bert.layers.dense.Dense: Keras' Dense, with LoRA computed in the paper's form, kept
whole through saving, and merged into the kernel on request."""

import keras
import numpy as np
import pytest

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
