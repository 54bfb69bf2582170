"""compute_predictions: identical to run_squad.write_predictions given the same logits."""

import json
import math
import warnings

import numpy as np
import pytest

from keras_bert.data import (
    SquadPredictions,
    compute_predictions,
    convert_examples_to_features,
    read_squad_examples,
)
from keras_bert.data.squad.predictions import get_final_text
from keras_bert.data.squad.tokenization import basic_words
from tests.data.squad.squad_cases import hand_made_squad, squad_flags, wiki_squad, write_json


def read_both(google_squad, tmp_path, data, version_2):
    path = write_json(tmp_path, data)
    mine = read_squad_examples(path, is_training=False, version_2_with_negative=version_2)
    with squad_flags(google_squad.run_squad, version_2_with_negative=version_2):
        theirs = google_squad.run_squad.read_squad_examples(path, is_training=False)
    return mine, theirs


def random_logits(features, seed, integer, cls_bias=0.0):
    """float32 logits, context favoured, padding low; integer ones tie often."""
    rng = np.random.default_rng(seed)
    shape = features.input_word_ids.shape
    bias = 1.5 * features.input_type_ids - 6 * (1 - features.input_mask)
    bias[:, 0] += cls_bias  # the null answer (SQuAD 2.0)
    logits = [rng.normal(size=shape) * 3 + bias for _ in range(2)]
    if integer:
        logits = [np.round(x) for x in logits]
    return [x.astype(np.float32) for x in logits]


def reference_predictions(google_squad, tmp_path, theirs, tokenizer, window, logits,
                          n_best_size, max_answer_length, lower, version_2, threshold):
    """run_squad.write_predictions on its own features, read back from the files it writes.

    One question at a time: under SQuAD 2.0 run_squad.py fails on a question without any
    valid span (AttributeError on the missing best non-null entry); those come back as None.
    """
    run_squad = google_squad.run_squad
    features = []
    run_squad.convert_examples_to_features(theirs, tokenizer, *window, False, features.append)
    predictions, nbest, null_odds = {}, {}, {}
    for example_index, example in enumerate(theirs):
        own = [(i, f) for i, f in enumerate(features) if f.example_index == example_index]
        results = [
            run_squad.RawResult(f.unique_id, [float(x) for x in logits[0][i]],
                                [float(x) for x in logits[1][i]])
            for i, f in own
        ]
        for _, f in own:
            f.example_index = 0
        paths = [str(tmp_path / name) for name in ("p.json", "n.json", "o.json")]
        try:
            with squad_flags(run_squad, version_2_with_negative=version_2,
                             null_score_diff_threshold=threshold):
                run_squad.write_predictions([example], [f for _, f in own], results,
                                            n_best_size, max_answer_length, lower, *paths)
        except AttributeError:
            assert version_2
            predictions[example.qas_id] = nbest[example.qas_id] = None
            null_odds[example.qas_id] = None
            continue
        for path, out in zip(paths, (predictions, nbest, null_odds) if version_2 else
                             (predictions, nbest)):
            with open(path, encoding="utf-8") as f:
                out.update(json.load(f))
    return predictions, nbest, null_odds


def assert_same_predictions(result, expected):
    """Equal to run_squad.py's, and "" with null odds inf where run_squad.py failed."""
    predictions, nbest, null_odds = expected
    failed = [k for k, v in predictions.items() if v is None]
    for qas_id in failed:
        assert result.predictions[qas_id] == "" and result.null_odds[qas_id] == math.inf
        assert [e["text"] for e in result.nbest[qas_id]] == [""]
        predictions[qas_id] = nbest[qas_id] = ""
        null_odds[qas_id] = math.inf
        result.nbest[qas_id] = ""
    assert list(result.predictions.items()) == list(predictions.items())
    assert list(result.nbest.items()) == list(nbest.items())
    assert list(result.null_odds.items()) == list(null_odds.items())
    return len(failed)


CASES = [  # (window, n_best_size, max_answer_length, threshold)
    ((384, 128, 64), 20, 30, 0.0),
    ((24, 5, 8), 20, 30, -2.0),
    ((24, 5, 8), 5, 4, 1.5),
    ((32, 40, 10), 3, 30, 0.0),
]


