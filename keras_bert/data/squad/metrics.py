"""The official SQuAD v1.1 and v2.0 evaluation: exact match and F1 over the gold answers.

Answers are compared after `normalize_answer` (lower case, no punctuation, no articles
a/an/the, single spaces); a question scores its best match among the gold answers. SQuAD
2.0 adds the has-answer / no-answer breakdown, the no-answer probability threshold, and the
search for the best threshold, as the official `evaluate-v2.0.py`.
"""

import collections
import re
import string
import warnings

from keras_bert.data.squad.examples import _field, load_squad_json
from keras_bert.data.squad.predictions import SquadPredictions

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)


def normalize_answer(s):
    """Lower case, punctuation removed, articles a/an/the removed, whitespace collapsed.

    >>> normalize_answer("The  Eiffel-Tower, in Paris!")
    'eiffeltower in paris'
    """
    text = "".join(ch for ch in s.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match_score(prediction, ground_truth):
    """SQuAD v1.1: whether the normalized answers are equal.

    >>> exact_match_score("the Eiffel Tower", "Eiffel tower.")
    True
    """
    return normalize_answer(prediction) == normalize_answer(ground_truth)


def f1_score(prediction, ground_truth):
    """SQuAD v1.1: F1 of the normalized answers' word bags (0 if they share no word).

    >>> round(f1_score("Eiffel Tower in Paris", "the Eiffel Tower"), 4)
    0.6667
    """
    prediction_tokens = normalize_answer(prediction).split()
    ground_truth_tokens = normalize_answer(ground_truth).split()
    return _f1(prediction_tokens, ground_truth_tokens)


def _f1(prediction_tokens, gold_tokens):
    common = collections.Counter(prediction_tokens) & collections.Counter(gold_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(prediction_tokens)
    recall = 1.0 * num_same / len(gold_tokens)
    return (2 * precision * recall) / (precision + recall)


def compute_exact(a_gold, a_pred):
    """SQuAD v2.0: 1 if the normalized answers are equal, else 0.

    >>> compute_exact("", "an")  # both normalize to "no answer"
    1
    """
    return int(normalize_answer(a_gold) == normalize_answer(a_pred))


def compute_f1(a_gold, a_pred):
    """SQuAD v2.0: F1 of the word bags; 1 if both are no-answer, 0 if only one is.

    >>> compute_f1("", ""), compute_f1("", "Paris"), compute_f1("Paris", "in Paris")
    (1, 0, 0.6666666666666666)
    """
    gold_toks = normalize_answer(a_gold).split() if a_gold else []
    pred_toks = normalize_answer(a_pred).split() if a_pred else []
    if not gold_toks or not pred_toks:
        return int(gold_toks == pred_toks)
    return _f1(pred_toks, gold_toks)


def _questions(dataset):
    """{qas_id: gold answer texts} of a SQuAD dataset, in file order."""
    data, name = load_squad_json(dataset)
    questions = {}
    for i, article in enumerate(data):
        for j, paragraph in enumerate(_field(article, "paragraphs", list, f"{name}: data[{i}]")):
            where = f"{name}: data[{i}] paragraphs[{j}]"
            for k, qa in enumerate(_field(paragraph, "qas", list, where)):
                qas_id = _field(qa, "id", str, f"{where} qas[{k}]")
                at = f"{where} qas[{k}] (id {qas_id!r})"
                answers = _field(qa, "answers", list, at)
                questions[qas_id] = [
                    _field(a, "text", str, f"{at} answers[{n}]") for n, a in enumerate(answers)
                ]
    if not questions:
        raise ValueError(f"{name} has no questions to evaluate")
    return questions, name


def _predictions(predictions, questions, name):
    """{qas_id: text}, checked; a warning for predictions of questions not in the dataset."""
    if isinstance(predictions, SquadPredictions):
        predictions = predictions.predictions
    if not isinstance(predictions, collections.abc.Mapping):
        raise TypeError(
            "predictions must be a {qas_id: answer text} mapping or SquadPredictions, got "
            f"{type(predictions).__name__}"
        )
    for qas_id, text in predictions.items():
        if not isinstance(text, str):
            raise ValueError(
                f"predictions[{qas_id!r}] must be the answer text (str), got "
                f"{type(text).__name__}"
            )
    unknown = [k for k in predictions if k not in questions]
    if unknown:
        warnings.warn(
            f"{len(unknown)} prediction(s) are for questions that are not in {name} (e.g. "
            f"{unknown[0]!r}); they are ignored",
            stacklevel=3,
        )
    return predictions


def evaluate_v1(dataset, predictions):
    """The official SQuAD v1.1 evaluation (`evaluate-v1.1.py`).

    Args:
      dataset: SQuAD JSON (a path, also gs://, or the parsed dict).
      predictions: {qas_id: answer text}, or a `SquadPredictions`.

    Returns:
      {"exact_match": %, "f1": %}. A question without a prediction scores 0 (with a
      warning), as in the official script.

    >>> data = {"data": [{"paragraphs": [{"context": "...", "qas": [
    ...     {"id": "q1", "answers": [{"text": "the Eiffel Tower"}, {"text": "Tower"}]},
    ...     {"id": "q2", "answers": [{"text": "1889"}]}]}]}]}
    >>> evaluate_v1(data, {"q1": "Eiffel Tower in Paris", "q2": "1889"})
    {'exact_match': 50.0, 'f1': 83.33333333333333}
    """
    questions, name = _questions(dataset)
    predictions = _predictions(predictions, questions, name)
    missing = [k for k in questions if k not in predictions]
    if missing:
        warnings.warn(
            f"{len(missing)} question(s) of {name} have no prediction (e.g. {missing[0]!r}) "
            "and score 0",
            stacklevel=2,
        )
    exact_match = f1 = 0
    for qas_id, gold in questions.items():
        if not gold:
            raise ValueError(
                f"{name}: question {qas_id!r} has no gold answer; SQuAD 2.0 data is scored "
                "with evaluate_v2"
            )
        if qas_id in predictions:
            exact_match += max(exact_match_score(predictions[qas_id], g) for g in gold)
            f1 += max(f1_score(predictions[qas_id], g) for g in gold)
    total = len(questions)
    return {"exact_match": 100.0 * exact_match / total, "f1": 100.0 * f1 / total}


def _na_probs(na_probs, predictions):
    """{qas_id: no-answer probability or null odds}, one real number per prediction."""
    if isinstance(na_probs, SquadPredictions):
        na_probs = na_probs.null_odds
    if not isinstance(na_probs, collections.abc.Mapping):
        raise TypeError(
            f"na_probs must be a {{qas_id: number}} mapping, got {type(na_probs).__name__}"
        )
    for qas_id, value in na_probs.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
            raise ValueError(f"na_probs[{qas_id!r}] must be a number, got {value!r}")
    missing = [k for k in predictions if k not in na_probs]
    if missing:
        raise ValueError(
            f"na_probs has no value for {len(missing)} predicted question(s), e.g. "
            f"{missing[0]!r}"
        )
    return na_probs


def _eval_dict(exact_scores, f1_scores, qid_list):
    total = len(qid_list)
    return collections.OrderedDict([
        ("exact", 100.0 * sum(exact_scores[k] for k in qid_list) / total),
        ("f1", 100.0 * sum(f1_scores[k] for k in qid_list) / total),
        ("total", total),
    ])


def _apply_threshold(scores, na_probs, has_answer, na_prob_thresh):
    """Scores with "no answer" where the no-answer probability is above the threshold."""
    return {
        qid: float(not has_answer[qid]) if na_probs[qid] > na_prob_thresh else score
        for qid, score in scores.items()
    }


def _best_threshold(predictions, scores, na_probs, has_answer):
    """The score and threshold of the best no-answer cut (official find_best_thresh)."""
    cur_score = best_score = sum(1 for k in has_answer if not has_answer[k])
    best_thresh = 0.0
    for qid in sorted(na_probs, key=lambda k: na_probs[k]):
        if qid not in scores:
            continue
        if has_answer[qid]:
            cur_score += scores[qid]
        else:
            cur_score += -1 if predictions[qid] else 0
        if cur_score > best_score:
            best_score = cur_score
            best_thresh = na_probs[qid]
    return 100.0 * best_score / len(scores), best_thresh


def evaluate_v2(dataset, predictions, na_probs=None, na_prob_thresh=1.0):
    """The official SQuAD v2.0 evaluation (`evaluate-v2.0.py`).

    Questions whose gold answers are empty (or normalize to nothing) are no-answer
    questions: "" is their only right answer.

    Args:
      dataset: SQuAD 2.0 JSON (a path, also gs://, or the parsed dict).
      predictions: {qas_id: answer text, "" for no answer}, or a `SquadPredictions` (whose
        `null_odds` then serve as `na_probs` unless given).
      na_probs: optional {qas_id: probability (or null odds) of no answer}, the script's
        --na-prob-file; with it come the best thresholds.
      na_prob_thresh: a question whose `na_probs` value exceeds this counts as answered "".

    Returns:
      An OrderedDict: exact, f1, total; HasAns_exact, HasAns_f1, HasAns_total and the
      NoAns_ ones when there are such questions; with `na_probs`, best_exact,
      best_exact_thresh, best_f1, best_f1_thresh.

    Raises:
      ValueError: a question without a prediction (the official script fails on it too),
        or a prediction without an `na_probs` value.

    >>> data = {"data": [{"paragraphs": [{"context": "...", "qas": [
    ...     {"id": "q1", "answers": [{"text": "1889"}]},
    ...     {"id": "q2", "answers": []}]}]}]}
    >>> result = evaluate_v2(data, {"q1": "1889", "q2": "Paris"}, {"q1": -2.0, "q2": 1.5},
    ...                      na_prob_thresh=2.0)
    >>> result["exact"], result["HasAns_exact"], result["NoAns_exact"]
    (50.0, 100.0, 0.0)
    >>> result["best_exact"], result["best_exact_thresh"]  # "" where na_probs > -2.0
    (100.0, -2.0)
    """
    questions, name = _questions(dataset)
    if isinstance(predictions, SquadPredictions) and na_probs is None:
        na_probs = predictions.null_odds or None
    predictions = _predictions(predictions, questions, name)
    missing = [k for k in questions if k not in predictions]
    if missing:
        raise ValueError(
            f"{len(missing)} question(s) of {name} have no prediction, e.g. {missing[0]!r}"
        )
    given_na_probs = na_probs is not None
    na_probs = _na_probs(na_probs, predictions) if given_na_probs else {
        k: 0.0 for k in predictions
    }
    has_answer = {qid: bool(gold) for qid, gold in questions.items()}
    exact_raw, f1_raw = {}, {}
    for qid, gold in questions.items():
        gold = [a for a in gold if normalize_answer(a)] or [""]
        exact_raw[qid] = max(compute_exact(a, predictions[qid]) for a in gold)
        f1_raw[qid] = max(compute_f1(a, predictions[qid]) for a in gold)
    exact = _apply_threshold(exact_raw, na_probs, has_answer, na_prob_thresh)
    f1 = _apply_threshold(f1_raw, na_probs, has_answer, na_prob_thresh)
    result = _eval_dict(exact, f1, list(exact))
    for prefix, wanted in (("HasAns", True), ("NoAns", False)):
        qids = [k for k, v in has_answer.items() if v == wanted]
        if qids:
            for key, value in _eval_dict(exact, f1, qids).items():
                result[f"{prefix}_{key}"] = value
    if given_na_probs:
        for key, raw in (("exact", exact_raw), ("f1", f1_raw)):
            best, thresh = _best_threshold(predictions, raw, na_probs, has_answer)
            result[f"best_{key}"] = best
            result[f"best_{key}_thresh"] = thresh
    return result
