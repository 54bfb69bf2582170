"""keras_bert/models/pipeline_model.py: predict cuts each batch to its longest sequence where
the outputs have no sequence axis, in order and with the full-length outputs; per-token
outputs keep seq_length. No inputs and empty inputs are the same on every input path of every
task model: x=None and missing labels are clear errors, fit and evaluate on no examples too,
predict on no examples gives outputs of 0 rows. Each call that cuts texts to seq_length warns
exactly once."""

import warnings

import keras
import numpy as np
import pandas as pd
import pytest
import tensorflow as tf

import keras_bert
from keras_bert.checks import TaskInputError
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


# ---------------------------------------------------------------- no inputs, empty inputs
# Every task model, a batch of its raw inputs, its labels (None: the preprocessor makes them)
# and an empty batch in the form it takes. (The reader's tests, tests/text/test_raw_inputs.py,
# turn the empty batch of every text form into the same tensors; the classifier's test below
# runs them all.)
TASKS = {
    "classifier": (lambda: keras_bert.BertClassifier(
        tiny_encoder(), 2, preprocessor=keras_bert.BertPreprocessor(VOCAB, 16)),
        ["a great movie", "dull"], np.array([1, 0]), []),
    "token_classifier": (lambda: keras_bert.BertTokenClassifier(
        tiny_encoder(), 3,
        preprocessor=keras_bert.BertTokenClassifierPreprocessor(VOCAB, seq_length=16)),
        [["paris", "is", "red"], ["the", "cat"]], [[1, 0, 0], [0, 2]], []),
    "span_labeler": (lambda: keras_bert.BertSpanLabeler(
        tiny_encoder(), preprocessor=keras_bert.BertPreprocessor(VOCAB, 16)),
        (["who sat", "who ran"], ["the cat sat", "the dog ran"]),
        {"start_logits": np.array([5, 5]), "end_logits": np.array([5, 5])}, ([], [])),
    "multiple_choice": (lambda: keras_bert.BertMultipleChoice(
        tiny_encoder(), 3,
        preprocessor=keras_bert.BertMultipleChoicePreprocessor(VOCAB, seq_length=8)),
        (["the cat", "the dog"], [["sat", "ran", "red"], ["ran", "sat", "blue"]]),
        np.array([0, 1]), ([], [])),
    "masked_lm": (lambda: keras_bert.BertMaskedLM(
        tiny_encoder(), preprocessor=keras_bert.BertMaskedLMPreprocessor(
            VOCAB, seq_length=16, max_predictions_per_seq=3)),
        ["the cat sat", "the dog ran"], None, []),
    "pretrainer": (lambda: keras_bert.BertPretrainer(
        tiny_encoder(), preprocessor=keras_bert.BertPretrainerPreprocessor(
            VOCAB, seq_length=16, max_predictions_per_seq=3)),
        (["the cat", "the dog"], ["sat", "ran"]), np.array([0, 1]), ([], [])),
}


@pytest.fixture(scope="module", params=sorted(TASKS))
def task(request):
    keras.utils.set_random_seed(0)
    build, x, y, empty = TASKS[request.param]
    return build(), x, y, empty


def _datasets(x, y=None):
    """Batched datasets of ``x`` (and ``y``) with no elements: one that tf.data knows is
    empty, and one whose length it cannot tell (filtered)."""
    def tensor(v):
        if isinstance(v, list) and isinstance(v[0], list) and len({len(r) for r in v}) > 1:
            return tf.ragged.constant(v)
        return tf.constant(v)
    element = tuple(map(tensor, x)) if isinstance(x, tuple) else tensor(x)
    if y is not None:
        element = (element, {k: tensor(v) for k, v in y.items()} if isinstance(y, dict)
                   else tensor(y))
    ds = tf.data.Dataset.from_tensor_slices(element)
    return {"known_empty": ds.take(0).batch(2),
            "unknown_empty": ds.filter(lambda *e: False).batch(2)}


def _packed(model, x):
    segments = model.preprocessor.read_inputs(x, batched=True)
    out = model.preprocessor(segments[0] if len(segments) == 1 else segments)
    return keras.utils.unpack_x_y_sample_weight(out)[0] if isinstance(out, tuple) else out


def _shapes(out):
    """Each output's shape after the batch axis and its dtype, e.g. '(2,) float32'."""
    return tf.nest.map_structure(lambda a: f"{a.shape[1:]} {a.dtype}", out)


def _rows(out):
    return sorted(set(a.shape[0] for a in tf.nest.flatten(out)))


def test_none_is_a_clear_error_in_every_method(task):
    model, x, y, _ = task
    name = type(model).__name__
    for method, call in [("fit", lambda: model.fit(None, None, verbose=0)),
                         ("evaluate", lambda: model.evaluate(None, verbose=0)),
                         ("predict", lambda: model.predict(None, verbose=0)),
                         ("train_on_batch", lambda: model.train_on_batch(None)),
                         ("test_on_batch", lambda: model.test_on_batch(None)),
                         ("predict_on_batch", lambda: model.predict_on_batch(None))]:
        with pytest.raises(TaskInputError, match=rf"^{name}\.{method}\(\) got x=None; pass a "):
            call()
    with pytest.raises(TaskInputError, match=r"fit\(validation_data=\.\.\.\) got x=None"):
        model.fit(x, y, validation_data=(None, None), verbose=0)


