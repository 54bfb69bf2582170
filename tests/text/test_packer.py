"""BertPackInputs: [CLS]/[SEP] layout, truncation, shapes, dense and ragged inputs."""

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.text import BertPackInputs


def _packer(**kwargs):
    return BertPackInputs(start_of_sequence_id=2, end_of_segment_id=3, padding_id=0, **kwargs)


def test_single_segment_and_padding():
    out = _packer(seq_length=6)(tf.ragged.constant([[7, 8], [9, 10, 11, 12, 13, 14, 15]]))
    assert out["input_word_ids"].numpy().tolist() == [[2, 7, 8, 3, 0, 0], [2, 9, 10, 11, 12, 3]]
    assert out["input_mask"].numpy().tolist() == [[1, 1, 1, 1, 0, 0], [1] * 6]
    assert out["input_type_ids"].numpy().tolist() == [[0] * 6, [0] * 6]
    assert all(v.dtype == tf.int32 for v in out.values())


def test_round_robin_matches_bert_truncate_seq_pair():
    def truncate_seq_pair(a, b, max_length):  # google-research/bert run_classifier.py
        a, b = list(a), list(b)
        while len(a) + len(b) > max_length:
            (a if len(a) > len(b) else b).pop()
        return a, b

    rng = np.random.default_rng(0)
    packer = _packer(seq_length=16)
    for _ in range(20):
        la, lb = rng.integers(0, 20, size=2)
        a, b = list(range(100, 100 + la)), list(range(200, 200 + lb))
        ta, tb = truncate_seq_pair(a, b, 16 - 3)
        out = packer([tf.ragged.constant([a], dtype=tf.int32),
                      tf.ragged.constant([b], dtype=tf.int32)])
        want = [2] + ta + [3] + tb + [3]
        want += [0] * (16 - len(want))
        assert out["input_word_ids"].numpy()[0].tolist() == want


def test_waterfall_three_segments_and_per_call_length():
    packer = _packer(seq_length=10, truncator="waterfall")
    a = tf.ragged.constant([[10, 11, 12, 13, 14]])
    b = tf.ragged.constant([[20, 21, 22]])
    c = tf.ragged.constant([[30]])
    out = packer([a, b, c])
    assert out["input_word_ids"].numpy().tolist() == [[2, 10, 11, 12, 13, 14, 3, 20, 3, 3]]
    assert out["input_type_ids"].numpy().tolist() == [[0, 0, 0, 0, 0, 0, 0, 1, 1, 2]]
    longer = packer([a, b, c], seq_length=16)
    assert longer["input_word_ids"].shape == (1, 16)
    assert longer["input_word_ids"].numpy()[0, :13].tolist() == [
        2, 10, 11, 12, 13, 14, 3, 20, 21, 22, 3, 30, 3]


def test_dense_unbatched_empty_and_errors():
    packer = _packer(seq_length=5)
    dense = packer(tf.constant([[7, 8, 9, 10, 11, 12]]))
    assert dense["input_word_ids"].numpy().tolist() == [[2, 7, 8, 9, 3]]
    single = packer(tf.constant([7, 8]))
    assert single["input_word_ids"].numpy().tolist() == [2, 7, 8, 3, 0]
    empty = packer(tf.ragged.constant([], dtype=tf.int32, ragged_rank=1, inner_shape=()))
    assert empty["input_word_ids"].shape == (0, 5)
    with pytest.raises(ValueError, match="1 to 3"):
        packer([tf.constant([[1]])] * 4)
    with pytest.raises(ValueError, match="seq_length must be at least 5"):
        _packer(seq_length=4)([tf.constant([[1]]), tf.constant([[1]])])
    with pytest.raises(ValueError, match="truncator"):
        _packer(truncator="middle")


def test_config_round_trip():
    packer = _packer(seq_length=9, truncator="waterfall")
    clone = BertPackInputs.from_config(packer.get_config())
    assert clone.get_config() == packer.get_config()


def _reference_pack(segments, seq_length, truncator):
    """tensorflow-text's own trimmer + combine_segments + pad_model_inputs."""
    import tensorflow_text as tf_text

    budget = seq_length - len(segments) - 1
    trimmer = (tf_text.RoundRobinTrimmer if truncator == "round_robin"
               else tf_text.WaterfallTrimmer)(max_seq_length=budget)
    ids, types = tf_text.combine_segments(trimmer.trim(segments), 2, 3)
    ids, mask = tf_text.pad_model_inputs(ids, max_seq_length=seq_length, pad_value=0)
    types, _ = tf_text.pad_model_inputs(types, max_seq_length=seq_length, pad_value=0)
    return {"input_word_ids": ids, "input_mask": mask, "input_type_ids": types}