@pytest.mark.parametrize("case", CASES, ids=str)
@pytest.mark.parametrize("version_2", [False, True])
@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("integer", [False, True])
def test_hand_made_as_run_squad(google_squad, tokenizers, full_tokenizers, tmp_path, case,
                                version_2, lower, integer):
    window, n_best_size, max_answer_length, threshold = case
    mine, theirs = read_both(google_squad, tmp_path, hand_made_squad(version_2), version_2)
    features = convert_examples_to_features(mine, tokenizers[lower], *window)
    logits = random_logits(features, seed=len(features) + lower, integer=integer)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the questions without a valid span are counted
        result = compute_predictions(
            mine, features, *logits, tokenizers[lower], n_best_size, max_answer_length,
            version_2_with_negative=version_2, null_score_diff_threshold=threshold)
    expected = reference_predictions(
        google_squad, tmp_path, theirs, full_tokenizers[lower], window, logits, n_best_size,
        max_answer_length, lower, version_2, threshold)
    assert_same_predictions(result, expected)
    assert list(result.predictions) == [e.qas_id for e in mine]


@pytest.mark.parametrize("threshold", [-1.0, 0.0, 2.0])
def test_wikipedia_as_run_squad(google_squad, tokenizers, full_tokenizers, wiki_lines,
                                tmp_path, threshold):
    data = wiki_squad(wiki_lines, 40, seed=2, impossible_every=4)
    mine, theirs = read_both(google_squad, tmp_path, data, True)
    window = (64, 16, 12)
    features = convert_examples_to_features(mine, tokenizers[True], *window)
    logits = random_logits(features, seed=3, integer=False, cls_bias=8.0)
    result = compute_predictions(mine, features, *logits, tokenizers[True],
                                 version_2_with_negative=True,
                                 null_score_diff_threshold=threshold)
    expected = reference_predictions(google_squad, tmp_path, theirs, full_tokenizers[True],
                                     window, logits, 20, 30, True, True, threshold)
    assert assert_same_predictions(result, expected) == 0
    assert 0 < sum(p == "" for p in result.predictions.values()) < len(mine)


def test_no_valid_span_v1_as_run_squad(google_squad, tokenizers, full_tokenizers, tmp_path):
    """Best start on [CLS] and n_best_size 1: no valid span, run_squad.py's "empty"."""
    mine, theirs = read_both(google_squad, tmp_path, hand_made_squad(), False)
    features = convert_examples_to_features(mine, tokenizers[True])
    logits = random_logits(features, seed=0, integer=False)
    logits[0][:, 0] = 100.0
    with pytest.warns(UserWarning, match=r"\d+ question\(s\) had no valid answer span among "
                                         r"the n_best_size=1 .*\"empty\", as run_squad.py"):
        result = compute_predictions(mine, features, *logits, tokenizers[True], n_best_size=1)
    expected = reference_predictions(google_squad, tmp_path, theirs, full_tokenizers[True],
                                     (384, 128, 64), logits, 1, 30, True, False, 0.0)
    assert_same_predictions(result, expected)
    assert set(result.predictions.values()) == {"empty"}


def test_no_valid_span_v2_is_no_answer(tokenizers):
    """run_squad.py fails here (no non-null entry); the answer is "" with null odds inf."""
    examples = read_squad_examples(hand_made_squad(True), False, version_2_with_negative=True)
    features = convert_examples_to_features(examples, tokenizers[True])
    logits = random_logits(features, seed=0, integer=False)
    logits[0][:, 0] = 100.0
    with pytest.warns(UserWarning, match=r"answered \"\" \(null odds inf\)"):
        result = compute_predictions(examples, features, *logits, tokenizers[True],
                                     n_best_size=1, version_2_with_negative=True)
    assert set(result.predictions.values()) == {""}
    assert set(result.null_odds.values()) == {math.inf}
    for nbest in result.nbest.values():
        assert [(e["text"], e["probability"], e["start_logit"]) for e in nbest] == [
            ("", 1.0, 100.0)]