def test_missing_labels_are_a_clear_error(task):
    model, x, y, _ = task
    name = type(model).__name__
    if y is None:  # the masked LM's preprocessor makes the labels of raw text
        return
    for method, call in [("fit", lambda: model.fit(x, verbose=0)),
                         ("evaluate", lambda: model.evaluate(x, verbose=0)),
                         ("train_on_batch", lambda: model.train_on_batch(x)),
                         ("test_on_batch", lambda: model.test_on_batch(x))]:
        with pytest.raises(TaskInputError,
                           match=rf"^{name}\.{method}\(\) needs labels: pass y \(got y=None\)"):
            call()
    with pytest.raises(TaskInputError, match=rf"^{name}\.fit\(\) needs labels, but the "
                                             r"dataset's elements hold inputs only"):
        model.fit(_datasets(x)["unknown_empty"], verbose=0)


def test_predict_on_no_examples_gives_no_rows_on_every_input_path(task):
    model, x, y, empty = task
    want = _shapes(model.predict(x, verbose=0))
    forms = {"raw": empty, "packed": {k: v.numpy()[:0] for k, v in _packed(model, x).items()},
             "known_empty_dataset": _datasets(x)["known_empty"]}
    for form, value in forms.items():
        out = model.predict(value, verbose=0)
        assert _rows(out) == [0] and _shapes(out) == want, form
        if form != "known_empty_dataset":
            out = model.predict_on_batch(value)
            assert _rows(out) == [0] and _shapes(out) == want, form


def test_fit_and_evaluate_on_no_examples_are_clear_errors(task):
    model, x, y, empty = task
    name = type(model).__name__
    empty_y = [] if isinstance(y, list) else None if y is None else tf.nest.map_structure(
        lambda a: a[:0], y)
    packed = {k: v.numpy()[:0] for k, v in _packed(model, x).items()}
    for value in (empty, packed):
        for method, call in [
                ("fit", lambda: model.fit(value, empty_y, verbose=0)),
                ("evaluate", lambda: model.evaluate(value, empty_y, verbose=0)),
                ("train_on_batch", lambda: model.train_on_batch(value, empty_y)),
                ("test_on_batch", lambda: model.test_on_batch(value, empty_y))]:
            with pytest.raises(TaskInputError, match=rf"^{name}\.{method}\(\) got no examples: "
                                                     r"x is an empty batch \(0 rows\)\.$"):
                call()
    known_empty = _datasets(x, y)["known_empty"]
    for method in ("fit", "evaluate"):
        with pytest.raises(TaskInputError, match=rf"^{name}\.{method}\(\) got an empty dataset: "
                                                 r"it yields no batches\.$"):
            getattr(model, method)(known_empty, verbose=0)
    with pytest.raises(TaskInputError, match=r"fit\(validation_data=\.\.\.\) got no examples"):
        model.fit(x, y, validation_data=(empty, empty_y), verbose=0)


@pytest.mark.parametrize("form, empty", [
    ("list", []), ("tuple", ()), ("numpy", np.array([])), ("numpy_str", np.array([], str)),
    ("pandas", pd.Series([], dtype=object)), ("tensor", tf.constant([], tf.string)),
    ("pairs", ([], [])), ("numpy_pairs", (np.array([]), np.array([], str))),
    ("tensor_pairs", (tf.constant([], tf.string), tf.constant([], tf.string)))])
def test_a_classifier_takes_an_empty_batch_in_every_text_form(form, empty):
    build, x, y, _ = TASKS["classifier"]
    model = _CLASSIFIER.setdefault("model", build())
    assert model.predict(empty, verbose=0).shape == (0, 2)
    with pytest.raises(TaskInputError, match=r"^BertClassifier\.fit\(\) got no examples"):
        model.fit(empty, [], verbose=0)


_CLASSIFIER = {}


def test_a_dataset_that_turns_out_empty():
    """A dataset of unknown length that yields nothing: predict gives no rows, fit and
    evaluate are errors (after Keras' own warning that the input ran out)."""
    build, x, y, _ = TASKS["classifier"]
    model = _CLASSIFIER.setdefault("model", build())
    assert model.predict(_datasets(x)["unknown_empty"], verbose=0).shape == (0, 2)
    unknown_empty = _datasets(x, y)["unknown_empty"]
    with pytest.warns(UserWarning, match="ran out of data"):
        with pytest.raises(TaskInputError, match=r"^BertClassifier\.fit\(\) got an empty "
                                                 r"dataset: it yielded no batches, so nothing was "
                                                 r"trained\.$"):
            model.fit(unknown_empty, steps_per_epoch=1, verbose=0)
    with pytest.raises(TaskInputError, match=r"^BertClassifier\.evaluate\(\) got an empty "
                                             r"dataset: it yielded no batches"):
        model.evaluate(unknown_empty, verbose=0)
    model.fit(unknown_empty.repeat().take(0).concatenate(
        tf.data.Dataset.from_tensor_slices((x, y)).batch(2)).filter(lambda *e: True),
        steps_per_epoch=1, verbose=0)  # a dataset of unknown length that yields batches trains


