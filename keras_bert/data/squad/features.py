"""`SquadExample`s -> model windows, as google-research/bert `convert_examples_to_features`.

A paragraph longer than the window is cut into overlapping doc spans (`doc_stride` apart);
each span becomes one feature `[CLS] question [SEP] span [SEP]`, padded with 0 to
`max_seq_length`. Tokenization is keras_bert's in-graph `BertTokenizer`, called on all the
distinct words of all paragraphs at once instead of once per word.
"""

import collections
import dataclasses

import numpy as np
import tensorflow as tf

from keras_bert.data.squad import tokenization as squad_text
from keras_bert.data.squad.examples import SquadExample

UNIQUE_ID_START = 1000000000  # run_squad.py numbers its features from here

# One feature to be: its example, which span of the paragraph, and what fills it. `answer` is
# the answer's (first, last) WordPiece in the paragraph, (-1, -1) when there is none.
_Window = collections.namedtuple(
    "_Window", ["example_index", "span_index", "start", "length", "query", "paragraph",
                "best_span", "answer"]
)


@dataclasses.dataclass(eq=False, repr=False)
class SquadFeatures:
    """The windows of SQuAD examples: model inputs, training labels, post-processing maps.

    Row `i` of every array is feature `i`; features of one example are consecutive.

    Attributes:
      input_word_ids, input_mask, input_type_ids: int32 [num_features, seq_length].
      start_positions, end_positions: int32 [num_features], the answer's first and last
        position in the window (0 when the answer is outside it or there is none); None
        unless made with `is_training=True`.
      is_impossible: bool [num_features], the example's `is_impossible`.
      example_index: int32 [num_features], the feature's example (index into the examples).
      doc_span_index: int32 [num_features], which window of its example.
      token_to_orig_map: int32 [num_features, seq_length], for each context token of the
        window the index of its word in `example.doc_tokens`; -1 elsewhere.
      token_is_max_context: bool [num_features, seq_length], whether this window gives the
        token its most context (the window whose prediction for the token counts).
      vocabulary: the tokenizer's vocabulary, for `tokens()`.

    Example:

    >>> from keras_bert.text import BertTokenizer
    >>> example = SquadExample("q1", "Who won?", "Ann did.", ["Ann", "did."], [0] * 4 +
    ...                        [1] * 4, "Ann", 0, 0)
    >>> features = convert_examples_to_features(
    ...     [example], BertTokenizer.from_preset("tiny_random"), max_seq_length=10,
    ...     max_query_length=4, is_training=True)
    >>> features.tokens(0)
    ['[CLS]', 'who', 'won', '?', '[SEP]', 'ann', 'did', '.', '[SEP]']
    >>> features.input_word_ids
    array([[ 2, 39, 89,  8,  3, 91, 90,  5,  3,  0]], dtype=int32)
    >>> features.start_positions, features.end_positions
    (array([5], dtype=int32), array([5], dtype=int32))
    """

    input_word_ids: np.ndarray
    input_mask: np.ndarray
    input_type_ids: np.ndarray
    start_positions: np.ndarray
    end_positions: np.ndarray
    is_impossible: np.ndarray
    example_index: np.ndarray
    doc_span_index: np.ndarray
    token_to_orig_map: np.ndarray
    token_is_max_context: np.ndarray
    vocabulary: list

    def __len__(self):
        return len(self.input_word_ids)

    def __repr__(self):
        return (
            f"SquadFeatures(num_features={len(self)}, "
            f"seq_length={self.input_word_ids.shape[1]}, "
            f"labels={self.start_positions is not None})"
        )

    @property
    def unique_id(self):
        """int64 [num_features]: run_squad.py's feature ids (1000000000, 1000000001, ...)."""
        return UNIQUE_ID_START + np.arange(len(self), dtype=np.int64)

    @property
    def inputs(self):
        """The model inputs by their TF Hub names."""
        return {
            "input_word_ids": self.input_word_ids,
            "input_mask": self.input_mask,
            "input_type_ids": self.input_type_ids,
        }

    @property
    def labels(self):
        """{"start_positions", "end_positions"}, or None for features made for prediction."""
        if self.start_positions is None:
            return None
        return {"start_positions": self.start_positions, "end_positions": self.end_positions}

    def tokens(self, index):
        """Feature `index` as WordPiece strings, padding left out."""
        length = int(self.input_mask[index].sum())
        return [self.vocabulary[i] for i in self.input_word_ids[index, :length].tolist()]

    def to_dataset(self):
        """A `tf.data.Dataset` of single features: (inputs, labels) pairs, or inputs alone.

        Batch and shuffle it as usual: `features.to_dataset().shuffle(n).batch(32)`.
        """
        if self.labels is None:
            return tf.data.Dataset.from_tensor_slices(self.inputs)
        return tf.data.Dataset.from_tensor_slices((self.inputs, self.labels))


