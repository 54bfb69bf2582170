"""The Task base through BertClassifier: raw inputs in every form, compile defaults, schedule,
validation, no retracing, .keras round trips, clear errors."""

import keras
import numpy as np
import pandas as pd
import pytest
import tensorflow as tf

from keras_bert import BertClassifier, BertPreprocessor
from keras_bert.checks import TaskInputError
from keras_bert.training import AdamW, LinearWarmupDecay
from tiny import NEGATIVE, POSITIVE, VOCAB, tiny_encoder  # tests/models/tiny.py

TEXTS = POSITIVE + NEGATIVE
LABELS = np.array([1] * len(POSITIVE) + [0] * len(NEGATIVE))


@pytest.fixture
def model():
    keras.utils.set_random_seed(0)
    return BertClassifier(tiny_encoder(), num_classes=2,
                          preprocessor=BertPreprocessor(VOCAB, seq_length=16))


def _packed(model, texts):
    return {k: v.numpy() for k, v in model.preprocessor(tf.constant(texts)).items()}


@pytest.mark.parametrize("form", ["list", "numpy_str", "numpy_object", "pandas", "tensor",
                                  "bytes"])
def test_predict_takes_every_text_form(model, form):
    texts = TEXTS[:5]
    x = {
        "list": texts,
        "numpy_str": np.array(texts),
        "numpy_object": np.array(texts, dtype=object),
        "pandas": pd.Series(texts),
        "tensor": tf.constant(texts),
        "bytes": [t.encode() for t in texts],
    }[form]
    want = model.predict(_packed(model, texts), verbose=0)
    np.testing.assert_allclose(model.predict(x, verbose=0), want, atol=1e-6)


def test_pairs_tuple_and_list_of_pairs_agree(model):
    a, b = TEXTS[:4], TEXTS[4:8]
    packed = {k: v.numpy() for k, v in model.preprocessor((tf.constant(a), tf.constant(b))).items()}
    want = model.predict(packed, verbose=0)
    np.testing.assert_allclose(model.predict((a, b), verbose=0), want, atol=1e-6)
    np.testing.assert_allclose(model.predict([[x, y] for x, y in zip(a, b)], verbose=0), want,
                               atol=1e-6)


def test_fit_learns_and_evaluate_takes_raw_text(model):
    model.compile(optimizer=AdamW(learning_rate=3e-3))  # loss and metrics stay "auto"
    before = model.evaluate(TEXTS, LABELS, verbose=0, return_dict=True)
    history = model.fit(TEXTS * 6, np.concatenate([LABELS] * 6), epochs=5, batch_size=4,
                        verbose=0)
    after = model.evaluate(TEXTS, LABELS, verbose=0, return_dict=True)
    assert history.history["loss"][-1] < history.history["loss"][0]
    # Thread scheduling changes float sums on other machines, so the bar is "clearly learned",
    # not an exact score: half the starting loss and at most 2 of 16 wrong.
    assert after["loss"] < 0.5 * before["loss"] and after["accuracy"] >= 0.875


def test_fit_on_dataset_of_raw_text_and_validation(model):
    ds = tf.data.Dataset.from_tensor_slices((TEXTS, LABELS)).shuffle(16, seed=1).batch(4)
    history = model.fit(ds, validation_data=(TEXTS[:4], LABELS[:4]), epochs=2, verbose=0)
    assert set(history.history) == {"loss", "accuracy", "val_loss", "val_accuracy"}
    history = model.fit(TEXTS, LABELS, validation_split=0.25, epochs=1, verbose=0)
    assert "val_accuracy" in history.history


def test_fit_on_packed_dicts_without_preprocessor(model):
    packed = _packed(model, TEXTS)
    model.preprocessor = None
    history = model.fit(packed, LABELS, epochs=2, verbose=0)
    assert len(history.history["loss"]) == 2
    with pytest.raises(TaskInputError, match="has no preprocessor"):
        model.predict(TEXTS, verbose=0)


def test_compile_defaults_are_the_bert_recipe(model):
    assert isinstance(model.optimizer, AdamW)
    assert model.optimizer.weight_decay == 0.01 and model.optimizer.global_clipnorm == 1.0
    schedule = model.optimizer.learning_rate_schedule
    assert isinstance(schedule, LinearWarmupDecay) and schedule.peak_learning_rate == 5e-5
    model.fit(TEXTS, LABELS, epochs=3, batch_size=4, verbose=0)
    # 16 texts / 4 = 4 steps an epoch, 3 epochs: decays to 0 at step 12, 10% warm-up.
    assert (schedule.num_train_steps, schedule.num_warmup_steps) == (12, 1)
    assert int(model.optimizer.iterations) == 12
    assert float(model.optimizer.learning_rate) == 0.0
    model.fit(TEXTS, LABELS, epochs=1, batch_size=4, verbose=0)  # a later fit extends it
    assert schedule.num_train_steps == 16