def test_validation_split_that_leaves_nothing_is_an_error():
    build, *_ = TASKS["classifier"]
    model = _CLASSIFIER.setdefault("model", build())
    with pytest.raises(TaskInputError, match=r"^validation_split=0\.7 of 3 examples leaves 0 "
                                             r"to train on and 3 to validate on"):
        model.fit(TEXTS[:3], [0, 1, 0], validation_split=0.7, verbose=0)


# ---------------------------------------------------------------- texts cut to seq_length
LONG = ["the cat sat on the red dog and the actor ran", "a great movie",
        "the dog ran and the cat sat and it was fun", "bad plot", "dull"]  # 2 of 5 over 8


def _cut_warnings(call):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return [str(w.message) for w in caught
            if issubclass(w.category, keras_bert.text.truncation.TruncationWarning)]


@pytest.fixture(scope="module")
def short_classifier():
    keras.utils.set_random_seed(0)
    return keras_bert.BertClassifier(tiny_encoder(num_hidden_layers=1), 2,
                                     preprocessor=keras_bert.BertPreprocessor(VOCAB, 8))


def test_each_call_that_cuts_texts_warns_exactly_once(short_classifier):
    """In-memory texts (packed by a traced function, or in tf.data), a dataset, several
    batches and epochs: one warning per call (fit: its first epoch, validation included)."""
    model, labels = short_classifier, [1, 1, 0, 0, 0]
    dataset = tf.data.Dataset.from_tensor_slices(LONG).batch(2)
    calls = {
        "predict()": lambda: model.predict(LONG, batch_size=2, verbose=0),
        "predict() ": lambda: model.predict(dataset, verbose=0),
        "predict_on_batch()": lambda: model.predict_on_batch(LONG),
        "evaluate()": lambda: model.evaluate(LONG, labels, batch_size=2, verbose=0),
        "test_on_batch()": lambda: model.test_on_batch(LONG, labels),
        "fit() (its first epoch)": lambda: model.fit(
            LONG, labels, batch_size=2, epochs=2, verbose=0,
            validation_data=(LONG[:2], labels[:2])),
    }
    for method, call in calls.items():
        got = _cut_warnings(call)
        assert len(got) == 1, (method, got)
        cut = "3 of 7" if method.startswith("fit") else "2 of 5"  # fit: 2 validated, 1 cut
        assert got[0].startswith(f"BertClassifier.{method.strip()}: {cut} texts were longer "
                                 "than seq_length=8 tokens"), got
        assert got[0].endswith("pass a larger seq_length, up to 64 (the encoder's "
                               "max_position_embeddings): BertClassifier.from_preset(..., "
                               "seq_length=16), or model.preprocessor = "
                               "BertPreprocessor.from_preset(..., seq_length=16).")


def test_texts_that_fit_give_no_warning(short_classifier):
    model, texts, labels = short_classifier, LONG[1:2] + LONG[3:], [1, 0, 0]
    assert _cut_warnings(lambda: model.predict(texts, verbose=0)) == []
    assert _cut_warnings(lambda: model.evaluate(texts, labels, verbose=0)) == []


def test_a_tagger_warns_once_for_its_words():
    model = keras_bert.BertTokenClassifier(tiny_encoder(), 3, preprocessor=(
        keras_bert.BertTokenClassifierPreprocessor(VOCAB, seq_length=6)))
    words = [w.split() for w in LONG]
    got = _cut_warnings(lambda: model.predict_words(words))
    assert len(got) == 1 and got[0].startswith("BertTokenClassifier.predict(): 2 of 5 texts")


def test_predict_packs_with_a_preprocessor_set_after_a_first_predict():
    """``model.preprocessor = ...`` (what the truncation warning advises) takes effect at once:
    predict does not keep packing with the preprocessor it traced first."""
    model = keras_bert.BertClassifier(
        tiny_encoder(seed=0, initializer_range=0.2), num_classes=2,
        preprocessor=keras_bert.BertPreprocessor(VOCAB, seq_length=32))
    long_text = [TEXTS[-1]]
    full = model.predict(long_text, verbose=0)
    model.preprocessor = keras_bert.BertPreprocessor(VOCAB, seq_length=4)
    with pytest.warns(UserWarning, match="longer than seq_length=4 tokens"):
        cut = model.predict(long_text, verbose=0)
    assert np.abs(cut - full).max() > 1e-3
    packed = {k: v.numpy() for k, v in model.preprocessor(long_text).items()}
    np.testing.assert_allclose(cut, model.predict(packed, verbose=0), atol=1e-6)
