"""export_encoder: the TF Hub BERT encoder format, its MLM subobject, and its errors."""

import os

import numpy as np
import pytest
import tensorflow as tf

import keras_bert
from keras_bert.export import ExportError, export_encoder, required_ops
from tests.models.tiny import VOCAB, tiny_encoder


def _inputs(batch=3, seq=7, seed=0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(5, len(VOCAB), size=(batch, seq)).astype("int32")
    mask = np.ones_like(ids)
    mask[0, 4:] = 0  # padding on one row
    types = np.zeros_like(ids)
    types[:, 3:] = 1
    return {"input_word_ids": ids, "input_mask": mask, "input_type_ids": types}


@pytest.fixture(scope="module")
def masked_lm():
    return keras_bert.BertMaskedLM(
        tiny_encoder(), preprocessor=keras_bert.BertMaskedLMPreprocessor(VOCAB, seq_length=16))


@pytest.fixture(scope="module")
def exported(masked_lm, tmp_path_factory):
    return export_encoder(masked_lm, tmp_path_factory.mktemp("export") / "encoder")


def test_tf_hub_encoder_interface(masked_lm, exported):
    loaded = tf.saved_model.load(exported)
    x = _inputs()
    want = masked_lm.encoder(x)
    got = loaded(x, training=False)
    assert sorted(got) == ["default", "encoder_outputs", "pooled_output", "sequence_output"]
    np.testing.assert_allclose(got["sequence_output"], want["sequence_output"], atol=1e-6)
    np.testing.assert_allclose(got["pooled_output"], want["pooled_output"], atol=1e-6)
    np.testing.assert_allclose(got["default"], want["pooled_output"], atol=1e-6)
    assert len(got["encoder_outputs"]) == 2
    for g, w in zip(got["encoder_outputs"], want["encoder_outputs"]):
        np.testing.assert_allclose(g, w, atol=1e-6)
    # training=True runs dropout: outputs differ from inference and from call to call.
    trained = [loaded(x, training=True)["pooled_output"].numpy() for _ in range(2)]
    assert np.abs(trained[0] - got["pooled_output"].numpy()).max() > 1e-4
    assert np.abs(trained[0] - trained[1]).max() > 1e-4
    # Reusable-SavedModel attributes: every encoder weight once (no doubles), no losses.
    encoder = masked_lm.encoder
    assert len(loaded.trainable_variables) == len(encoder.trainable_variables)
    assert len(loaded.variables) == len(encoder.variables)
    assert list(loaded.regularization_losses) == []
    # The vocabulary as an asset, the casing as a variable.
    vocab_file = loaded.vocab_file.asset_path.numpy().decode()
    assert vocab_file.startswith(os.path.join(exported, "assets"))
    assert open(vocab_file, encoding="utf-8").read().split("\n")[:-1] == VOCAB
    assert loaded.do_lower_case.dtype == tf.bool and bool(loaded.do_lower_case.numpy())
    assert required_ops(exported) == []


def test_mlm_subobject(masked_lm, exported):
    loaded = tf.saved_model.load(exported)
    x = dict(_inputs(), masked_lm_positions=np.array([[1, 2], [3, 0], [6, 5]], "int32"))
    got = loaded.mlm(x, training=False)
    np.testing.assert_allclose(got["mlm_logits"], masked_lm.predict(x, verbose=0), atol=1e-5)
    np.testing.assert_allclose(got["pooled_output"], loaded(_inputs())["pooled_output"],
                               atol=1e-6)
    # Its variables: the encoder's and the head's own five (transform kernel and bias,
    # LayerNorm gamma and beta, output bias; the decoder is tied to the word embeddings).
    assert len(loaded.mlm.trainable_variables) == len(loaded.trainable_variables) + 5
    names = {v.name for v in loaded.mlm.trainable_variables}
    assert "mlm_head/output_bias:0" in names and "nsp_head/kernel:0" not in names


def test_serving_signature_flattens_the_layers(masked_lm, exported):
    signature = tf.saved_model.load(exported).signatures["serving_default"]
    out = signature(**{k: tf.constant(v) for k, v in _inputs().items()})
    assert sorted(out) == ["default", "encoder_outputs_0", "encoder_outputs_1",
                           "pooled_output", "sequence_output"]
    np.testing.assert_allclose(out["encoder_outputs_1"], out["sequence_output"])


def test_an_encoder_without_vocabulary_needs_one(tmp_path):
    with pytest.raises(ExportError, match="pass vocabulary="):
        export_encoder(tiny_encoder(), tmp_path / "a")
    with pytest.raises(ExportError, match="pass do_lower_case=True"):
        export_encoder(tiny_encoder(), tmp_path / "a", vocabulary=VOCAB)
    with pytest.raises(ExportError, match="has 5 tokens but the encoder's vocab_size is 43"):
        export_encoder(tiny_encoder(), tmp_path / "a", vocabulary=VOCAB[:5],
                       do_lower_case=True)
    with pytest.raises(FileNotFoundError, match="vocabulary file not found"):
        export_encoder(tiny_encoder(), tmp_path / "a", vocabulary=str(tmp_path / "none.txt"))
    assert not (tmp_path / "a").exists()


def test_not_an_encoder(tmp_path):
    with pytest.raises(ExportError, match="takes a BertEncoder or a keras_bert task model, got "
                                          "BertPreprocessor"):
        export_encoder(keras_bert.BertPreprocessor(VOCAB), tmp_path / "a")


def test_a_classifier_exports_its_encoder_without_mlm(tmp_path):
    model = keras_bert.BertClassifier(tiny_encoder(), 2,
                                      preprocessor=keras_bert.BertPreprocessor(VOCAB, 16))
    loaded = tf.saved_model.load(export_encoder(model, tmp_path / "encoder"))
    assert not hasattr(loaded, "mlm")
    np.testing.assert_allclose(loaded(_inputs())["pooled_output"],
                               model.encoder(_inputs())["pooled_output"], atol=1e-6)
