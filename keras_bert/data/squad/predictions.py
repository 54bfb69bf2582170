"""Start/end logits per window -> answer text per question, as run_squad.write_predictions.

For each question, the `n_best_size` best starts and ends of each of its windows are paired;
pairs outside the context, ending before they start, longer than `max_answer_length`, or
starting at a token another window sees with more context are dropped. The rest are ranked
by start + end logit, turned back into the paragraph's own characters (`get_final_text`) and
de-duplicated into the n-best list. SQuAD 2.0 also weighs the null answer ([CLS], [CLS]).
"""

import collections
import dataclasses
import json
import math
import os
import warnings

import numpy as np

from keras_bert import storage
from keras_bert.data.squad import tokenization as squad_text
from keras_bert.data.squad.examples import SquadExample
from keras_bert.data.squad.features import SquadFeatures

_Candidate = collections.namedtuple(
    "_Candidate", ["feature_index", "start_index", "end_index", "start_logit", "end_logit"]
)
_Entry = collections.namedtuple("_Entry", ["text", "start_logit", "end_logit"])


@dataclasses.dataclass
class SquadPredictions:
    """The answers to SQuAD questions, as run_squad.py writes them.

    Attributes:
      predictions: {qas_id: answer text} ("" for no answer under SQuAD 2.0).
      nbest: {qas_id: [{"text", "probability", "start_logit", "end_logit"}, ...]}, best
        first; probabilities are a softmax over the n-best scores.
      null_odds: SQuAD 2.0: {qas_id: null score - best non-null score} (the answer is ""
        where this exceeds `null_score_diff_threshold`); {} for SQuAD 1.1.

    Example:

    >>> from keras_bert.text import BertTokenizer
    >>> from keras_bert.data import convert_examples_to_features, read_squad_examples
    >>> tokenizer = BertTokenizer.from_preset("tiny_random")
    >>> data = {"data": [{"paragraphs": [{"context": "Ann did.",
    ...     "qas": [{"id": "q1", "question": "Who won?", "answers": []}]}]}]}
    >>> examples = read_squad_examples(data, is_training=False)
    >>> features = convert_examples_to_features(examples, tokenizer, max_seq_length=10,
    ...                                         max_query_length=4)
    >>> features.tokens(0)
    ['[CLS]', 'who', 'won', '?', '[SEP]', 'ann', 'did', '.', '[SEP]']
    >>> start_logits = np.array([[0, 0, 0, 0, 0, 5, 1, 0, 0, 0]], np.float32)
    >>> end_logits = np.array([[0, 0, 0, 0, 0, 4, 2, 0, 0, 0]], np.float32)
    >>> result = compute_predictions(examples, features, start_logits, end_logits, tokenizer)
    >>> result.predictions
    {'q1': 'Ann'}
    >>> [(e["text"], round(e["probability"], 3)) for e in result.nbest["q1"][:2]]
    [('Ann', 0.865), ('Ann did', 0.117)]
    """

    predictions: dict
    nbest: dict
    null_odds: dict

    def write(self, directory):
        """Writes predictions.json, nbest_predictions.json and (2.0) null_odds.json.

        Each atomically, through `keras_bert.storage` (local paths, gs://, ram://); returns
        the paths written.
        """
        directory = os.fsdecode(directory)
        storage.makedirs(directory)
        files = {"predictions.json": self.predictions, "nbest_predictions.json": self.nbest}
        if self.null_odds:
            files["null_odds.json"] = self.null_odds
        paths = []
        for name, content in files.items():
            path = os.path.join(directory, name)
            storage.write_text(path, json.dumps(content, indent=4) + "\n")
            paths.append(path)
        return paths


def _positive_int(name, value):
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    return int(value)