@pytest.mark.parametrize("truncator", ["round_robin", "waterfall"])
def test_same_as_tensorflow_text(truncator):
    """Our length arithmetic gives what tensorflow-text's trimmers and combiner give."""
    rng = np.random.default_rng(1)
    for case in range(60):
        k = 1 + case % 3
        seq_length = int(rng.integers(2 * k + 1, 14))
        segments = [
            tf.ragged.constant(
                [list(range(10 * (j + 1), 10 * (j + 1) + int(rng.integers(0, 12))))
                 for _ in range(4)], dtype=tf.int32, ragged_rank=1, inner_shape=())
            for j in range(k)
        ]
        got = _packer(seq_length=seq_length, truncator=truncator)(segments)
        want = _reference_pack(segments, seq_length, truncator)
        for key in want:
            np.testing.assert_array_equal(got[key], want[key], err_msg=f"{key} case {case}")


SEGMENT_A = tf.ragged.constant([[5, 6], [7]])
SEGMENT_B = tf.ragged.constant([[8]])


def test_batch_sizes_that_differ_are_an_error_eagerly():
    """Once tensorflow-text returned process memory as ids (or crashed) for these."""
    with pytest.raises(ValueError, match="batch sizes differ: segment 1 has 2, segment 2 has 1"):
        _packer(seq_length=8)([SEGMENT_A, SEGMENT_B])
    with pytest.raises(ValueError, match="segment 1 has 2, segment 2 has 2, segment 3 has 1"):
        _packer(seq_length=8)([SEGMENT_A, SEGMENT_A, SEGMENT_B])


def test_batch_sizes_that_differ_in_a_graph():
    packer = _packer(seq_length=8)
    # Static shapes tell while tracing: ValueError.
    with pytest.raises(ValueError, match="segment 1 has 2, segment 2 has 1"):
        tf.function(lambda a, b: packer([a, b]))(SEGMENT_A, SEGMENT_B)
    # Unknown while tracing: the assertion, before any packing op.
    spec = tf.RaggedTensorSpec([None, None], tf.int32)
    traced = tf.function(lambda a, b: packer([a, b]), input_signature=[spec, spec])
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"batch sizes differ: segment 1 has\] \[2\] \[, segment 2 has\] \[1\]"):
        traced(SEGMENT_A, SEGMENT_B)
    np.testing.assert_array_equal(traced(SEGMENT_A, SEGMENT_A)["input_word_ids"],
                                  packer([SEGMENT_A, SEGMENT_A])["input_word_ids"])
    ds = tf.data.Dataset.from_generator(
        lambda: iter([(SEGMENT_A, SEGMENT_B)]), output_signature=(spec, spec))
    with pytest.raises(tf.errors.InvalidArgumentError, match="batch sizes differ"):
        list(ds.map(lambda a, b: packer([a, b])))


def test_bad_ranks_and_dtypes():
    packer = _packer(seq_length=8)
    per_word = tf.ragged.constant([[[5, 6], [7]], [[8]]])  # ragged_rank 2
    with pytest.raises(ValueError, match=r"segment 1 must be \[batch, \(tokens\)\].*merge_dims"):
        packer(per_word)
    with pytest.raises(ValueError, match=r"segment 1 must be \[batch, tokens\].*\(1, 2, 3\)"):
        packer(tf.zeros([1, 2, 3], tf.int32))
    with pytest.raises(ValueError, match=r"segment 2 must be .*got shape \(\)"):
        packer([tf.constant([5]), tf.constant(6)])
    with pytest.raises(ValueError, match="all batched or all unbatched"):
        packer([tf.constant([5, 6]), tf.constant([[7]])])
    with pytest.raises(TypeError, match="segment 1 must hold integer ids, got dtype float32"):
        packer(tf.constant([[1.5, 2.0]]))
    with pytest.raises(TypeError, match="segment 2 must hold integer ids, got dtype string"):
        packer([tf.constant([[5]]), tf.constant([["a"]])])
    with pytest.raises(TypeError, match="segment 1 must hold integer ids, got dtype bool"):
        packer(tf.constant([[True]]))
    with pytest.raises(ValueError, match=r"segment 1 ids must be in \[0, 2147483648\); it holds -1"):
        packer(tf.constant([[5, -1]]))
    with pytest.raises(ValueError, match="it holds 4294967301"):  # would wrap to 5 in int32
        packer(tf.constant([[2**32 + 5]], tf.int64))
    with pytest.raises(TypeError, match="not a dict"):
        packer({"input_word_ids": SEGMENT_A})
    # nested Python lists are read as ragged
    out = packer([[5, 6], [7]])  # one unbatched pair
    assert out["input_word_ids"].numpy().tolist() == [2, 5, 6, 3, 7, 3, 0, 0]
    assert packer([[[5, 6], [7]]])["input_word_ids"].shape == (2, 8)


