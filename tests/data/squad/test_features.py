"""convert_examples_to_features: identical to run_squad.convert_examples_to_features."""

import warnings

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.data import SquadExample, convert_examples_to_features, read_squad_examples
from keras_bert.data.squad.examples import split_words
from keras_bert.text import BertTokenizer
from tests.data.squad.squad_cases import hand_made_squad, squad_flags, wiki_squad, write_json

# (max_seq_length, doc_stride, max_query_length): the run_squad.py defaults, small windows
# that answers cross, a stride longer than the window, a question cut to 4 pieces.
WINDOWS = [(384, 128, 64), (24, 5, 8), (16, 3, 4), (32, 40, 10)]


def read_both(google_squad, tmp_path, data, is_training, version_2):
    path = write_json(tmp_path, data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mine = read_squad_examples(path, is_training, version_2_with_negative=version_2)
    with squad_flags(google_squad.run_squad, version_2_with_negative=version_2):
        theirs = google_squad.run_squad.read_squad_examples(path, is_training)
    return mine, theirs


def reference_features(google_squad, examples, tokenizer, window, is_training):
    features = []
    max_seq_length, doc_stride, max_query_length = window
    google_squad.run_squad.convert_examples_to_features(
        examples, tokenizer, max_seq_length, doc_stride, max_query_length, is_training,
        output_fn=features.append)
    return features


def assert_same_features(mine, reference, is_training):
    assert len(mine) == len(reference)
    seq_length = mine.input_word_ids.shape[1]
    for i, theirs in enumerate(reference):
        where = f"feature {i} (example {theirs.example_index}, span {theirs.doc_span_index})"
        assert mine.tokens(i) == theirs.tokens, where
        assert mine.unique_id[i] == theirs.unique_id, where
        assert mine.example_index[i] == theirs.example_index, where
        assert mine.doc_span_index[i] == theirs.doc_span_index, where
        assert mine.input_word_ids[i].tolist() == theirs.input_ids, where
        assert mine.input_mask[i].tolist() == theirs.input_mask, where
        assert mine.input_type_ids[i].tolist() == theirs.segment_ids, where
        to_orig = np.full(seq_length, -1)
        max_context = np.zeros(seq_length, bool)
        for position, word in theirs.token_to_orig_map.items():
            to_orig[position] = word
            max_context[position] = theirs.token_is_max_context[position]
        assert set(theirs.token_is_max_context) == set(theirs.token_to_orig_map)
        assert mine.token_to_orig_map[i].tolist() == to_orig.tolist(), where
        assert mine.token_is_max_context[i].tolist() == max_context.tolist(), where
        assert mine.is_impossible[i] == theirs.is_impossible, where
        if is_training:
            assert (mine.start_positions[i], mine.end_positions[i]) == (
                theirs.start_position, theirs.end_position), where
    if not is_training:
        assert mine.start_positions is None and mine.labels is None
    for array in (*mine.inputs.values(), *(mine.labels or {}).values()):
        assert array.dtype == np.int32


@pytest.mark.parametrize("window", WINDOWS, ids=str)
@pytest.mark.parametrize("is_training", [True, False])
@pytest.mark.parametrize("version_2", [False, True])
@pytest.mark.parametrize("lower", [True, False])
def test_hand_made_as_run_squad(google_squad, tokenizers, full_tokenizers, tmp_path, window,
                                is_training, version_2, lower):
    mine, theirs = read_both(google_squad, tmp_path, hand_made_squad(version_2), is_training,
                             version_2)
    features = convert_examples_to_features(
        mine, tokenizers[lower], *window, is_training=is_training)
    reference = reference_features(google_squad, theirs, full_tokenizers[lower], window,
                                   is_training)
    assert_same_features(features, reference, is_training)
    if is_training and window == (24, 5, 8):  # answers cross window borders here
        spans = np.bincount(features.example_index)
        answered = np.bincount(features.example_index, weights=features.start_positions > 0)
        assert (spans > answered).any() and (spans > 1).any()


@pytest.mark.parametrize("window", [(384, 128, 64), (48, 16, 12)], ids=str)
@pytest.mark.parametrize("is_training", [True, False])
def test_wikipedia_as_run_squad(google_squad, tokenizers, full_tokenizers, wiki_lines,
                                tmp_path, window, is_training):
    data = wiki_squad(wiki_lines, 40, seed=1, impossible_every=7)
    mine, theirs = read_both(google_squad, tmp_path, data, is_training, True)
    features = convert_examples_to_features(mine, tokenizers[True], *window,
                                            is_training=is_training)
    reference = reference_features(google_squad, theirs, full_tokenizers[True], window,
                                   is_training)
    assert len(reference) > len(mine) // 2
    assert_same_features(features, reference, is_training)


def test_improved_answer_spans():
    """The answer narrows to its own WordPieces ("1895" of "(1895-1943).") when it can."""
    tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "(", "1895", "-",
                               "1943", ")", ".", "japan", "japanese", "?", "when"])
    words, offsets = split_words("(1895-1943). Japanese")
    examples = [
        SquadExample("year", "When?", "", words, offsets, "1895", 0, 0),
        SquadExample("japan", "When?", "", words, offsets, "Japan", 1, 1),
    ]
    features = convert_examples_to_features(examples, tokenizer, 20, 8, 4, is_training=True)
    spans = [features.tokens(i)[s : e + 1] for i, (s, e) in enumerate(
        zip(features.start_positions, features.end_positions))]
    assert spans == [["1895"], ["japanese"]]  # "Japan" is no WordPiece span of "Japanese"


