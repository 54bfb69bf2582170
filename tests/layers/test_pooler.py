import numpy as np

import keras_bert  # noqa: F401  (selects the TensorFlow backend)
import keras
from keras_bert.layers import Pooler

import layer_reference as ref


def test_matches_reference_math():
    pooler = Pooler(hidden_size=8)
    x = np.random.default_rng(0).normal(size=(3, 5, 8)).astype("float32")
    pooler(x)
    weights = ref.randomize(pooler, scale=0.5)
    np.testing.assert_allclose(pooler(x).numpy(), ref.pooler(weights, x), atol=1e-6, rtol=0)


def test_canonical_variables():
    pooler = Pooler(hidden_size=8)
    pooler.build((None, None, 8))
    assert {k: tuple(v.shape) for k, v in pooler.canonical_variables().items()} == {
        "dense/kernel": (8, 8), "dense/bias": (8,)}


def test_keras_round_trip(tmp_path):
    inputs = keras.Input((None, 8))
    model = keras.Model(inputs, Pooler(8, name="pooler")(inputs))
    ref.randomize(model.get_layer("pooler"), scale=0.5)
    x = np.random.default_rng(1).normal(size=(2, 4, 8)).astype("float32")
    model.save(tmp_path / "pooler.keras")
    loaded = keras.models.load_model(tmp_path / "pooler.keras")
    assert loaded.get_layer("pooler").get_config() == model.get_layer("pooler").get_config()
    np.testing.assert_array_equal(loaded(x).numpy(), model(x).numpy())


def test_shared_checks():
    from tests.harness import check_layer

    check_layer(Pooler(hidden_size=8), np.random.rand(2, 3, 8).astype("float32"))
