"""keras_bert/models/pipeline_model.py: predict cuts each batch to its longest sequence where
the outputs have no sequence axis, in order and with the full-length outputs; per-token
outputs keep seq_length."""

import keras
import numpy as np
import tensorflow as tf

import keras_bert
from keras_bert.models.pipeline_model import PipelineModel
from tests.models.tiny import NEGATIVE, POSITIVE, VOCAB, tiny_encoder

TEXTS = POSITIVE + NEGATIVE + ["the cat sat on the red dog and the actor ran and ran again !"]


def test_trimmed_batches_cut_each_batch_to_its_longest_in_order():
    lengths = [3, 17, 2, 9, 1]
    mask = np.zeros([5, 32], np.int32)
    for i, n in enumerate(lengths):
        mask[i, :n] = 1
    packed = {"input_word_ids": mask * 7, "input_mask": mask, "input_type_ids": 0 * mask,
              "masked_lm_positions": np.ones([5, 2], np.int32)}
    batches = list(PipelineModel.trimmed_batches(packed, 2))
    assert [b["input_mask"].shape[1] for b in batches] == [24, 16, 8]
    assert [b["masked_lm_positions"].shape[1] for b in batches] == [2, 2, 2]
    np.testing.assert_array_equal(
        np.concatenate([b["input_mask"].numpy().sum(-1) for b in batches]), lengths)


def _spy(monkeypatch):
    lengths = []
    real = PipelineModel.trimmed_batches

    def spying(packed, batch_size):
        ds = real(packed, batch_size)
        lengths.extend(int(b["input_mask"].shape[-1]) for b in ds)
        return ds

    monkeypatch.setattr(PipelineModel, "trimmed_batches", staticmethod(spying))
    return lengths


def test_a_classifier_predicts_on_cut_batches_with_the_full_length_outputs(monkeypatch):
    keras.utils.set_random_seed(2)
    model = keras_bert.BertClassifier(tiny_encoder(), 2,
                                      preprocessor=keras_bert.BertPreprocessor(VOCAB, 64))
    lengths = _spy(monkeypatch)
    got = model.predict(TEXTS, batch_size=4, verbose=0)
    assert lengths and max(lengths) < 64 and len(lengths) == -(-len(TEXTS) // 4)
    packed = {k: tf.constant(v) for k, v in model.preprocessor(TEXTS).items()}
    np.testing.assert_allclose(got, model(packed, training=False).numpy(), atol=1e-5)
    np.testing.assert_allclose(model.predict_on_batch(TEXTS), got, atol=1e-5)


def test_per_token_outputs_keep_seq_length(monkeypatch):
    model = keras_bert.BertTokenClassifier(tiny_encoder(), 3, preprocessor=(
        keras_bert.BertTokenClassifierPreprocessor(VOCAB, seq_length=32)))
    lengths = _spy(monkeypatch)
    assert model.predict(TEXTS, batch_size=4, verbose=0).shape == (len(TEXTS), 32, 3)
    assert lengths == []