def test_length_grouping_and_trimming_change_no_result(model):
    """Trimmed batches give the same logits as full-length ones."""
    packed = _packed(model, TEXTS)
    full = model(packed, training=False)
    short = {k: v[:, :8] for k, v in packed.items()}
    assert packed["input_mask"][:, 8:].sum() == 0
    np.testing.assert_allclose(model(short, training=False), full, atol=1e-5)


def test_predict_does_not_retrace(model):
    # Keras traces predict_function for the first batch shape, then once more with the batch
    # dimension left open (reduce_retracing); after that, no call traces again.
    model.predict(TEXTS[:3], verbose=0)
    model.predict(TEXTS[:2], verbose=0)
    (preprocess,) = model._preprocess_functions.values()
    traces = (preprocess.experimental_get_tracing_count(),
              model.predict_function.experimental_get_tracing_count())
    for n in (1, 5, 10, 10, 7):
        model.predict(TEXTS[:n], verbose=0)
    assert len(model._preprocess_functions) == 1
    assert (preprocess.experimental_get_tracing_count(),
            model.predict_function.experimental_get_tracing_count()) == traces


@pytest.mark.parametrize("x, y, message", [
    (TEXTS[:2], [0, 2], r"label 1 is 2, outside \[0, 2\)"),
    (TEXTS[:2], [0, -1], r"label 1 is -1, outside"),
    (TEXTS[:2], [0.5, 1], "whole numbers"),
    (TEXTS[:2], [0], "same number of rows"),
    (TEXTS[:2], ["pos", "neg"], "not a number"),
    ("a great movie", [1], "single string"),
    ((TEXTS[:2], TEXTS[:3]), [0, 1], "the batch sizes differ: texts_a has 2, texts_b has 3"),
    ([["a", "b", "c"], ["d", "e"]], [0, 1], "items hold 2 or 3 texts"),
    ([1, 2], [0, 1], "holds int value 1 among its texts"),
])
def test_bad_inputs_have_clear_errors(model, x, y, message):
    with pytest.raises((TaskInputError, ValueError), match=message):
        model.fit(x, y, verbose=0)


def test_labels_out_of_range_in_a_dataset(model):
    ds = tf.data.Dataset.from_tensor_slices((TEXTS[:4], [0, 1, 5, 1])).batch(4)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"class labels must be in \[0, 2\)"):
        model.fit(ds, verbose=0)


def test_unbatched_dataset_is_refused(model):
    ds = tf.data.Dataset.from_tensor_slices((TEXTS[:4], [0, 1, 0, 1]))
    with pytest.raises(TaskInputError, match="must be batched"):
        model.fit(ds, verbose=0)


def test_preprocessor_that_does_not_fit_the_encoder():
    with pytest.raises(ValueError, match=r"vocabulary has 36 tokens but the encoder's "
                                         r"vocab_size is 99"):
        BertClassifier(tiny_encoder(vocab_size=99), 2,
                       preprocessor=BertPreprocessor(VOCAB[:36], seq_length=16))
    with pytest.raises(ValueError, match=r"seq_length=128 tokens, but the encoder takes at most "
                                         r"max_position_embeddings=64"):
        BertClassifier(tiny_encoder(), 2, preprocessor=BertPreprocessor(VOCAB, seq_length=128))


def test_unknown_constructor_argument():
    with pytest.raises(TypeError, match=r"BertClassifier\(\) got unknown keyword argument "
                                        r"'dropuot' \(did you mean 'dropout'\?\)"):
        BertClassifier(tiny_encoder(), 2, dropuot=0.2)


def test_from_preset_with_fewer_layers_than_the_checkpoint_is_an_error(tmp_path):
    """Overriding num_hidden_layers below the checkpoint's dropped the extra layers silently."""
    from keras_bert import BertEncoder
    from keras_bert.checkpoints.common import CheckpointError

    tiny_encoder().save_to_preset(str(tmp_path / "p"))
    layers = tiny_encoder().bert_config.num_hidden_layers
    for load in (lambda: BertEncoder.from_preset(str(tmp_path / "p"),
                                                 num_hidden_layers=layers - 1),
                 lambda: BertClassifier.from_preset(str(tmp_path / "p"), num_classes=2,
                                                    num_hidden_layers=layers - 1,
                                                    preprocessor=None)):
        with pytest.raises(CheckpointError, match=rf"layer_{layers - 1}/.*config says "
                                                  rf"num_hidden_layers={layers - 1}"):
            load()