def test_dataset_for_training(tokenizers):
    with pytest.warns(UserWarning, match="skipped 1 training question"):
        examples = read_squad_examples(hand_made_squad(), is_training=True)
    features = convert_examples_to_features(examples, tokenizers[True], 64, 16, 16, True)
    dataset = features.to_dataset().batch(8)
    inputs, labels = next(iter(dataset))
    assert sorted(inputs) == ["input_mask", "input_type_ids", "input_word_ids"]
    assert inputs["input_word_ids"].shape == (8, 64) and inputs["input_word_ids"].dtype == tf.int32
    assert labels["start_positions"].numpy().tolist() == features.start_positions[:8].tolist()
    assert sum(1 for _ in features.to_dataset()) == len(features)
    predict = convert_examples_to_features(examples, tokenizers[True], 64, 16, 16)
    assert sorted(predict.to_dataset().element_spec) == sorted(inputs)


# ---------------------------------------------------------------------------- bad inputs
@pytest.fixture(scope="module")
def example():
    words, offsets = split_words("Paris is in France.")
    return SquadExample("q", "Where is Paris?", "Paris is in France.", words, offsets,
                        "France", 3, 3)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"max_seq_length": 0}, r"max_seq_length must be an integer >= 1, got 0"),
        ({"doc_stride": 0}, r"doc_stride must be an integer >= 1, got 0"),
        ({"doc_stride": 2.5}, r"doc_stride must be an integer >= 1, got 2.5"),
        ({"max_query_length": True}, r"max_query_length must be an integer >= 0, got True"),
        ({"max_seq_length": 67}, r"max_seq_length \(67\) must be greater than "
                                 r"max_query_length \(64\) \+ 3"),
    ],
)
def test_bad_arguments(tokenizers, example, kwargs, match):
    with pytest.raises(ValueError, match=match):
        convert_examples_to_features([example], tokenizers[True], **kwargs)


def test_bad_examples_and_tokenizer(tokenizers, example):
    with pytest.raises(ValueError, match="examples must be a non-empty list of SquadExample"):
        convert_examples_to_features([], tokenizers[True])
    with pytest.raises(ValueError, match="examples must be a non-empty list of SquadExample"):
        convert_examples_to_features(example, tokenizers[True])
    with pytest.raises(TypeError, match=r"examples\[1\] is a dict, not a SquadExample"):
        convert_examples_to_features([example, {}], tokenizers[True])
    with pytest.raises(TypeError, match="tokenizer must be a keras_bert.text.BertTokenizer"):
        convert_examples_to_features([example], "vocab.txt")


def test_training_needs_answer_spans(tokenizers):
    [example] = read_squad_examples(hand_made_squad(), is_training=False)[:1]
    with pytest.raises(ValueError, match=r"examples\[0\] \(id 'glued-year'\) has no answer "
                                         r"span; for training, read the examples with"):
        convert_examples_to_features([example], tokenizers[True], is_training=True)


def test_context_without_wordpieces(tokenizers):
    words, offsets = split_words("\u200b\x07")
    example = SquadExample("q", "Why?", "\u200b\x07", words, offsets)
    with pytest.raises(ValueError, match=r"examples\[0\] \(id 'q'\): the context has no "
                                         r"WordPieces"):
        convert_examples_to_features([example], tokenizers[True])


def test_lone_surrogate_in_hand_built_example(tokenizers, example):
    bad = SquadExample("q", "Where\ud800?", example.context_text, example.doc_tokens,
                       example.char_to_word_offset)
    with pytest.raises(ValueError, match=r"'Where\\ud800\?' is not valid Unicode: lone "
                                         r"surrogate"):
        convert_examples_to_features([bad], tokenizers[True])