@dataclasses.dataclass
class _Paragraph:
    """A context in WordPieces: ids, their strings, and the maps to and from its words."""

    ids: list
    tokens: list
    tok_to_orig_index: list
    orig_to_tok_index: list


def _paragraph(doc_tokens, pieces_of_word, vocabulary):
    ids, tok_to_orig_index, orig_to_tok_index = [], [], []
    for i, word in enumerate(doc_tokens):
        orig_to_tok_index.append(len(ids))
        pieces = pieces_of_word[word]
        tok_to_orig_index.extend([i] * len(pieces))
        ids.extend(pieces)
    tokens = [vocabulary[i] for i in ids]
    return _Paragraph(ids, tokens, tok_to_orig_index, orig_to_tok_index)


def _improve_answer_span(doc_tokens, input_start, input_end, answer_tokens):
    """The sub-span whose WordPieces are exactly the answer's (run_squad.py)."""
    tok_answer_text = " ".join(answer_tokens)
    for new_start in range(input_start, input_end + 1):
        for new_end in range(input_end, new_start - 1, -1):
            if " ".join(doc_tokens[new_start : new_end + 1]) == tok_answer_text:
                return new_start, new_end
    return input_start, input_end


def _answer_tokens_span(example, paragraph, answer_tokens):
    """The training answer as (first, last) WordPiece of the paragraph; (-1, -1) if none."""
    if example.is_impossible:
        return -1, -1
    start = paragraph.orig_to_tok_index[example.start_position]
    if example.end_position < len(example.doc_tokens) - 1:
        end = paragraph.orig_to_tok_index[example.end_position + 1] - 1
    else:
        end = len(paragraph.ids) - 1
    return _improve_answer_span(paragraph.tokens, start, end, answer_tokens)


def _doc_spans(num_tokens, max_tokens_for_doc, doc_stride):
    """The sliding windows over the paragraph: [(start, length)]."""
    spans = []
    start = 0
    while start < num_tokens:
        length = min(num_tokens - start, max_tokens_for_doc)
        spans.append((start, length))
        if start + length == num_tokens:
            break
        start += min(length, doc_stride)
    return spans


def _max_context_span(spans, num_tokens):
    """For each paragraph token, the span giving it the most context (_check_is_max_context).

    The score of a token in a span is min(left, right context) + 0.01 * span length; the
    first span with the highest score wins.
    """
    starts = np.array([s for s, _ in spans])[:, None]  # [spans, 1]
    lengths = np.array([n for _, n in spans])[:, None]
    ends = starts + lengths - 1
    position = np.arange(num_tokens)[None, :]  # [1, tokens]
    score = np.minimum(position - starts, ends - position) + 0.01 * lengths  # [spans, tokens]
    score = np.where((position >= starts) & (position <= ends), score, -np.inf)
    return np.argmax(score, axis=0)  # [tokens]


def _check_arguments(examples, max_seq_length, doc_stride, max_query_length, is_training):
    for name, value, minimum in (
        ("max_seq_length", max_seq_length, 1),
        ("doc_stride", doc_stride, 1),
        ("max_query_length", max_query_length, 0),
    ):
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < minimum:
            raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    if max_seq_length <= max_query_length + 3:
        raise ValueError(
            f"max_seq_length ({max_seq_length}) must be greater than max_query_length "
            f"({max_query_length}) + 3, for [CLS], [SEP], [SEP] and at least one context token"
        )
    if isinstance(examples, SquadExample) or not hasattr(examples, "__len__") or not examples:
        raise ValueError("examples must be a non-empty list of SquadExample")
    for i, example in enumerate(examples):
        if not isinstance(example, SquadExample):
            raise TypeError(f"examples[{i}] is a {type(example).__name__}, not a SquadExample")
        if is_training and example.start_position is None:
            raise ValueError(
                f"examples[{i}] (id {example.qas_id!r}) has no answer span; for training, "
                "read the examples with read_squad_examples(..., is_training=True)"
            )


