"""keras_bert/text/truncation.py: a preprocessor called on its own warns once per call when it
cuts texts to seq_length, naming how many, the seq_length and how to keep more; never for
texts that fit (to the last token); nothing in graphs it does not count; counted calls add up
instead of warning."""

import warnings

import pytest
import tensorflow as tf

from keras_bert import (BertMultipleChoicePreprocessor, BertPreprocessor,
                        BertTokenClassifierPreprocessor)
from keras_bert.text import truncation
from keras_bert.text.truncation import CutCounter, TruncationWarning

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "c"]


def _cut_warnings(call):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return [str(w.message) for w in caught if issubclass(w.category, TruncationWarning)]


def test_a_call_that_cuts_warns_once_naming_how_many_and_how_to_keep_more():
    pre = BertPreprocessor(VOCAB, seq_length=6)  # [CLS] + 4 tokens + [SEP]
    texts = ["a b c a b", "a", "a b c a b c a", "a b c"] * 50  # 100 of 200 too long
    got = _cut_warnings(lambda: pre(texts))
    assert len(got) == 1
    assert got[0].startswith("BertPreprocessor: 100 of 200 texts were longer than "
                             "seq_length=6 tokens and were cut to fit")
    assert got[0].endswith("To keep more of each text, pass a larger seq_length, up to the "
                           "encoder's max_position_embeddings (512 for BERT): "
                           "BertPreprocessor(..., seq_length=12) or "
                           "BertPreprocessor.from_preset(..., seq_length=12).")
    pairs = _cut_warnings(lambda: pre((["a b c", "a"], ["c", "c"]), seq_length=6))
    assert len(pairs) == 1 and pairs[0].startswith("BertPreprocessor: 1 of 2 texts")


def test_texts_that_fit_to_the_last_token_give_no_warning():
    pre = BertPreprocessor(VOCAB, seq_length=6)
    assert _cut_warnings(lambda: pre(["a b c a", "a", ""])) == []  # 4 tokens: room for 4
    assert _cut_warnings(lambda: pre((["a b", "a"], ["c", "c c"]))) == []  # 3 + 3 specials
    assert len(_cut_warnings(lambda: pre((["a b"], ["c c"])))) == 1  # 4 tokens: one too many
    assert _cut_warnings(lambda: pre("a b c a")) == []  # unbatched
    assert len(_cut_warnings(lambda: pre("a b c a b"))) == 1


def test_the_other_preprocessors_warn_once_per_call_too():
    tagger = BertTokenClassifierPreprocessor(VOCAB, seq_length=4)  # two pieces of words
    assert _cut_warnings(lambda: tagger([["a", "b"], ["c"]])) == []
    got = _cut_warnings(lambda: tagger([["a", "b", "c"], ["c"], ["a", "a", "a"]]))
    assert len(got) == 1 and "2 of 3 texts" in got[0]
    choices = BertMultipleChoicePreprocessor(VOCAB, seq_length=5)  # [CLS] c [SEP] choice [SEP]
    got = _cut_warnings(lambda: choices((["a", "a b"], [["b", "c"], ["b", "c c"]])))
    assert len(got) == 1 and got[0].startswith("BertMultipleChoicePreprocessor: 2 of 4 texts")


def test_graphs_outside_a_counted_call_add_nothing_and_say_nothing():
    pre = BertPreprocessor(VOCAB, seq_length=4)
    ds = tf.data.Dataset.from_tensor_slices(["a b c a b"] * 4).batch(2).map(pre)
    assert _cut_warnings(lambda: list(ds)) == []
    graph = tf.function(pre).get_concrete_function(tf.TensorSpec([None], tf.string)).graph
    assert not [op for op in graph.get_operations() if "PyFunc" in op.type]


def test_counted_calls_add_up_eagerly_and_in_graphs_instead_of_warning():
    pre = BertPreprocessor(VOCAB, seq_length=4)
    counter = CutCounter()
    with truncation.counting(counter) as outermost:
        assert outermost
        with truncation.counting(CutCounter()) as inner:
            assert not inner  # nested: the outer counter counts
        assert _cut_warnings(lambda: pre(["a b c", "a"])) == []
        ds = tf.data.Dataset.from_tensor_slices(["a b c", "a", "a b"]).batch(2).map(pre)
    list(ds)  # traced while counting: counts whenever it runs
    assert (counter.cut, counter.total, counter.seq_length) == (1 + 1, 2 + 3, 4)
    got = _cut_warnings(lambda: counter.warn("Model.fit()", "Pass a larger seq_length."))
    assert got == ["Model.fit(): 2 of 5 texts were longer than seq_length=4 tokens and were cut "
                   "to fit ([CLS] and [SEP] included; a pair counts as one text): the model "
                   "sees only their first tokens. Pass a larger seq_length."]
    assert (counter.cut, counter.total) == (0, 0)
    assert _cut_warnings(lambda: counter.warn("Model.fit()", "")) == []  # nothing cut


def test_the_advice_is_a_larger_seq_length_up_to_the_encoders_limit():
    assert truncation.how_to_keep_more(128, "BertPreprocessor", "BertClassifier", 512) == (
        "To keep more of each text, pass a larger seq_length, up to 512 (the encoder's "
        "max_position_embeddings): BertClassifier.from_preset(..., seq_length=256), or "
        "model.preprocessor = BertPreprocessor.from_preset(..., seq_length=256).")
    assert "seq_length=384)" in truncation.how_to_keep_more(300, "P", "M", 384)
    assert truncation.how_to_keep_more(512, "P", "M", 512) == (
        "seq_length is already the encoder's max_position_embeddings (512): to keep all of a "
        "long text, split it into parts and predict each.")


@pytest.mark.parametrize("truncator", ["round_robin", "waterfall"])
def test_what_is_counted_is_what_the_packer_cuts(truncator):
    """`overflowing_rows` against the packed rows: a row is cut exactly when it holds fewer
    tokens than its segments."""
    from keras_bert.text.packer import BertPackInputs, overflowing_rows

    packer = BertPackInputs(seq_length=9, truncator=truncator)
    lengths = tf.random.stateless_uniform([64, 2], [1, 2], 0, 7, tf.int32)
    segments = [tf.RaggedTensor.from_row_lengths(tf.fill([tf.reduce_sum(lengths[:, i])], 9),
                                                 lengths[:, i]) for i in range(2)]
    kept = tf.reduce_sum(packer(segments)["input_mask"], axis=1) - 3
    cut = overflowing_rows(segments, 9)
    assert cut.numpy().tolist() == (kept < tf.reduce_sum(lengths, axis=1)).numpy().tolist()
    assert 0 < int(tf.reduce_sum(tf.cast(cut, tf.int32))) < 64
