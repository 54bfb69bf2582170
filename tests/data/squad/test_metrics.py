"""The official SQuAD v1.1 / v2.0 evaluation, on hand-made cases with known values."""

import warnings

import numpy as np
import pytest

from keras_bert.data import (
    SquadPredictions,
    compute_exact,
    compute_f1,
    compute_predictions,
    convert_examples_to_features,
    evaluate_v1,
    evaluate_v2,
    exact_match_score,
    f1_score,
    normalize_answer,
    read_squad_examples,
)
from tests.data.squad.squad_cases import hand_made_squad, write_json


@pytest.mark.parametrize(
    "text,normalized",
    [
        ("The Cat", "cat"),
        ("a an the", ""),
        ("An apple, the pear and a banana.", "apple pear and banana"),
        ("theater Anthem", "theater anthem"),  # articles are whole words only
        ("the-the", "thethe"),  # punctuation goes first
        ("l'the", "lthe"),
        ("A.B.C.", "abc"),
        ("the_cat", "thecat"),  # "_" is in string.punctuation
        ("Hello—world «x»", "hello—world «x»"),  # non-ASCII punctuation stays
        ("  multiple \t spaces\n", "multiple spaces"),
        ("Über-Größe", "übergröße"),
        ("a\u00a0non-breaking", "nonbreaking"),  # str.split() splits on U+00A0
        ("rock 'n' roll", "rock n roll"),
    ],
)
def test_normalize_answer(text, normalized):
    assert normalize_answer(text) == normalized


def test_v1_scores():
    assert exact_match_score("The Denver Broncos!", "denver broncos") is True
    assert exact_match_score("Broncos", "Denver Broncos") is False
    assert f1_score("the cat sat", "cat sat on mat") == pytest.approx(2 / 3)
    assert f1_score("x y y", "y y z") == pytest.approx(2 / 3)  # word counts, not sets
    assert f1_score("Paris", "London") == 0
    assert f1_score("", "") == 0 and f1_score("the", "an") == 0  # v1: no words, no F1


def test_v2_scores():
    assert compute_exact("Denver Broncos", "the denver broncos.") == 1
    assert compute_f1("", "") == 1 and compute_f1("the", "") == 1  # both "no answer"
    assert compute_f1("", "Paris") == 0 and compute_f1("Paris", "") == 0
    assert compute_f1("Santa Clara, California", "Santa Clara") == pytest.approx(0.8)


V1_DATA = {"version": "1.1", "data": [{"title": "t", "paragraphs": [{"context": "...", "qas": [
    {"id": "q1", "question": "?", "answers": [{"text": "Denver Broncos"}, {"text": "Broncos"}]},
    {"id": "q2", "question": "?", "answers": [{"text": "Santa Clara, California"}]},
    {"id": "q3", "question": "?", "answers": [{"text": "1889"}, {"text": "in 1889"}]},
    {"id": "q4", "question": "?", "answers": [{"text": "Gustave Eiffel"}]},
]}]}]}


def test_evaluate_v1(tmp_path):
    predictions = {"q1": "the Broncos", "q2": "Santa Clara", "q3": "1889 and 1890", "q4": "x"}
    # q1: 1/1; q2: 0/0.8; q3: 0/max(0.5, 0.4); q4: 0/0
    expected = {"exact_match": 25.0, "f1": pytest.approx(100 * (1 + 0.8 + 0.5) / 4)}
    assert evaluate_v1(V1_DATA, predictions) == expected
    assert evaluate_v1(write_json(tmp_path, V1_DATA), predictions) == expected
    del predictions["q4"]
    with pytest.warns(UserWarning, match=r"1 question\(s\) of the SQuAD dict have no "
                                         r"prediction \(e.g. 'q4'\) and score 0"):
        assert evaluate_v1(V1_DATA, predictions) == expected