def convert_examples_to_features(
    examples,
    tokenizer,
    max_seq_length=384,
    doc_stride=128,
    max_query_length=64,
    is_training=False,
):
    """Cuts examples into model windows exactly as run_squad.convert_examples_to_features.

    The question is cut to `max_query_length` WordPieces; the context is cut into spans of
    at most `max_seq_length - len(question) - 3` WordPieces, `doc_stride` apart. For
    training the answer is narrowed to the WordPieces of its text (`_improve_answer_span`);
    a window that does not hold the whole answer, and every window of an impossible
    question, gets positions 0 ([CLS]).

    Args:
      examples: `SquadExample`s (from `read_squad_examples`).
      tokenizer: a `keras_bert.text.BertTokenizer`.
      max_seq_length: tokens per window.
      doc_stride: tokens between the starts of consecutive windows.
      max_query_length: question WordPieces kept.
      is_training: also make `start_positions` / `end_positions`.

    Returns:
      A `SquadFeatures`.

    >>> from keras_bert.text import BertTokenizer
    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "c", "d", "e", "?"]
    >>> example = SquadExample("q", "a?", "b c d e", ["b", "c", "d", "e"],
    ...                        [0, 0, 1, 1, 2, 2, 3], "d", 2, 2)
    >>> features = convert_examples_to_features(
    ...     [example], BertTokenizer(vocab), max_seq_length=7, doc_stride=1,
    ...     max_query_length=2, is_training=True)
    >>> [features.tokens(i)[4:-1] for i in range(len(features))]
    [['b', 'c'], ['c', 'd'], ['d', 'e']]
    >>> features.start_positions  # the answer "d" is in the second and third windows
    array([0, 5, 4], dtype=int32)
    >>> features.token_is_max_context[:, 4:6]  # "c" counts in window 0, "d" in window 1
    array([[ True,  True],
           [False,  True],
           [False,  True]])
    """
    _check_arguments(examples, max_seq_length, doc_stride, max_query_length, is_training)
    squad_text.check_tokenizer(tokenizer)
    vocabulary = tokenizer.vocabulary
    queries = squad_text.wordpiece_ids(tokenizer, [e.question_text for e in examples])
    pieces_of_word = squad_text.wordpiece_ids(
        tokenizer, [w for e in _unique_paragraphs(examples) for w in e.doc_tokens]
    )
    answers = squad_text.wordpiece_ids(
        tokenizer, [e.orig_answer_text for e in examples if is_training and not e.is_impossible]
    )
    paragraphs = {}  # id(doc_tokens) -> _Paragraph; questions share their paragraph's list
    windows = []
    for example_index, example in enumerate(examples):
        key = id(example.doc_tokens)
        if key not in paragraphs:
            paragraphs[key] = _paragraph(example.doc_tokens, pieces_of_word, vocabulary)
        paragraph = paragraphs[key]
        if not paragraph.ids:
            raise ValueError(
                f"examples[{example_index}] (id {example.qas_id!r}): the context has no "
                f"WordPieces (only characters the tokenizer drops): {example.context_text!r}"
            )
        query = queries[example.question_text][:max_query_length]
        answer = (-1, -1)
        if is_training:
            answer_tokens = [vocabulary[i] for i in answers.get(example.orig_answer_text, [])]
            answer = _answer_tokens_span(example, paragraph, answer_tokens)
        spans = _doc_spans(len(paragraph.ids), max_seq_length - len(query) - 3, doc_stride)
        best_span = _max_context_span(spans, len(paragraph.ids))
        windows += [
            _Window(example_index, span_index, start, length, query, paragraph, best_span, answer)
            for span_index, (start, length) in enumerate(spans)
        ]
    return _fill(windows, examples, tokenizer, max_seq_length, is_training)


def _unique_paragraphs(examples):
    return list({id(e.doc_tokens): e for e in examples}.values())


def _fill(windows, examples, tokenizer, max_seq_length, is_training):
    """Writes the windows into the feature arrays."""
    n = len(windows)
    ids = np.zeros((n, max_seq_length), np.int32)  # [features, seq]; 0-padded as run_squad
    mask = np.zeros((n, max_seq_length), np.int32)
    type_ids = np.zeros((n, max_seq_length), np.int32)
    to_orig = np.full((n, max_seq_length), -1, np.int32)
    max_context = np.zeros((n, max_seq_length), bool)
    starts = np.zeros(n, np.int32)
    ends = np.zeros(n, np.int32)
    cls, sep = tokenizer.cls_token_id, tokenizer.sep_token_id
    for row, w in enumerate(windows):
        span = slice(w.start, w.start + w.length)  # in the paragraph
        doc = slice(len(w.query) + 2, len(w.query) + 2 + w.length)  # in the window
        tokens = [cls, *w.query, sep, *w.paragraph.ids[span], sep]
        ids[row, : len(tokens)] = tokens
        mask[row, : len(tokens)] = 1
        type_ids[row, doc.start : len(tokens)] = 1
        to_orig[row, doc] = w.paragraph.tok_to_orig_index[span]
        max_context[row, doc] = w.best_span[span] == w.span_index
        first, last = w.answer
        if first >= 0 and first >= w.start and last <= w.start + w.length - 1:
            starts[row] = first - w.start + doc.start  # else 0: [CLS], as run_squad.py
            ends[row] = last - w.start + doc.start
    return SquadFeatures(
        input_word_ids=ids,
        input_mask=mask,
        input_type_ids=type_ids,
        start_positions=starts if is_training else None,
        end_positions=ends if is_training else None,
        is_impossible=np.array([examples[w.example_index].is_impossible for w in windows], bool),
        example_index=np.array([w.example_index for w in windows], np.int32),
        doc_span_index=np.array([w.span_index for w in windows], np.int32),
        token_to_orig_map=to_orig,
        token_is_max_context=max_context,
        vocabulary=tokenizer.vocabulary,
    )
