"""BertSpanLabeler: start/end logits, the original loss, raw (question, context) pairs, and the
task contract (tests/task_harness.py)."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert import BertPreprocessor, BertSpanLabeler
from keras_bert.training import AdamW
from tests.task_harness import check_task
from tiny import VOCAB, tiny_encoder  # tests/models/tiny.py


@pytest.fixture
def model():
    keras.utils.set_random_seed(0)
    model = BertSpanLabeler(tiny_encoder(),
                            preprocessor=BertPreprocessor(VOCAB, seq_length=16,
                                                          truncator="waterfall"))
    model.compile(optimizer=AdamW(learning_rate=3e-3))
    return model


def test_loss_is_the_mean_of_start_and_end_cross_entropy(model):
    x = {k: v.numpy() for k, v in model.preprocessor((tf.constant(["who sat"]),
                                                      tf.constant(["the cat sat"]))).items()}
    y = {"start_logits": np.array([4]), "end_logits": np.array([5])}
    out = model.predict(x, verbose=0)
    ce = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    want = 0.5 * (float(ce(y["start_logits"], out["start_logits"])) +
                  float(ce(y["end_logits"], out["end_logits"])))
    got = model.evaluate(x, y, verbose=0, return_dict=True)["loss"]
    assert got == pytest.approx(want, rel=1e-5)


def test_learns_positions_and_takes_raw_pairs(model):
    questions, contexts = ["who sat", "who ran"] * 4, ["the cat sat", "the dog ran"] * 4
    # [CLS] who sat [SEP] the cat sat [SEP]: the answer "cat" is token 5.
    y = {"start_logits": np.full(8, 5), "end_logits": np.full(8, 5)}
    x = {k: v.numpy() for k, v in model.preprocessor((tf.constant(questions),
                                                      tf.constant(contexts))).items()}
    repeat = lambda a: np.concatenate([a] * 6)  # noqa: E731  fewer, longer epochs
    history = model.fit({k: repeat(v) for k, v in x.items()},
                        {k: repeat(v) for k, v in y.items()}, epochs=5, batch_size=4, verbose=0)
    assert history.history["loss"][-1] < 0.3 * history.history["loss"][0]
    out = model.predict((questions, contexts), verbose=0)
    assert out["start_logits"].shape == (8, 16)
    assert (out["start_logits"].argmax(-1) == 5).all()


def test_task_contract(tmp_path):
    questions, contexts = ["who sat", "who ran", "what is big"], ["the cat sat", "he ran home",
                                                                 "paris is big"]
    spans = {"start_logits": np.array([5, 4, 5]), "end_logits": np.array([5, 4, 5])}  # cat he paris
    check_task(BertSpanLabeler, (questions, contexts), spans, tmp_path=tmp_path,
               output_shape={"start_logits": (3, 16), "end_logits": (3, 16)}, seq_length=16)


def test_a_preprocessor_too_short_for_pairs_is_refused():
    """A span labeler packs (question, context): [CLS] q [SEP] c [SEP] needs 5 tokens."""
    with pytest.raises(ValueError, match=r"BertSpanLabeler packs \(question, context\) pairs, "
                                         r"\[CLS\] q \[SEP\] c \[SEP\]: its preprocessor's "
                                         r"seq_length must be at least 5, got 4"):
        BertSpanLabeler(tiny_encoder(), preprocessor=BertPreprocessor(VOCAB, seq_length=4))
    BertSpanLabeler(tiny_encoder(), preprocessor=BertPreprocessor(VOCAB, seq_length=5))


def test_from_preset_seq_length_is_checked(tmp_path):
    BertSpanLabeler(tiny_encoder(), preprocessor=BertPreprocessor(VOCAB, 16)).save_to_preset(
        str(tmp_path / "p"))
    with pytest.raises(ValueError, match=r"at least 5, got 4"):
        BertSpanLabeler.from_preset(str(tmp_path / "p"), seq_length=4)
    with pytest.raises(ValueError, match=r"BertPreprocessor: seq_length must be at least 3"):
        BertPreprocessor.from_preset(str(tmp_path / "p"), seq_length=2)