V2_DATA = {"version": "v2.0", "data": [{"title": "t", "paragraphs": [{"context": "...", "qas": [
    {"id": "h1", "question": "?", "answers": [{"text": "Denver Broncos"}, {"text": "Broncos"}]},
    {"id": "h2", "question": "?", "answers": [{"text": "Santa Clara, California"}]},
    {"id": "h3", "question": "?", "answers": [{"text": "1889"}]},
    {"id": "h4", "question": "?", "answers": [{"text": "the"}]},  # counts as has-answer,
    {"id": "n1", "question": "?", "answers": []},                  # but only "" matches it
    {"id": "n2", "question": "?", "answers": [], "plausible_answers": [{"text": "Paris"}]},
]}]}]}
V2_PREDICTIONS = {"h1": "the Broncos", "h2": "Santa Clara", "h3": "", "h4": "", "n1": "",
                  "n2": "Paris"}
V2_NA_PROBS = {"h1": -3.0, "h2": 0.5, "h3": 2.0, "h4": 1.0, "n1": 0.2, "n2": 4.0}


def test_evaluate_v2_without_na_probs():
    result = evaluate_v2(V2_DATA, V2_PREDICTIONS)
    # exact h1 h4 n1; F1 adds 0.8 for h2
    assert result == {
        "exact": 50.0, "f1": pytest.approx(100 * 3.8 / 6), "total": 6,
        "HasAns_exact": 50.0, "HasAns_f1": pytest.approx(70.0), "HasAns_total": 4,
        "NoAns_exact": 50.0, "NoAns_f1": 50.0, "NoAns_total": 2,
    }
    assert list(result) == ["exact", "f1", "total", "HasAns_exact", "HasAns_f1",
                            "HasAns_total", "NoAns_exact", "NoAns_f1", "NoAns_total"]


def test_evaluate_v2_with_na_probs_and_best_threshold():
    result = evaluate_v2(V2_DATA, V2_PREDICTIONS, V2_NA_PROBS, na_prob_thresh=1.0)
    # Above 1.0: h3 ("no answer" for a has-answer question: 0) and n2 (right: 1).
    assert result["exact"] == pytest.approx(100 * 4 / 6)
    assert result["f1"] == pytest.approx(80.0)
    assert (result["NoAns_exact"], result["NoAns_f1"]) == (100.0, 100.0)
    assert (result["HasAns_exact"], result["HasAns_f1"]) == (50.0, pytest.approx(70.0))
    # Walking up the sorted na_probs from 2 no-answers right: h1 +1 (3, at -3), n1 +0,
    # h2 +0 / +0.8, h4 +1 (4 / 4.8, at 1.0), h3 +0, n2 -1.
    assert result["best_exact"] == pytest.approx(100 * 4 / 6)
    assert result["best_exact_thresh"] == 1.0
    assert result["best_f1"] == pytest.approx(80.0)
    assert result["best_f1_thresh"] == 1.0
    # The default threshold (1.0) and a SquadPredictions carrying its null odds agree.
    carried = SquadPredictions(V2_PREDICTIONS, {}, V2_NA_PROBS)
    assert evaluate_v2(V2_DATA, carried) == result
    low = evaluate_v2(V2_DATA, V2_PREDICTIONS, V2_NA_PROBS, na_prob_thresh=-5.0)
    # All "": only the 2 no-answers are right (h4 counts as has-answer here, as officially).
    assert low["exact"] == pytest.approx(100 * 2 / 6)


def test_v2_gold_answers_that_normalize_to_nothing_are_dropped():
    data = {"data": [{"paragraphs": [{"context": "...", "qas": [
        {"id": "q", "question": "?", "answers": [{"text": "The"}, {"text": "Paris"}]}]}]}]}
    assert evaluate_v2(data, {"q": ""})["exact"] == 0.0  # "The" is no gold answer
    assert evaluate_v2(data, {"q": "paris"})["exact"] == 100.0