@pytest.mark.parametrize("lower", [True, False])
def test_final_text_as_run_squad(google_squad, tokenizers, wiki_lines, lower):
    """get_final_text with keras_bert's in-graph basic tokenizer, on every word span."""
    run_squad = google_squad.run_squad
    tokenization = google_squad.tokenization
    texts = [line for line in wiki_lines[:300]] + [
        "Steve Smith's", "(1895-1943).", "Ærøskøbing,", "北京大学", "crème\u00a0brûlée", "ÉCOLE",
        "a " + "Ü" * 250 + "! b"]  # BasicTokenizer keeps long words whole
    words_of = basic_words(tokenizers[lower], [w for t in texts for w in t.split()])
    for text in texts:
        words = text.split()[:12]
        orig_text = " ".join(words)
        orig_words = [w for word in words for w in words_of[word]]
        for first in range(len(orig_words)):
            pred = " ".join(orig_words[first : first + 3])
            expected = run_squad.get_final_text(pred, orig_text, lower)
            assert get_final_text(pred, orig_text, orig_words) == expected, (pred, orig_text)
        # the in-graph words are BERT's BasicTokenizer's
        basic = tokenization.BasicTokenizer(do_lower_case=lower).tokenize(orig_text)
        assert orig_words == basic


def test_write(tmp_path):
    result = SquadPredictions({"q": "a"}, {"q": [{"text": "a", "probability": 1.0,
                                                  "start_logit": 1.0, "end_logit": 2.0}]},
                              {"q": -3.0})
    paths = result.write(tmp_path / "out")
    assert [p.rsplit("/", 1)[1] for p in paths] == [
        "predictions.json", "nbest_predictions.json", "null_odds.json"]
    with open(paths[2], encoding="utf-8") as f:
        assert json.load(f) == {"q": -3.0}
    assert len(SquadPredictions({"q": "a"}, {}, {}).write(tmp_path / "v1")) == 2


# ---------------------------------------------------------------------------- bad inputs
@pytest.fixture(scope="module")
def made(tokenizers):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        examples = read_squad_examples(hand_made_squad(), is_training=False)
    features = convert_examples_to_features(examples, tokenizers[True], 64, 16, 16)
    return examples, features, random_logits(features, 0, False)


def test_logits_of_the_wrong_shape(tokenizers, made):
    examples, features, (start, end) = made
    with pytest.raises(ValueError, match=r"end_logits must have the features' shape "
                                         rf"\[num_features, seq_length\] = \[{len(features)}, "
                                         rf"64\], got \[{len(features)}, 63\]"):
        compute_predictions(examples, features, start, end[:, :63], tokenizers[True])
    with pytest.raises(ValueError, match=r"start_logits must have the features' shape"):
        compute_predictions(examples, features, start[:-1], end, tokenizers[True])


def test_logits_not_finite(tokenizers, made):
    examples, features, (start, end) = made
    bad = start.copy()
    bad[3, 7] = np.nan
    with pytest.raises(ValueError, match=r"start_logits has 1 value\(s\) that are NaN or "
                                         r"infinite, first at feature 3, position 7"):
        compute_predictions(examples, features, bad, end, tokenizers[True])
    with pytest.raises(ValueError, match=r"end_logits must be real numbers, got dtype <U1"):
        compute_predictions(examples, features, start, np.full(end.shape, "a"),
                            tokenizers[True])


def test_features_of_other_examples(tokenizers, made):
    examples, features, logits = made
    with pytest.raises(ValueError, match=r"features do not belong to these examples: they "
                                         r"refer to example \d+, but there are 2"):
        compute_predictions(examples[:2], features, *logits, tokenizers[True])
    shuffled = examples[5:] + examples[:5]
    with pytest.raises(ValueError, match=r"features do not belong to these examples: feature "
                                         r"\d+ points past the \d+ words of examples\[\d+\]"):
        compute_predictions(shuffled, features, *logits, tokenizers[True])
    with pytest.raises(TypeError, match="features must be SquadFeatures, got dict"):
        compute_predictions(examples, features.inputs, *logits, tokenizers[True])


def test_bad_settings(tokenizers, made):
    examples, features, logits = made
    for kwargs, match in [
        ({"n_best_size": 0}, r"n_best_size must be an integer >= 1, got 0"),
        ({"max_answer_length": 2.0}, r"max_answer_length must be an integer >= 1, got 2.0"),
        ({"null_score_diff_threshold": float("nan")},
         r"null_score_diff_threshold must be finite, got nan"),
    ]:
        with pytest.raises(ValueError, match=match):
            compute_predictions(examples, features, *logits, tokenizers[True], **kwargs)
    twice = [examples[0], examples[0]]
    with pytest.raises(ValueError, match=r"examples\[1\]: qas_id 'glued-year' is used twice"):
        compute_predictions(twice, features, *logits, tokenizers[True])