@pytest.mark.parametrize("bad", [0, -3, 1, 12.7, "128", True, None, 2**21])
def test_bad_seq_length(bad):
    with pytest.raises(ValueError, match="seq_length"):
        _packer(seq_length=bad)
    if bad is not None:  # None at call time means the layer's own
        with pytest.raises(ValueError, match="seq_length"):
            _packer(seq_length=8)(SEGMENT_A, seq_length=bad)


def test_bad_id_arguments_and_unknown_kwargs():
    for name in ("start_of_sequence_id", "end_of_segment_id", "padding_id"):
        for bad in (-1, 2.0, "3", False, 2**31):
            with pytest.raises(ValueError, match=name):
                BertPackInputs(**{name: bad})
    with pytest.raises(TypeError, match=r"unknown keyword argument 'seq_lenght' \(did you mean "
                                        r"'seq_length'\?\)\. It accepts BertPackInputs "
                                        r"arguments: seq_length, .*truncator; Keras layer arguments: "
                                        r"name, dtype"):
        BertPackInputs(seq_lenght=64)
    assert BertPackInputs(name="packer", trainable=False).name == "packer"


def test_empty_batches_and_the_shortest_sequences():
    """The shortest seq_length holds [CLS], one token of each segment and a [SEP] after each
    (3, 5, 7 for 1, 2, 3 segments); shorter ones, which once packed the special tokens and no
    text ([CLS] [SEP] [SEP]), are errors: at construction, per call, and in a graph."""
    packer = _packer(seq_length=5)
    out = packer([tf.zeros([0, 4], tf.int32), tf.ragged.constant([], tf.int32, ragged_rank=1)])
    assert out["input_word_ids"].shape == (0, 5)
    out = packer([tf.constant([[5, 6]]), tf.constant([[7]])])
    assert out["input_word_ids"].numpy().tolist() == [[2, 5, 3, 7, 3]]
    assert out["input_type_ids"].numpy().tolist() == [[0, 0, 0, 1, 1]]
    single = _packer(seq_length=3)(tf.constant([[5, 6]]))
    assert single["input_word_ids"].numpy().tolist() == [[2, 5, 3]]
    three = [tf.constant([[5]]), tf.constant([[6]]), tf.constant([[7]])]
    assert packer(three, seq_length=7)["input_word_ids"].numpy().tolist() == [
        [2, 5, 3, 6, 3, 7, 3]]
    for length, segments, layout in [(2, 1, r"\[CLS\] a \[SEP\]"),
                                     (4, 2, r"\[CLS\] a \[SEP\] b \[SEP\]"),
                                     (6, 3, r"\[CLS\] a \[SEP\] b \[SEP\] c \[SEP\]")]:
        message = (rf"BertPackInputs: seq_length must be at least {2 * segments + 1} to hold "
                   rf"{layout} \(one token of each of {segments} segment\(s\) and "
                   rf"{segments + 1} special tokens\), got {length}: shorter, the model would "
                   r"see the special tokens and no text")
        with pytest.raises(ValueError, match=message):
            packer(three[:segments], seq_length=length)
        with pytest.raises(ValueError, match=message):
            tf.function(lambda *s: packer(list(s), seq_length=length))(*three[:segments])
    with pytest.raises(ValueError, match=r"at least 3 to hold \[CLS\] a \[SEP\].*got 2"):
        _packer(seq_length=2)
    traced = tf.function(lambda a, b, n: packer([a, b], seq_length=n))
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"seq_length must be an integer in \[5, 1048576\] \(room for "
                             r"\[CLS\] a \[SEP\] b \[SEP\]"):
        traced(three[0], three[1], tf.constant(4))
    assert traced(three[0], three[1], tf.constant(5))["input_word_ids"].shape == (1, 5)


def test_from_preset_takes_the_special_ids_of_the_preset_vocabulary(tmp_path):
    packer = BertPackInputs.from_preset("minilm_l6", seq_length=6, truncator="waterfall")
    assert (packer.start_of_sequence_id, packer.end_of_segment_id, packer.padding_id) == (
        101, 102, 0)
    assert (packer.seq_length, packer.truncator) == (6, "waterfall")
    out = packer(tf.ragged.constant([[2023, 2003]]))
    assert out["input_word_ids"].numpy().tolist() == [[101, 2023, 2003, 102, 0, 0]]
    with pytest.raises(TypeError, match=r"unknown keyword argument 'padding_id'.*It accepts "
                                        r"BertPackInputs.from_preset arguments: seq_length, "
                                        r"truncator"):
        BertPackInputs.from_preset("minilm_l6", padding_id=3)
    (tmp_path / "bert_config.json").write_text("{}")
    with pytest.raises(Exception, match=r"vocab\.txt"):  # a directory without a vocabulary
        BertPackInputs.from_preset(str(tmp_path))
