"""keras_bert/text/raw_inputs.py, the one reader of raw input: every form of every task reads
to the same tensors, eagerly and in a graph; everything else is one error type
(`TaskInputError`, a ValueError and a TypeError) naming the segment, the row or the type and
listing the forms; the preprocessors and the task models answer from it."""

import numpy as np
import pandas as pd
import pytest
import tensorflow as tf

import keras_bert
from keras_bert.checks import TaskInputError
from keras_bert.text.raw_inputs import (CHOICES, COLUMNS, WORDS, RawInputReader, accepted,
                                        read_raw_inputs, read_word_labels)

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "c"]


def _values(tensors):
    return [t.to_list() if isinstance(t, tf.RaggedTensor) else np.asarray(t).tolist()
            for t in tensors]


@pytest.mark.parametrize("x", [
    ["a b", "c"], ("a b", "c"), np.array(["a b", "c"]), np.array(["a b", "c"], dtype=object),
    pd.Series(["a b", "c"]), tf.constant(["a b", "c"]), [b"a b", b"c"]])
def test_every_form_of_a_batch_of_texts_is_one_segment(x):
    if isinstance(x, tuple):  # a tuple is segments: two single strings, unbatched
        assert _values(read_raw_inputs(x)) == [b"a b", b"c"]
        return
    assert _values(read_raw_inputs(x)) == [[b"a b", b"c"]]
    assert _values(read_raw_inputs(x, batched=True)) == [[b"a b", b"c"]]


@pytest.mark.parametrize("x", [
    (["q1", "q2"], ["c1", "c2"]), [["q1", "c1"], ["q2", "c2"]], [("q1", "c1"), ("q2", "c2")],
    [tf.constant(["q1", "q2"]), tf.constant(["c1", "c2"])],
    (np.array(["q1", "q2"]), pd.Series(["c1", "c2"]))])
def test_every_form_of_pairs_is_two_segments(x):
    assert _values(read_raw_inputs(x, batched=True)) == [[b"q1", b"q2"], [b"c1", b"c2"]]


def test_a_single_string_is_read_unbatched_but_fit_takes_batches():
    assert _values(read_raw_inputs("a b")) == [b"a b"]
    assert _values(read_raw_inputs(("a", "b"))) == [b"a", b"b"]
    for x, name in (("a b", "texts"), (("a", "b"), "texts_a"), (tf.constant("a"), "texts")):
        with pytest.raises(TaskInputError, match=rf"^BertPreprocessor {name} is a single "
                                                 r"string; fit/evaluate/predict take a batch: "
                                                 r"wrap it in a list, e\.g\. \["):
            read_raw_inputs(x, batched=True)


@pytest.mark.parametrize("x, error", [
    ((["a", "b"], ["c", 3]), r"texts_b holds int value 3 among its texts \(at row 1; 1 such "
                             r"entry\)"),
    ([None, "a"], r"texts holds NoneType value None among its texts \(at row 0"),
    (np.array([1.5, 2.0]), r"texts must be strings \(tf\.string\), got dtype float64"),
    (tf.constant([[b"a"]]), r"texts must be a string or a batch of strings \[batch\], got "
                            r"shape \(1, 1\)"),
    ((["a"], ["b", "c"]), r"BertPreprocessor: the batch sizes differ: texts_a has 1, texts_b "
                          r"has 2\."),
    ([["a", "b", "c"], ["a"]], r"got a list of lists, read as a batch of pairs or triples, but "
                               r"the items hold 1 or 3 texts"),
    (7, r"texts must be text \(str or bytes\), got int 7"),
])
def test_what_it_cannot_read_is_one_error_naming_the_problem_and_the_forms(x, error):
    with pytest.raises(TaskInputError, match=error) as caught:
        read_raw_inputs(x)
    assert isinstance(caught.value, ValueError) and isinstance(caught.value, TypeError)
    if "batch sizes differ" not in error:  # (the graph assertion's words, eagerly)
        assert str(caught.value).endswith(f"BertPreprocessor takes {accepted()}.")


