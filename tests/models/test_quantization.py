"""keras_bert/models/quantization.py: Keras' model.quantize("int8") on the encoder gives a
model that runs on the int8 kernel, saves to .keras and loads back with the same outputs; on
real reviews with the real minilm_l6 weights an int8 classifier agrees with the float32 model.
Every task model's int8 save, reload, export and serving: tests/export/test_task_export.py."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_bert
from keras_bert.layers import int8
from keras_bert.models import quantization
from tests.models.tiny import tiny_encoder

def _graph_ops(model, x):
    inputs = {k: tf.constant(v) for k, v in x.items()}
    function = tf.function(lambda inputs: model(inputs, training=False))
    graph = function.get_concrete_function(inputs).graph
    return {node.op for node in graph.as_graph_def().node}


def test_an_int8_encoder_saves_and_loads_back(tmp_path):
    encoder = tiny_encoder()
    ids = np.array([[2, 7, 9, 3, 0]], "int32")
    x = {"input_word_ids": ids, "input_mask": (ids > 0).astype("int32"),
         "input_type_ids": np.zeros_like(ids)}
    encoder.quantize("int8")
    want = encoder(x)["pooled_output"].numpy()
    path = str(tmp_path / "encoder.keras")
    encoder.save(path)
    loaded = keras.saving.load_model(path)
    assert quantization.quantized_layers(loaded) == quantization.quantized_layers(encoder)
    assert int8.OP in _graph_ops(loaded, x)  # inference on the int8 kernel
    np.testing.assert_allclose(loaded(x)["pooled_output"].numpy(), want, atol=1e-6)


def test_quantizing_a_trained_task_model_is_silent_and_gives_it_a_fresh_optimizer(tmp_path):
    """Keras warns once per layer without a quantize method (inputs, dropout, LayerNorm, the
    preprocessor's), and the optimizer kept the state of the float weights, which made the
    int8 .keras file warn on loading ("Skipping variable loading for optimizer")."""
    import warnings

    from tests.models.tiny import NEGATIVE, POSITIVE, VOCAB

    model = keras_bert.BertClassifier(tiny_encoder(), 2,
                                      preprocessor=keras_bert.BertPreprocessor(VOCAB, 8))
    model.fit(POSITIVE + NEGATIVE, [1] * 8 + [0] * 8, epochs=1, verbose=0)
    assert int(model.optimizer.iterations) == 1
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.quantize("int8")
        model.save(tmp_path / "int8.keras")
        loaded = keras.saving.load_model(tmp_path / "int8.keras")
    # (numpy's DeprecationWarning about __array__ is Keras' and TensorFlow's, not ours)
    assert [str(w.message) for w in caught if w.category is not DeprecationWarning] == []
    assert int(model.optimizer.iterations) == 0 and not model.optimizer.built
    assert quantization.quantized_layers(loaded) == quantization.quantized_layers(model)
    np.testing.assert_allclose(loaded.predict(POSITIVE, verbose=0),
                               model.predict(POSITIVE, verbose=0), atol=1e-6)


def test_a_config_that_names_a_missing_layer_is_an_error():
    encoder = tiny_encoder()
    with pytest.raises(ValueError, match="does not have: transformer_block_9/query"):
        quantization.quantize_again(encoder, {"transformer_block_9/query": "int8"})


@pytest.fixture(scope="module")
def review_classifier():
    """minilm_l6 (the real all-MiniLM-L6-v2 weights) with a head fitted to 512 training
    reviews by ridge regression on its pooled outputs (a head whose probabilities mean
    something, in seconds: ~73% test accuracy), and 64 test reviews with their labels."""
    from keras_bert.data import movie_reviews

    keras.utils.set_random_seed(0)
    model = keras_bert.BertClassifier.from_preset("minilm_l6", num_classes=2, seq_length=64)
    splits = movie_reviews.load()
    texts, labels = splits["train"][0][:512], np.array(splits["train"][1][:512])
    pooled = np.concatenate([
        model.encoder(model.preprocessor(tf.constant(texts[i:i + 64])))["pooled_output"]
        for i in range(0, len(texts), 64)])
    features = np.concatenate([pooled, np.ones((len(texts), 1), "float32")], axis=1)
    targets = np.stack([labels == 0, labels == 1], axis=1) * 4.0 - 2.0  # logits of +-2
    weights = np.linalg.solve(features.T @ features + np.eye(features.shape[1]),
                              features.T @ targets)
    model.logits.set_weights([weights[:-1].astype("float32"), weights[-1].astype("float32")])
    return model, splits["test"][0][:64], np.array(splits["test"][1][:64])


def test_int8_agrees_with_float32_on_real_reviews(review_classifier, monkeypatch):
    from keras_bert.layers import dense

    model, texts, labels = review_classifier
    want = tf.nn.softmax(model.predict(texts, verbose=0)).numpy()[:, 1]
    assert ((want > 0.5) == labels).mean() > 0.65  # the fitted head works
    model.quantize("int8")
    got = tf.nn.softmax(model.predict(texts, verbose=0)).numpy()[:, 1]
    monkeypatch.setattr(dense, "INT8_KERNEL", False)
    model.predict_function = None  # traced again: Keras' own int8 path
    keras_int8 = tf.nn.softmax(model.predict(texts, verbose=0)).numpy()[:, 1]
    # ... which the retrace did take: the model's graph has no int8 kernel now, and predict
    # gives other probabilities (each path quantizes the activations its own way: they differ
    # by 0.035 on average; predict's int8-kernel function again would give the same numbers)
    packed = {k: v.numpy() for k, v in model.preprocessor(tf.constant(texts[:2])).items()}
    assert int8.OP not in _graph_ops(model, packed)
    assert np.abs(keras_int8 - got).mean() > 0.005
    # Measured (seed 0; this head's logits are steep in its features): the int8 kernel
    # changes probabilities by 0.028 on average (Keras' int8 path: 0.024), at most 0.12;
    # 61 of 64 labels agree, the 3 others had float32 probabilities within 0.06 of 0.5.
    difference = np.abs(got - want)
    assert difference.mean() < 1.5 * np.abs(keras_int8 - want).mean() + 0.005
    assert difference.mean() < 0.04 and difference.max() < 0.2
    sure = np.abs(want - 0.5) > 0.1
    assert sure.sum() > 32 and ((got > 0.5) == (want > 0.5))[sure].all()
    assert ((got > 0.5) == (want > 0.5)).mean() >= 0.9
    # (The int8 export serves what predict computes: tests/export/test_task_export.py.)


def test_quantize_scans_the_heap_once_not_once_per_layer(monkeypatch):
    """Keras runs gc.collect() (0.2-0.6 s with TensorFlow imported) each time a layer drops a
    variable; keras_bert's Dense drops its float kernel without it, and the model's quantize
    collects once: 8 heap scans of a 1-block model would be 72 for a 12-layer BERT."""
    import gc

    calls = []
    collect = gc.collect
    monkeypatch.setattr(gc, "collect", lambda *args: calls.append(args) or collect(*args))
    model = keras_bert.BertClassifier.from_preset("tiny_random", num_classes=2)
    dense = [layer for layer in model._flatten_layers()
             if isinstance(layer, keras_bert.layers.Dense)]
    assert len(dense) == 7  # query, key, value, attention output, intermediate, output, pooler
    model.quantize("int8")
    assert all(layer.quantization_mode == "int8" for layer in dense)
    assert len(calls) <= 2  # the model's one, and the head's (Keras' own Dense)