def _logits(name, logits, features):
    """[num_features, seq_length] finite floats (float32 values keep their exact value)."""
    array = np.asarray(logits.numpy() if hasattr(logits, "numpy") else logits)
    expected = features.input_word_ids.shape
    if array.shape != expected:
        raise ValueError(
            f"{name} must have the features' shape [num_features, seq_length] = "
            f"{list(expected)}, got {list(array.shape)}"
        )
    if not np.issubdtype(array.dtype, np.number) or np.issubdtype(array.dtype, np.complexfloating):
        raise ValueError(f"{name} must be real numbers, got dtype {array.dtype}")
    array = array.astype(np.float64)
    bad = np.argwhere(~np.isfinite(array))
    if len(bad):
        raise ValueError(
            f"{name} has {len(bad)} value(s) that are NaN or infinite, first at feature "
            f"{bad[0][0]}, position {bad[0][1]}"
        )
    return array


def _check_examples(examples, features):
    if not isinstance(features, SquadFeatures):
        raise TypeError(f"features must be SquadFeatures, got {type(features).__name__}")
    if isinstance(examples, SquadExample) or not hasattr(examples, "__len__") or not examples:
        raise ValueError("examples must be a non-empty list of SquadExample")
    seen = set()
    for i, example in enumerate(examples):
        if not isinstance(example, SquadExample):
            raise TypeError(f"examples[{i}] is a {type(example).__name__}, not a SquadExample")
        if example.qas_id in seen:
            raise ValueError(f"examples[{i}]: qas_id {example.qas_id!r} is used twice")
        seen.add(example.qas_id)
    # The features must be the windows of these examples: indexes and words in range.
    if len(features) and features.example_index.max() >= len(examples):
        raise ValueError(
            f"features do not belong to these examples: they refer to example "
            f"{features.example_index.max()}, but there are {len(examples)}"
        )
    num_words = np.array([len(examples[i].doc_tokens) for i in features.example_index])
    beyond = np.flatnonzero(features.token_to_orig_map.max(axis=1, initial=-1) >= num_words)
    if len(beyond):
        i = beyond[0]
        raise ValueError(
            f"features do not belong to these examples: feature {i} points past the "
            f"{num_words[i]} words of examples[{features.example_index[i]}]"
        )


def _best_indexes(logits, n_best_size):
    """Positions of the n largest logits, ties in position order (run_squad.py's sort)."""
    return np.argsort(-logits, kind="stable")[:n_best_size]


def _candidates(features, index, start_logits, end_logits, n_best_size, max_answer_length):
    """The valid (start, end) pairs of one window among its n best starts and ends."""
    starts = _best_indexes(start_logits[index], n_best_size)  # [n]
    ends = _best_indexes(end_logits[index], n_best_size)  # [n]
    in_context = features.token_to_orig_map[index] >= 0  # [seq]; no padding, no question
    valid = (
        (in_context[starts] & features.token_is_max_context[index][starts])[:, None]
        & in_context[ends][None, :]
        & (ends[None, :] >= starts[:, None])
        & (ends[None, :] - starts[:, None] + 1 <= max_answer_length)
    )  # [n, n]
    return [
        _Candidate(index, s, e, float(start_logits[index, s]), float(end_logits[index, e]))
        for s, e in zip(*(a[valid].tolist() for a in np.meshgrid(starts, ends, indexing="ij")))
    ]


def get_final_text(pred_text, orig_text, orig_words):
    """Projects the predicted WordPiece text back onto the paragraph's own characters.

    `orig_words` is BERT's basic tokenization of `orig_text`. The two are aligned character
    by character after removing spaces (" " only); when their lengths then differ, or
    `pred_text` is not in the words, `orig_text` comes back whole (run_squad.get_final_text).

    >>> get_final_text("steve smith", "Steve Smith's", ["steve", "smith", "'", "s"])
    'Steve Smith'
    >>> get_final_text("1895", "(1895-1943).", ["(", "1895", "-", "1943", ")", "."])
    '1895'
    """
    tok_text = " ".join(orig_words)
    start = tok_text.find(pred_text)
    end = start + len(pred_text) - 1
    if start == -1 or len(orig_text.replace(" ", "")) != len(tok_text.replace(" ", "")):
        return orig_text
    if end < start or tok_text[start] == " " or tok_text[end] == " ":
        return orig_text  # an end that is no character of the words
    # Character k without spaces: in tok_text at k + (spaces before it), likewise in orig_text.
    ns_start = start - tok_text.count(" ", 0, start)
    ns_end = end - tok_text.count(" ", 0, end)
    orig_positions = [i for i, c in enumerate(orig_text) if c != " "]
    return orig_text[orig_positions[ns_start] : orig_positions[ns_end] + 1]