def test_end_to_end_known_answers(tokenizers):
    """Logits at the labelled answers -> the gold answers -> EM / F1 (SQuAD 1.1).

    All 22 right but "Japan", which no WordPiece span gives (the answer is "Japanese")."""
    data = hand_made_squad()
    for paragraph in data["data"][0]["paragraphs"]:
        paragraph["qas"] = [qa for qa in paragraph["qas"] if qa["id"] != "not-found"]
    examples = read_squad_examples(data, is_training=True)
    features = convert_examples_to_features(examples, tokenizers[True], 32, 8, 12, True)
    start = np.where(np.arange(32) == features.start_positions[:, None], 10.0, -10.0)
    end = np.where(np.arange(32) == features.end_positions[:, None], 10.0, -10.0)
    result = compute_predictions(examples, features, start, end, tokenizers[True])
    scores = evaluate_v1(data, result)
    assert 50 < scores["exact_match"] < 100  # some answers are cut by the 32-token windows
    features = convert_examples_to_features(examples, tokenizers[True], 384, 128, 64, True)
    start = np.where(np.arange(384) == features.start_positions[:, None], 10.0, -10.0)
    end = np.where(np.arange(384) == features.end_positions[:, None], 10.0, -10.0)
    result = compute_predictions(examples, features, start, end, tokenizers[True])
    assert result.predictions["sub-word"] == "Japanese"
    assert evaluate_v1(data, result) == {"exact_match": 100 * 21 / 22, "f1": 100 * 21 / 22}


# ---------------------------------------------------------------------------- bad inputs
def test_v2_missing_prediction():
    predictions = dict(V2_PREDICTIONS)
    del predictions["n1"]
    with pytest.raises(ValueError, match=r"1 question\(s\) of the SQuAD dict have no "
                                         r"prediction, e.g. 'n1'"):
        evaluate_v2(V2_DATA, predictions)


def test_unknown_predictions_warn():
    with pytest.warns(UserWarning, match=r"1 prediction\(s\) are for questions that are not "
                                         r"in the SQuAD dict \(e.g. 'zz'\); they are ignored"):
        evaluate_v2(V2_DATA, {**V2_PREDICTIONS, "zz": "x"})


def test_bad_predictions():
    with pytest.raises(ValueError, match=r"predictions\['h1'\] must be the answer text \(str\), "
                                         r"got list"):
        evaluate_v2(V2_DATA, {**V2_PREDICTIONS, "h1": ["Broncos"]})
    with pytest.raises(TypeError, match=r"predictions must be a \{qas_id: answer text\} "
                                        r"mapping or SquadPredictions, got list"):
        evaluate_v1(V1_DATA, ["Broncos"])


def test_bad_na_probs():
    with pytest.raises(ValueError, match=r"na_probs has no value for 1 predicted question\(s\), "
                                         r"e.g. 'n2'"):
        evaluate_v2(V2_DATA, V2_PREDICTIONS, {k: 0.0 for k in V2_PREDICTIONS if k != "n2"})
    with pytest.raises(ValueError, match=r"na_probs\['h2'\] must be a number, got nan"):
        evaluate_v2(V2_DATA, V2_PREDICTIONS, {**V2_NA_PROBS, "h2": float("nan")})
    with pytest.raises(TypeError, match=r"na_probs must be a \{qas_id: number\} mapping"):
        evaluate_v2(V2_DATA, V2_PREDICTIONS, [0.0])


def test_bad_datasets(tmp_path):
    with pytest.raises(ValueError, match=r"the SQuAD dict: question 'n1' has no gold answer; "
                                         r"SQuAD 2.0 data is scored with evaluate_v2"):
        evaluate_v1(V2_DATA, V2_PREDICTIONS)
    no_answers = {"data": [{"paragraphs": [{"context": "c", "qas": [{"id": "q"}]}]}]}
    path = write_json(tmp_path, no_answers, "dev.json")
    with pytest.raises(ValueError, match=r"dev\.json: data\[0\] paragraphs\[0\] qas\[0\] "
                                         r"\(id 'q'\) has no 'answers'"):
        evaluate_v1(path, {"q": "x"})
    with pytest.raises(ValueError, match=r"empty\.json has no questions to evaluate"):
        evaluate_v2(write_json(tmp_path, {"data": []}, "empty.json"), {})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert evaluate_v1(V1_DATA, {k: "" for k in ("q1", "q2", "q3", "q4")})["f1"] == 0.0
