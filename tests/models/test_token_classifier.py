"""BertTokenClassifier: word labels on first pieces, ignored pieces, predict_words, and the
task contract (tests/task_harness.py)."""

import keras
import numpy as np
import pytest

from keras_bert import BertTokenClassifier, BertTokenClassifierPreprocessor
from keras_bert.checks import TaskInputError
from keras_bert.training import AdamW
from tests.task_harness import check_task
from tiny import VOCAB, tiny_encoder  # tests/models/tiny.py

# Tags: 0 other, 1 city, 2 animal.
WORDS = [["paris", "is", "red"], ["the", "cat", "sat"], ["london", "and", "paris"],
         ["a", "dog", "ran"], ["the", "cats", "sat", "in", "london"], ["dogs", "ran"]]
TAGS = [[1, 0, 0], [0, 2, 0], [1, 0, 1], [0, 2, 0], [0, 2, 0, 0, 1], [2, 0]]


@pytest.fixture
def model():
    keras.utils.set_random_seed(0)
    model = BertTokenClassifier(
        tiny_encoder(), num_classes=3,
        preprocessor=BertTokenClassifierPreprocessor(VOCAB, seq_length=12))
    model.compile(optimizer=AdamW(learning_rate=3e-3))
    return model


def test_learns_word_tags_and_predicts_per_word(model):
    history = model.fit(WORDS * 8, TAGS * 8, epochs=5, batch_size=3, verbose=0)  # few epochs: each
    # epoch starts a new tf.data iterator, which costs far more than these tiny steps
    assert history.history["loss"][-1] < 0.5 * history.history["loss"][0]
    assert model.predict_words(WORDS) == TAGS
    assert model.predict(WORDS, verbose=0).shape == (6, 12, 3)


def test_loss_ignores_continuation_pieces_and_specials(model):
    """'cats' is two pieces (cat ##s): only the first carries the label; changing the label a
    continuation piece would get changes nothing."""
    x, y, w = model.preprocessor(*(_ragged(WORDS[4:5]), _ragged(TAGS[4:5], "int32")))
    ids = x["input_word_ids"].numpy()[0].tolist()
    assert ids[:8] == [2, VOCAB.index("the"), VOCAB.index("cat"), VOCAB.index("##s"),
                       VOCAB.index("sat"), 1, VOCAB.index("london"), 3]
    assert w.numpy()[0].tolist()[:8] == [0, 1, 1, 0, 1, 1, 1, 0]
    assert y.numpy()[0].tolist()[:8] == [0, 0, 2, 0, 0, 0, 1, 0]


def test_texts_split_on_whitespace_equal_word_lists(model):
    a = model.predict([" ".join(w) for w in WORDS], verbose=0)
    np.testing.assert_allclose(a, model.predict(WORDS, verbose=0), atol=1e-6)


def test_task_contract_and_word_predictions_after_loading(tmp_path):
    """fit=False: test_learns_word_tags_and_predicts_per_word fits on raw words."""
    check = check_task(BertTokenClassifier, WORDS, TAGS, tmp_path=tmp_path, fit=False,
                       output_shape=(6, 12, 3), num_classes=3, seq_length=12)
    want = check.model.predict_words(WORDS)
    assert [len(tags) for tags in want] == [len(words) for words in WORDS]
    assert check.keras_loaded.predict_words(WORDS) == want
    assert check.preset_loaded.predict_words(WORDS) == want


@pytest.mark.parametrize("words, tags, error, message", [
    (WORDS[:2], [[1, 0, 3], [0, 0, 0]], TaskInputError, r"word label 2 is 3, outside \[0, 3\)"),
    (WORDS[:2], [[1, 0], [0, 2, 0]], Exception, "one label per word"),
    ((WORDS[0], WORDS[1]), TAGS[:2], TaskInputError, "sentence-pair form"),
    ([["paris", 3]], [[1, 0]], TaskInputError, "list of word lists"),
    (WORDS[:2], [["city", "o", "o"], [0, 0, 0]], TaskInputError, "one class id per word"),
])
def test_bad_inputs(model, words, tags, error, message):
    with pytest.raises(error, match=message):
        model.fit(words, tags, verbose=0)


def _ragged(rows, dtype="string"):
    import tensorflow as tf

    return tf.ragged.constant(rows, dtype=dtype)