def _softmax(scores):
    top = max(scores)
    exp_scores = [math.exp(score - top) for score in scores]
    total = 0.0
    for x in exp_scores:  # summed in order, as run_squad._compute_softmax
        total += x
    return [x / total for x in exp_scores]


def _span_text(features, tokens, candidate, example, words_of):
    """A candidate span as text of the paragraph."""
    tok_text = " ".join(tokens[candidate.start_index : candidate.end_index + 1])
    tok_text = tok_text.replace(" ##", "").replace("##", "")  # WordPieces joined
    tok_text = " ".join(tok_text.strip().split())
    to_orig = features.token_to_orig_map[candidate.feature_index]
    first, last = to_orig[candidate.start_index], to_orig[candidate.end_index]
    orig_tokens = example.doc_tokens[first : last + 1]
    orig_words = [w for token in orig_tokens for w in words_of[token]]
    return get_final_text(tok_text, " ".join(orig_tokens), orig_words)


def _nbest(example, features, feature_indexes, logits, settings, words_of):
    """The n-best answers of one question and its null score (SQuAD 2.0)."""
    start_logits, end_logits = logits
    n_best_size, max_answer_length, version_2 = settings
    candidates = []
    score_null, null = 1000000, _Candidate(0, 0, 0, 0, 0)  # run_squad.py's starting values
    for index in feature_indexes:
        if version_2:
            null_start, null_end = float(start_logits[index, 0]), float(end_logits[index, 0])
            if null_start + null_end < score_null:
                score_null = null_start + null_end
                null = _Candidate(index, 0, 0, null_start, null_end)
        candidates += _candidates(
            features, index, start_logits, end_logits, n_best_size, max_answer_length)
    if version_2:
        candidates.append(null)
    candidates.sort(key=lambda c: c.start_logit + c.end_logit, reverse=True)  # stable
    nbest, seen, tokens = [], set(), {}
    for candidate in candidates:
        if len(nbest) >= n_best_size:
            break
        text = ""
        if candidate.start_index > 0:  # not the null answer
            index = candidate.feature_index
            if index not in tokens:
                tokens[index] = features.tokens(index)
            text = _span_text(features, tokens[index], candidate, example, words_of)
            if text in seen:
                continue
        seen.add(text)
        nbest.append(_Entry(text, candidate.start_logit, candidate.end_logit))
    if version_2 and "" not in seen:
        nbest.append(_Entry("", null.start_logit, null.end_logit))
    return nbest, score_null


