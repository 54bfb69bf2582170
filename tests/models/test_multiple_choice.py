"""BertMultipleChoice: choices folded through the encoder, raw (context, choices) input, and
the task contract (tests/task_harness.py)."""

import keras
import numpy as np
import pytest

from keras_bert import BertMultipleChoice, BertMultipleChoicePreprocessor
from keras_bert.checks import TaskInputError
from keras_bert.training import AdamW
from tests.task_harness import check_task
from tiny import VOCAB, tiny_encoder  # tests/models/tiny.py

CONTEXTS = ["the cat", "the dog", "paris is", "london is"] * 2
CHOICES = [["sat", "ran", "red"], ["ran", "sat", "blue"], ["red", "sat", "ran"],
           ["blue", "ran", "sat"]] * 2
ANSWERS = [0, 0, 0, 0] * 2


@pytest.fixture
def model():
    keras.utils.set_random_seed(0)
    model = BertMultipleChoice(tiny_encoder(), num_choices=3,
                               preprocessor=BertMultipleChoicePreprocessor(VOCAB, seq_length=8))
    model.compile(optimizer=AdamW(learning_rate=3e-3))
    return model


def test_each_choice_is_scored_on_its_own(model):
    """Swapping two choices swaps their logits: no choice sees another."""
    logits = model.predict((CONTEXTS[:1], CHOICES[:1]), verbose=0)
    swapped = model.predict((CONTEXTS[:1], [[CHOICES[0][1], CHOICES[0][0], CHOICES[0][2]]]),
                            verbose=0)
    np.testing.assert_allclose(swapped[0], logits[0][[1, 0, 2]], atol=1e-5)


def test_learns(model):
    history = model.fit((CONTEXTS * 6, CHOICES * 6), np.concatenate([ANSWERS] * 6), epochs=5,
                        batch_size=4, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
    assert model.predict((CONTEXTS, CHOICES), verbose=0).shape == (8, 3)


def test_task_contract(tmp_path):
    """fit=False: test_learns fits on raw (context, choices)."""
    check_task(BertMultipleChoice, (CONTEXTS[:4], CHOICES[:4]), ANSWERS[:4], tmp_path=tmp_path,
               fit=False, output_shape=(4, 3), num_choices=3, seq_length=8)


def test_bad_labels(model):
    with pytest.raises(TaskInputError, match=r"choice label 1 is 3, outside \[0, 3\)"):
        model.fit((CONTEXTS[:2], CHOICES[:2]), [0, 3], verbose=0)
