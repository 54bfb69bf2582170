"""keras_bert/models/quantization.py: Keras' model.quantize("int8") on the encoder and every
task model gives a model that saves to .keras, loads back with the same outputs and exports
a serving SavedModel that takes strings."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_bert
from keras_bert import text
from keras_bert.models import quantization
from tests.models.tiny import NEGATIVE, POSITIVE, VOCAB, tiny_encoder

TEXTS = POSITIVE[:3] + NEGATIVE[:3]


def _task(name):
    encoder = tiny_encoder()
    if name == "classifier":
        return keras_bert.BertClassifier(encoder, 2, preprocessor=text.BertPreprocessor(VOCAB, 16))
    if name == "token_classifier":
        return keras_bert.BertTokenClassifier(
            encoder, 3, preprocessor=text.BertTokenClassifierPreprocessor(VOCAB, seq_length=16))
    if name == "span_labeler":
        return keras_bert.BertSpanLabeler(encoder, preprocessor=text.BertPreprocessor(VOCAB, 16))
    if name == "multiple_choice":
        return keras_bert.BertMultipleChoice(
            encoder, num_choices=2, preprocessor=text.BertMultipleChoicePreprocessor(VOCAB, 16))
    masker = dict(seq_length=16, max_predictions_per_seq=3, seed=1)
    if name == "masked_lm":
        return keras_bert.BertMaskedLM(encoder,
                                       preprocessor=text.BertMaskedLMPreprocessor(VOCAB, **masker))
    return keras_bert.BertPretrainer(encoder,
                                     preprocessor=text.BertPretrainerPreprocessor(VOCAB, **masker))


def _packed(model, name):
    """Packed numpy inputs (masked once, so that every call sees the same masks)."""
    if name == "span_labeler":
        raw = (tf.constant(TEXTS[:3]), tf.constant(TEXTS[3:]))
    elif name == "token_classifier":
        raw = tf.ragged.constant([t.split() for t in TEXTS])
    elif name == "multiple_choice":
        raw = (tf.constant(TEXTS[:2]), tf.constant([TEXTS[2:4], TEXTS[4:6]]))
    else:
        raw = tf.constant(TEXTS)
    out = model.preprocessor(raw)
    x = out[0] if isinstance(out, tuple) else out
    return {k: v.numpy() for k, v in x.items()}


def _as_list(outputs):
    if isinstance(outputs, dict):
        return [outputs[k] for k in sorted(outputs)]
    return [outputs]


@pytest.mark.parametrize("name", ["classifier", "token_classifier", "span_labeler",
                                  "multiple_choice", "masked_lm", "pretrainer"])
def test_an_int8_task_model_saves_and_loads_back(name, tmp_path):
    keras.utils.set_random_seed(3)
    model = _task(name)
    x = _packed(model, name)
    before = _as_list(model.predict(x, verbose=0))
    model.quantize("int8")
    quantized = _as_list(model.predict(x, verbose=0))
    assert model.encoder.get_layer("transformer_block_0").query.kernel.dtype == "int8"
    # int8 weights: close to the float32 model, not equal to it
    assert 0 < max(np.abs(a - b).max() for a, b in zip(quantized, before)) < 0.1
    path = str(tmp_path / "model.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert loaded.encoder.get_layer("transformer_block_0").query.kernel.dtype == "int8"
    assert quantization.quantized_layers(loaded) == quantization.quantized_layers(model)
    for got, want in zip(_as_list(loaded.predict(x, verbose=0)), quantized):
        np.testing.assert_allclose(got, want, atol=1e-6)


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
    np.testing.assert_allclose(loaded(x)["pooled_output"].numpy(), want, atol=1e-6)


def test_an_int8_classifier_exports_a_serving_model_on_strings(tmp_path):
    import tensorflow_text  # noqa: F401  (the tokenizer's ops, for loading)

    keras.utils.set_random_seed(4)
    model = _task("classifier")
    model.quantize("int8")
    want = model.predict(TEXTS, verbose=0)
    path = model.export(str(tmp_path / "int8" / "1"))
    serve = tf.saved_model.load(path).signatures["serving_default"]
    np.testing.assert_allclose(serve(text=tf.constant(TEXTS))["logits"], want, atol=1e-5)


def test_a_config_that_names_a_missing_layer_is_an_error():
    encoder = tiny_encoder()
    with pytest.raises(ValueError, match="does not have: transformer_block_9/query"):
        quantization.quantize_again(encoder, {"transformer_block_9/query": "int8"})
