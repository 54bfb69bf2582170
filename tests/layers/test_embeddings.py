import numpy as np
import pytest
import tensorflow as tf

import keras_bert  # noqa: F401  (selects the TensorFlow backend)
import keras
from keras_bert.layers import BertEmbeddings

import layer_reference as ref


def _ids(batch=2, seq=6, vocab=50, seed=0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, vocab, size=(batch, seq)).astype("int32")
    types = np.zeros_like(ids)
    types[:, seq // 2:] = 1
    return ids, types


def _layer(**kwargs):
    return BertEmbeddings(vocab_size=50, hidden_size=16, max_position_embeddings=20, **kwargs)


def test_matches_reference_math():
    layer = _layer()
    ids, types = _ids()
    layer((ids, types))
    weights = ref.randomize(layer)
    np.testing.assert_allclose(layer((ids, types)).numpy(), ref.embeddings(weights, ids, types),
                               atol=1e-5, rtol=0)


def test_any_length_up_to_the_limit_in_tf_function():
    layer = _layer()
    fn = tf.function(lambda i, t: layer((i, t)),
                     input_signature=[tf.TensorSpec([None, None], tf.int32)] * 2)
    for seq in (1, 7, 20):
        ids, types = _ids(seq=seq)
        assert fn(ids, types).shape == (2, seq, 16)


def test_too_long_raises_clear_error():
    layer = _layer()
    ids, types = _ids(seq=21)
    with pytest.raises(ValueError, match="max_position_embeddings=20"):
        layer((ids, types))
    fn = tf.function(lambda i, t: layer((i, t)),
                     input_signature=[tf.TensorSpec([None, None], tf.int32)] * 2)
    with pytest.raises(tf.errors.InvalidArgumentError, match="max_position_embeddings=20"):
        fn(ids, types)


def test_canonical_variables():
    layer = _layer(type_vocab_size=3)
    layer.build(None)
    shapes = {k: tuple(v.shape) for k, v in layer.canonical_variables().items()}
    assert shapes == {"word_embeddings": (50, 16), "position_embeddings": (20, 16),
                      "token_type_embeddings": (3, 16), "LayerNorm/gamma": (16,),
                      "LayerNorm/beta": (16,)}


def test_keras_round_trip(tmp_path):
    i = keras.Input((None,), dtype="int32")
    t = keras.Input((None,), dtype="int32")
    model = keras.Model([i, t], _layer(name="emb")((i, t)))
    ref.randomize(model.get_layer("emb"))
    ids, types = _ids()
    model.save(tmp_path / "emb.keras")
    loaded = keras.models.load_model(tmp_path / "emb.keras")
    assert loaded.get_layer("emb").get_config() == model.get_layer("emb").get_config()
    np.testing.assert_array_equal(loaded([ids, types]).numpy(), model([ids, types]).numpy())


def test_shared_checks():
    from tests.harness import check_layer

    ids = np.array([[2, 5, 7, 3], [2, 9, 3, 0]], "int32")
    check_layer(BertEmbeddings(vocab_size=11, hidden_size=8, max_position_embeddings=16),
                (ids, np.array([[0, 0, 1, 1], [0, 0, 0, 0]], "int32")))