def compute_predictions(
    examples,
    features,
    start_logits,
    end_logits,
    tokenizer,
    n_best_size=20,
    max_answer_length=30,
    version_2_with_negative=False,
    null_score_diff_threshold=0.0,
):
    """The answer, n-best list and (SQuAD 2.0) null odds of every question.

    The same answers, n-best lists and null odds as run_squad.write_predictions, given the
    same logits. A question none of whose pairs is valid gets run_squad.py's placeholder
    answer "empty" under SQuAD 1.1, and "" with null odds +inf under SQuAD 2.0 (where
    run_squad.py fails); a warning counts them.

    Args:
      examples: the `SquadExample`s the features were made from.
      features: their `SquadFeatures` (from `convert_examples_to_features`).
      start_logits, end_logits: the model's outputs, [num_features, seq_length] each
        (NumPy arrays or tensors).
      tokenizer: the `keras_bert.text.BertTokenizer` of the features; its `do_lower_case`
        is the one the answers are mapped back with.
      n_best_size: starts and ends tried per window, and answers kept per question.
      max_answer_length: longest answer, in WordPieces.
      version_2_with_negative: SQuAD 2.0: "no answer" competes with the best span.
      null_score_diff_threshold: SQuAD 2.0: answer "" when the null score exceeds the
        best span's score by more than this.

    Returns:
      A `SquadPredictions`, ordered as the examples.

    SQuAD 2.0: "no answer" wins when [CLS] scores more than the best span plus the threshold.

    >>> from keras_bert.text import BertTokenizer
    >>> from keras_bert.data import convert_examples_to_features, read_squad_examples
    >>> tokenizer = BertTokenizer.from_preset("tiny_random")
    >>> data = {"data": [{"paragraphs": [{"context": "Ann did.",
    ...     "qas": [{"id": "q1", "question": "Who won?", "answers": []}]}]}]}
    >>> examples = read_squad_examples(data, is_training=False)
    >>> features = convert_examples_to_features(examples, tokenizer, 10, max_query_length=4)
    >>> start_logits = np.array([[3, 0, 0, 0, 0, 2, 0, 0, 0, 0]])  # [CLS] + [CLS]: 6
    >>> end_logits = np.array([[3, 0, 0, 0, 0, 1, 0, 0, 0, 0]])  # "Ann": 2 + 1 = 3
    >>> for threshold in (0.0, 5.0):
    ...     result = compute_predictions(examples, features, start_logits, end_logits,
    ...         tokenizer, version_2_with_negative=True, null_score_diff_threshold=threshold)
    ...     print(result.predictions, result.null_odds)
    {'q1': ''} {'q1': 3.0}
    {'q1': 'Ann'} {'q1': 3.0}
    """
    _check_examples(examples, features)
    settings = (
        _positive_int("n_best_size", n_best_size),
        _positive_int("max_answer_length", max_answer_length),
        bool(version_2_with_negative),
    )
    threshold = float(null_score_diff_threshold)
    if not math.isfinite(threshold):
        raise ValueError(f"null_score_diff_threshold must be finite, got {threshold}")
    logits = (_logits("start_logits", start_logits, features),
              _logits("end_logits", end_logits, features))
    paragraphs = {id(e.doc_tokens): e.doc_tokens for e in examples}.values()
    words_of = squad_text.basic_words(tokenizer, [w for p in paragraphs for w in p])
    features_of = collections.defaultdict(list)
    for index, example_index in enumerate(features.example_index.tolist()):
        features_of[example_index].append(index)

    result = SquadPredictions({}, {}, {})
    unanswered = []
    for example_index, example in enumerate(examples):
        nbest, score_null = _nbest(example, features, features_of[example_index], logits,
                                   settings, words_of)
        if not nbest:
            unanswered.append(example.qas_id)
            nbest.append(_Entry("empty", 0.0, 0.0))  # run_squad.py's placeholder
        probabilities = _softmax([e.start_logit + e.end_logit for e in nbest])
        result.nbest[example.qas_id] = [
            {"text": e.text, "probability": p, "start_logit": e.start_logit,
             "end_logit": e.end_logit}
            for e, p in zip(nbest, probabilities)
        ]
        best = next((e for e in nbest if e.text), None)
        if not version_2_with_negative:
            result.predictions[example.qas_id] = nbest[0].text
        elif best is None:
            unanswered.append(example.qas_id)
            result.null_odds[example.qas_id] = math.inf
            result.predictions[example.qas_id] = ""
        else:
            score_diff = score_null - best.start_logit - best.end_logit
            result.null_odds[example.qas_id] = score_diff
            result.predictions[example.qas_id] = "" if score_diff > threshold else best.text
    if unanswered:
        warnings.warn(
            f"{len(unanswered)} question(s) had no valid answer span among the n_best_size="
            f"{n_best_size} best starts and ends (e.g. {unanswered[0]!r}); they are answered "
            + ('"" (null odds inf)' if version_2_with_negative
               else '"empty", as run_squad.py does'),
            stacklevel=2,
        )
    return result
