"""BertClassifier: the task contract (tests/task_harness.py) and what its .keras file keeps,
the last block computing [CLS] only, regression. How the Task base takes raw inputs, compiles
and trains is in test_task.py, through this class."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert import BertClassifier, BertPreprocessor
from keras_bert.checks import TaskInputError
from tests import keras_files
from tests.task_harness import check_task
from tiny import NEGATIVE, POSITIVE, VOCAB, feed_forward_rows, tiny_encoder  # tests/models/tiny.py

TEXTS = POSITIVE + NEGATIVE


@pytest.fixture
def model():
    keras.utils.set_random_seed(0)
    return BertClassifier(tiny_encoder(), num_classes=2,
                          preprocessor=BertPreprocessor(VOCAB, seq_length=16))


def _packed(model, texts):
    return {k: v.numpy() for k, v in model.preprocessor(tf.constant(texts)).items()}


def test_task_contract_and_the_keras_file(tmp_path):
    """The harness (no export: tests/export/test_task_export.py exports the classifier), and
    what a .keras file of a trained classifier keeps besides its outputs."""
    texts, labels = POSITIVE[:3] + NEGATIVE[:3], [1, 1, 1, 0, 0, 0]
    check = check_task(BertClassifier, texts, labels, tmp_path=tmp_path, output_shape=(6, 2),
                       num_classes=2, seq_length=16, label_names=["negative", "positive"],
                       atol=1e-6)
    tokens = check.model.preprocessor.tokenizer.get_vocabulary()
    # The vocabulary travels as the tokenizer's asset, not in config.json.
    assert keras_files.assert_vocabulary_is_an_asset(check.keras_file, tokens) == [
        "assets/preprocessor/tokenizer/vocabulary.txt"]
    loaded = check.keras_loaded
    assert loaded.preprocessor.tokenizer.get_vocabulary() == tokens
    assert int(loaded.optimizer.iterations) == int(check.model.optimizer.iterations) == 1
    loaded.fit(texts, labels, epochs=1, verbose=0)  # trains on after loading
    assert int(loaded.optimizer.iterations) == 2
    assert check.preset_loaded.label_names == ["negative", "positive"]


def test_last_block_computes_only_the_cls_row(model):
    """The head reads the pooled output alone, so the last block runs on [CLS] only; the
    logits are those of the full encoder's pooled output."""
    x = _packed(model, ["a great movie", "dull"])
    assert feed_forward_rows(model, x) == [2 * 16, 2]  # block 0: every token; block 1: [CLS]
    pooled = model.encoder(x)["pooled_output"]
    np.testing.assert_allclose(model(x), model.logits(pooled), atol=1e-6)


def test_regression(tmp_path):
    keras.utils.set_random_seed(1)
    model = BertClassifier(tiny_encoder(), num_classes=1,
                           preprocessor=BertPreprocessor(VOCAB, seq_length=16))
    scores = np.linspace(-1, 1, len(TEXTS)).astype("float32")
    history = model.fit(TEXTS, scores, epochs=5, batch_size=4, verbose=0)
    assert set(history.history) == {"loss", "mae"}
    assert model.predict(TEXTS, verbose=0).shape == (len(TEXTS), 1)
    with pytest.raises(TaskInputError, match="not a number"):
        model.fit(TEXTS[:2], ["high", "low"], verbose=0)
    with pytest.raises(TaskInputError, match="finite numbers"):
        model.fit(TEXTS[:2], [0.5, float("nan")], verbose=0)