def test_a_graph_reads_the_same_and_asserts_what_the_trace_cannot_tell():
    spec = tf.TensorSpec([None], tf.string)
    read = tf.function(lambda a, b: read_raw_inputs((a, b))[1], input_signature=[spec, spec])
    assert read(tf.constant(["a"]), tf.constant(["b"])).numpy().tolist() == [b"b"]
    with pytest.raises(tf.errors.InvalidArgumentError, match="the batch sizes differ"):
        read(tf.constant(["a", "a"]), tf.constant(["b"]))
    with pytest.raises(TaskInputError, match="texts_b must be strings"):  # while tracing
        tf.function(lambda a: read_raw_inputs((a, tf.constant([1]))))(tf.constant(["a"]))


@pytest.mark.parametrize("x", [
    [["Paris", "is", "big"], ["a"]], ["Paris is  big", " a "], np.array(["Paris is big", "a"]),
    pd.Series(["Paris is big", "a"]), tf.constant(["Paris is big", "a"]),
    tf.ragged.constant([["Paris", "is", "big"], ["a"]]),
    [np.array(["Paris", "is", "big"]), ("a",)]])
def test_every_form_of_words_is_ragged_words(x):
    assert _values(read_raw_inputs(x, WORDS, batched=True)) == [
        [[b"Paris", b"is", b"big"], [b"a"]]]


def test_words_in_a_graph_and_what_words_cannot_be():
    split = tf.function(lambda t: read_raw_inputs(t, WORDS)[0].to_tensor(),
                        input_signature=[tf.TensorSpec([None], tf.string)])
    assert split(tf.constant(["a b", "c"])).numpy().tolist() == [[b"a", b"b"], [b"c", b""]]
    for x, error in [
            ((["a"], ["b"]), "a tuple is the sentence-pair form"),
            ([["a", 3]], "row 0 of the words holds int value 3; every word must be a str"),
            (["a", ["b"]], "row 0 of the words is str 'a', while others are word lists"),
            (tf.ragged.constant([[1]]), r"words must be strings \(tf\.string\), got dtype int32"),
            ("a b", "words is a single string")]:
        with pytest.raises(TaskInputError, match=error) as caught:
            read_raw_inputs(x, WORDS, where="BertTokenClassifierPreprocessor")
        assert "takes a list of word lists" in str(caught.value)


@pytest.mark.parametrize("x", [
    (["he"], [["ran", "sat"]]), [["he"], [["ran", "sat"]]], (np.array(["he"]), np.array(
        [["ran", "sat"]])), (tf.constant(["he"]), tf.constant([["ran", "sat"]]))])
def test_every_form_of_contexts_and_choices(x):
    assert _values(read_raw_inputs(x, CHOICES, batched=True)) == [[b"he"],
                                                                   [[b"ran", b"sat"]]]


def test_choices_alone_and_what_choices_cannot_be():
    assert _values(read_raw_inputs([["ran", "sat"]], CHOICES)) == [[[b"ran", b"sat"]]]
    for x, error in [
            ((["he"], ["ran", "sat"]), r"choices must be \[batch, num_choices\] strings, got "
                                       r"shape \(2,\)"),
            ([["ran", "sat"], ["ran"]], r"its rows hold 1 or 2 texts"),
            ((["he", "she"], [["ran", "sat"]]), "contexts and choices need the same batch size: "
                                                "contexts has 2, choices has 1"),
            ((["a"], ["b"], [["c"]]), r"takes \(contexts, choices\) or choices, got 3 parts")]:
        with pytest.raises(TaskInputError, match=error):
            read_raw_inputs(x, CHOICES, where="BertMultipleChoicePreprocessor")


@pytest.mark.parametrize("x", [
    (["q1", "q2"], ["d1", "d2"], ["n1", "n2"]), [["q1", "d1", "n1"], ["q2", "d2", "n2"]],
    [tf.constant(["q1", "q2"]), tf.constant(["d1", "d2"]), tf.constant(["n1", "n2"])]])