# ---------------------------------------------------------------------------- known answers
GOLD = {
    "glued-year": "1895", "sub-word": "Japanese", "possessive": "Steve Smith",
    "comma": "1967 Ford Mustang", "long-question": "1895-1943", "danish": "Denmark",
    "accents": "crème brûlée", "cjk": "北京大学", "cjk-char": "北京", "polish": "Kraków",
    "minus": "−40 °C", "narrow": "narrow", "long-word": "long words", "tab": "and newlines",
    # run_squad.get_final_text aligns characters after removing " " only: a word with other
    # spaces or dropped characters in it comes back whole.
    "nbsp": "a\u00a0non-breaking", "zero-width": "zero\u200bwidth,",
    "first": "Henri Dunant", "two-names": "Élie Ducommun and Albert Gobat",
    "institute": "the Institute of International Law", "last": "New York.",
    "whole": "Randal Cremer of London. In 1904 the prize went to the Institute",
    "river": "Brazil, Peru and Colombia",
}


def answer_logits(features):
    """Logits that point at the training labels: each window's answer, or [CLS]."""
    start = np.full(features.input_word_ids.shape, -10.0, np.float32)
    end = start.copy()
    rows = np.arange(len(features))
    start[rows, features.start_positions] = 10.0
    end[rows, features.end_positions] = 10.0
    return start, end


def test_known_answers(tokenizers):
    with pytest.warns(UserWarning, match="skipped 1 training question"):
        examples = read_squad_examples(hand_made_squad(), is_training=True)
    features = convert_examples_to_features(examples, tokenizers[True], is_training=True)
    result = compute_predictions(examples, features, *answer_logits(features),
                                 tokenizers[True])
    assert result.predictions == GOLD
    assert all(n[0]["probability"] > 0.99 for n in result.nbest.values())


def test_known_answers_across_windows(tokenizers):
    """Windows of 24 tokens, 5 apart: each answer is read from the window that holds it
    and gives its first token the most context; SQuAD 2.0's null wins where none does."""
    with pytest.warns(UserWarning, match="skipped 1 training question"):
        examples = read_squad_examples(hand_made_squad(), is_training=True)
    features = convert_examples_to_features(examples, tokenizers[True], 24, 5, 8, True)
    assert len(features) > 3 * len(examples)
    start, end = answer_logits(features)
    result = compute_predictions(examples, features, start, end, tokenizers[True],
                                 max_answer_length=16)
    v2 = compute_predictions(examples, features, start, end, tokenizers[True],
                             max_answer_length=16, version_2_with_negative=True)
    readable = []
    for example_index, example in enumerate(examples):
        rows = np.flatnonzero(features.example_index == example_index)
        holds = [r for r in rows if features.start_positions[r] > 0]
        assert holds or example.qas_id in ("whole", "long-question")  # longer than a window
        if any(features.token_is_max_context[r, features.start_positions[r]] for r in holds):
            readable.append(example.qas_id)
            assert result.predictions[example.qas_id] == GOLD[example.qas_id]
            assert v2.predictions[example.qas_id] == GOLD[example.qas_id]
            assert v2.null_odds[example.qas_id] == -40.0  # null -10 - 10, answer 10 + 10
    assert len(readable) > len(examples) // 2
    assert set(readable) != set(GOLD)


def test_ties_go_to_the_first_window():
    from keras_bert.data import SquadExample
    from keras_bert.data.squad.examples import split_words
    from keras_bert.text import BertTokenizer

    tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "c",
                               "d", "e", "?"])
    words, offsets = split_words("b c d e")
    example = SquadExample("q", "a?", "b c d e", words, offsets)
    features = convert_examples_to_features([example], tokenizer, 7, 1, 2)
    assert [features.tokens(i)[4:6] for i in range(3)] == [["b", "c"], ["c", "d"], ["d", "e"]]
    start = np.zeros((3, 7), np.float32)
    end = np.zeros((3, 7), np.float32)
    start[0, 4] = end[0, 4] = 5.0  # "b" in window 0: 10
    start[2, 5] = end[2, 5] = 5.0  # "e" in window 2: 10
    result = compute_predictions([example], features, start, end, tokenizer)
    assert result.predictions == {"q": "b"}
    assert [e["text"] for e in result.nbest["q"][:2]] == ["b", "e"]
    assert result.nbest["q"][0]["probability"] == result.nbest["q"][1]["probability"]
