"""models/label_names.py: class names on BertClassifier and BertTokenClassifier, checked,
kept through .keras files and presets, and used by the serving adapters by default."""

import keras
import numpy as np
import pytest

from keras_bert import (BertClassifier, BertEncoder, BertMultipleChoice, BertPreprocessor,
                        BertTokenClassifier, BertTokenClassifierPreprocessor)
from keras_bert.checkpoints import CheckpointError
from keras_bert.export import task_adapters
from tests.models.tiny import NEGATIVE, POSITIVE, VOCAB, tiny_encoder

NAMES = ["negative", "neutral", "positive"]
TEXTS = POSITIVE[:2] + NEGATIVE[:2]


def _classifier(**kwargs):
    keras.utils.set_random_seed(0)
    return BertClassifier(tiny_encoder(), 3, preprocessor=BertPreprocessor(VOCAB, seq_length=16),
                          **kwargs)


def test_names_travel_through_keras_files_and_presets_and_predict_stays_logits(tmp_path):
    model = _classifier(label_names=NAMES)
    assert model.label_names == NAMES and model.head_config()["label_names"] == NAMES
    unnamed = _classifier()
    assert unnamed.label_names is None and unnamed.get_config()["label_names"] is None
    logits = model.predict(TEXTS, verbose=0)
    np.testing.assert_allclose(logits, unnamed.predict(TEXTS, verbose=0), atol=1e-6)  # same seed
    assert logits.shape == (4, 3) and not np.allclose(logits.sum(-1), 1.0)  # logits, as before

    model.save(tmp_path / "model.keras")
    assert keras.saving.load_model(tmp_path / "model.keras").label_names == NAMES
    model.save_to_preset(str(tmp_path / "preset"))
    loaded = BertClassifier.from_preset(str(tmp_path / "preset"))
    assert loaded.label_names == NAMES and loaded.num_classes == 3
    np.testing.assert_allclose(loaded.predict(TEXTS, verbose=0), logits, atol=1e-5)
    # Other classes than the preset's head has: an error naming both counts and the names,
    # raised before anything is built; a new head goes on the preset's encoder.
    with pytest.raises(CheckpointError, match=r"num_classes=4 was given, but the checkpoint's "
                       r"sequence-classification head has 3 classes \(negative, neutral, "
                       r"positive\)"):
        BertClassifier.from_preset(str(tmp_path / "preset"), num_classes=4)
    fresh = BertClassifier(BertEncoder.from_preset(str(tmp_path / "preset")), num_classes=2,
                           label_names=["no", "yes"])
    assert fresh.label_names == ["no", "yes"]


def test_token_classifier_names_round_trip(tmp_path):
    tags = ["O", "B-LOC", "I-LOC"]
    model = BertTokenClassifier(tiny_encoder(), 3, label_names=tags,
                                preprocessor=BertTokenClassifierPreprocessor(VOCAB, seq_length=8))
    model.save(tmp_path / "tagger.keras")
    assert keras.saving.load_model(tmp_path / "tagger.keras").label_names == tags
    with pytest.raises(ValueError, match=r"BertTokenClassifier: label_names has 2 names"):
        BertTokenClassifier(tiny_encoder(), 3, label_names=["O", "LOC"])


@pytest.mark.parametrize("names, message", [
    (["a", "b"], r"label_names has 2 names \(\['a', 'b'\]\) but num_classes is 3"),
    (["a", "b", "a"], "label_names repeats 'a'"),
    ("abc", "label_names must be a list of class names in class-id order, got str"),
    ({0: "a", 1: "b", 2: "c"}, r"label_names must be a list .* got a dict; .* pass \[id2label"),
    (["a", 2, "c"], r"label_names\[1\] is 2; class names must be non-empty strings"),
    (["a", "", "c"], r"label_names\[1\] is ''"),
])
def test_bad_names_are_clear_errors(names, message):
    with pytest.raises(ValueError, match="BertClassifier: " + message):
        BertClassifier(tiny_encoder(), 3, label_names=names)


def test_regression_and_multiple_choice_take_no_names():
    with pytest.raises(ValueError, match="num_classes=1 is regression"):
        BertClassifier(tiny_encoder(), 1, label_names=["score"])
    # Its classes are the positions of each question's own choices: nothing to name.
    with pytest.raises(TypeError, match="unknown keyword argument 'label_names'"):
        BertMultipleChoice(tiny_encoder(), num_choices=2, label_names=["a", "b"])


def test_the_setter_checks_and_the_serving_adapter_names_by_default():
    model = _classifier()
    assert task_adapters.for_model(model).label_names is None
    model.label_names = np.array(NAMES)  # numpy strings are names too
    assert model.label_names == NAMES and type(model.label_names[0]) is str
    with pytest.raises(ValueError, match="label_names has 1 names"):
        model.label_names = ["one"]
    assert model.label_names == NAMES  # a refused value changes nothing
    assert task_adapters.for_model(model).label_names == NAMES
    override = ["bad", "so-so", "good"]
    assert task_adapters.for_model(model, label_names=override).label_names == override
