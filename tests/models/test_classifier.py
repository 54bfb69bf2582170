"""models/classifier.py: BertClassifier's multi-label mode (each class a yes/no of its own:
sigmoid cross-entropy on multi-hot labels, binary accuracy, kept through .keras files and
presets); its single-label and regression modes are tested with the task base
(tests/models/test_task.py) and the exports (tests/export/)."""

import keras
import numpy as np
import pytest

from keras_bert import BertClassifier, BertPreprocessor
from keras_bert.checks import TaskInputError
from tests.models.tiny import NEGATIVE, POSITIVE, TEXT_DEPENDENT, VOCAB, tiny_encoder

TEXTS = POSITIVE[:3] + NEGATIVE[:3]
LABELS = np.array([[1, 0, 1], [1, 0, 0], [1, 1, 0], [0, 1, 0], [0, 1, 1], [0, 0, 0]])


def _multi_label(**kwargs):
    return BertClassifier(tiny_encoder(seed=0, **TEXT_DEPENDENT), 3, multi_label=True,
                          preprocessor=BertPreprocessor(VOCAB, seq_length=16), **kwargs)


def _sigmoid_cross_entropy(logits, labels):
    p = 1 / (1 + np.exp(-logits))
    return -np.mean(labels * np.log(p) + (1 - labels) * np.log(1 - p))


def test_multi_label_loss_and_accuracy_are_per_class():
    model = _multi_label()
    assert not model.regression
    logits = model.predict(TEXTS, verbose=0)
    assert np.ptp(logits) > 0.1  # the classes' logits differ: a per-example loss would show
    got = model.evaluate(TEXTS, LABELS, verbose=0, return_dict=True)
    np.testing.assert_allclose(got["loss"], _sigmoid_cross_entropy(logits, LABELS), rtol=1e-4)
    np.testing.assert_allclose(got["accuracy"], np.mean((logits > 0) == LABELS), atol=1e-6)
    history = model.fit(TEXTS, LABELS, epochs=3, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
    # One class and multi_label: a yes/no classifier, not a regression.
    assert not BertClassifier(tiny_encoder(), 1, multi_label=True).regression


@pytest.mark.parametrize("labels, message", [
    (np.array([0, 1, 2, 0, 1, 2]), r"multi-label labels have shape \(6,\); they are one row per "
                                   r"example with one 0 or 1 per class: \[examples, 3\]"),
    (LABELS[:, :2], r"have shape \(6, 2\)"),
    (np.where(LABELS == 1, 2, 0), r"multi-label label \[0, 0\] is 2.0; each is 0 \(the class "
                                  r"does not apply\) or 1 \(it does\)"),
])
def test_bad_multi_label_labels_are_clear_errors(labels, message):
    model = _multi_label()
    with pytest.raises(TaskInputError, match=message):
        model.fit(TEXTS, labels, verbose=0)


def test_multi_label_is_kept_by_keras_files_and_presets(tmp_path):
    model = _multi_label(label_names=["plot", "acting", "music"])
    assert model.get_config()["multi_label"] is True
    model.save(tmp_path / "model.keras")
    again = keras.saving.load_model(tmp_path / "model.keras")
    assert again.multi_label and again.label_names == ["plot", "acting", "music"]
    assert isinstance(again.loss, keras.losses.BinaryCrossentropy)
    for fmt in ("keras_bert", "huggingface"):
        loaded = BertClassifier.from_preset(model.save_to_preset(str(tmp_path / fmt),
                                                                 format=fmt))
        assert loaded.multi_label and loaded.label_names == ["plot", "acting", "music"], fmt
        np.testing.assert_allclose(loaded.predict(TEXTS, verbose=0),
                                   model.predict(TEXTS, verbose=0), atol=1e-6)
    with pytest.raises(ValueError, match="multi_label must be"):
        BertClassifier(tiny_encoder(), 2, multi_label="yes")