def test_columns_read_as_texts_read_segments_but_are_named_as_columns(x):
    """An embedder's (anchors, positives, negatives): the forms of segments, another meaning
    (each text is embedded alone), and messages that name the columns."""
    assert _values(read_raw_inputs(x, COLUMNS, batched=True)) == [
        [b"q1", b"q2"], [b"d1", b"d2"], [b"n1", b"n2"]]
    assert _values(read_raw_inputs(["a", "b"], COLUMNS, batched=True)) == [[b"a", b"b"]]
    where = "BertTextEmbedderPreprocessor"
    for bad, error in [
            ((["q1"], ["d1", "d2"]), r"the batch sizes differ: anchors has 1, positives has 2"),
            ((["q1"], ["d1"], [3]), r"negatives holds int value 3 among its texts"),
            ((["q"], ["d"], ["n"], ["m"]), r"takes 1 to 3 columns, got 4"),
            (("q", ["d"]), r"columns must be all strings or all batches")]:
        with pytest.raises(TaskInputError, match=error) as caught:
            read_raw_inputs(bad, COLUMNS, where=where)
        if "batch sizes" not in error:
            assert str(caught.value).endswith(f"{where} takes {accepted(COLUMNS)}.")
            assert "(anchors, positives, negatives)" in str(caught.value)


@pytest.mark.parametrize("form, empty, shapes", [
    (WORDS, [], [(0, None)]), (WORDS, np.array([]), [(0, None)]),
    (CHOICES, ([], []), [(0,), (0, 0)]), (CHOICES, (), [(0,), (0, 0)])])
def test_an_empty_batch_of_words_or_choices_has_no_rows(form, empty, shapes):
    got = read_raw_inputs(empty, form, batched=True)
    assert [tuple(t.shape) for t in got] == shapes and all(t.dtype == tf.string for t in got)


def test_word_labels_one_per_word():
    assert read_word_labels([[1, 0, 2], [0]]).to_list() == [[1, 0, 2], [0]]
    assert read_word_labels(np.array([[1, 0]])).to_list() == [[1, 0]]
    assert read_word_labels(tf.constant([[1, 0]], tf.int64)).dtype == tf.int32
    assert read_word_labels([[0.5]], dtype=tf.float32).to_list() == [[0.5]]
    assert read_word_labels([]).shape[0] == 0
    with pytest.raises(TaskInputError, match=r"row 1 of the word labels is \['city'\]; give "
                                             "one class id per word"):
        read_word_labels([[1], ["city"]])


def test_each_preprocessor_and_task_model_answers_from_the_reader():
    """The preprocessor names its form; a task model's message of what it takes is its
    preprocessor's (with packed inputs and datasets)."""
    forms = {keras_bert.BertPreprocessor: "texts", keras_bert.BertMaskedLMPreprocessor: "texts",
             keras_bert.BertPretrainerPreprocessor: "texts",
             keras_bert.BertTokenClassifierPreprocessor: WORDS,
             keras_bert.BertMultipleChoicePreprocessor: CHOICES,
             keras_bert.BertTextEmbedderPreprocessor: COLUMNS}
    for cls, form in forms.items():
        assert issubclass(cls, RawInputReader) and cls.input_form == form
    encoder = keras_bert.BertEncoder(keras_bert.BertConfig(
        vocab_size=len(VOCAB), hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=16))
    tagger = keras_bert.BertTokenClassifier(
        encoder, 2, preprocessor=keras_bert.BertTokenClassifierPreprocessor(VOCAB, 8))
    assert tagger.accepted_inputs.startswith(accepted(WORDS) + "; a dict of packed inputs")
    with pytest.raises(TaskInputError, match="a tuple is the sentence-pair form"):
        tagger.predict((["a"], ["b"]), verbose=0)
