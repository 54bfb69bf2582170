"""SQuAD v1.1 / v2.0 JSON -> `SquadExample`s, as google-research/bert `read_squad_examples`.

The context is split into words on the original's whitespace (space, tab, CR, LF, U+202F),
each character is mapped to its word (`char_to_word_offset`), and for training the answer's
character span becomes a word span. Training questions whose answer text cannot be found in
that word span are skipped, as the original does; one warning says how many.
"""

import dataclasses
import json
import os
import warnings

from keras_bert import storage


# run_squad.is_whitespace: note that U+00A0 and other Unicode spaces stay inside words.
_WHITESPACE = frozenset(" \t\r\n\u202f")


@dataclasses.dataclass(eq=False)
class SquadExample:
    """One SQuAD question about one paragraph, as run_squad.py's `SquadExample`.

    Attributes:
      qas_id: the question's `id`.
      question_text: the question.
      context_text: the paragraph.
      doc_tokens: the paragraph split on whitespace (shared by the paragraph's questions).
      char_to_word_offset: for each character of the paragraph, the index of its word
        (-1 for whitespace before the first word).
      orig_answer_text: training: the answer's text ("" when impossible); else None.
      start_position, end_position: training: the answer's first and last word (-1 when
        impossible); else None.
      is_impossible: training with SQuAD 2.0: the question has no answer; else False.
      answers: every gold answer text (for evaluation; [] when there are none).
      plausible_answers: SQuAD 2.0's `plausible_answers` texts of an impossible question.

    Example:

    >>> data = {"data": [{"paragraphs": [{"context": "BERT was published in 2018.",
    ...     "qas": [{"id": "q1", "question": "When was BERT published?",
    ...              "answers": [{"text": "2018", "answer_start": 22}]}]}]}]}
    >>> example = read_squad_examples(data, is_training=True)[0]
    >>> example.doc_tokens
    ['BERT', 'was', 'published', 'in', '2018.']
    >>> example.orig_answer_text, example.start_position, example.end_position
    ('2018', 4, 4)
    """

    qas_id: str
    question_text: str
    context_text: str = dataclasses.field(repr=False)
    doc_tokens: list = dataclasses.field(repr=False)
    char_to_word_offset: list = dataclasses.field(repr=False)
    orig_answer_text: str = None
    start_position: int = None
    end_position: int = None
    is_impossible: bool = False
    answers: list = dataclasses.field(default_factory=list)
    plausible_answers: list = dataclasses.field(default_factory=list)


def load_squad_json(source):
    """A SQuAD file (path, also gs://) or its parsed dict -> (`data` list, name for errors)."""
    if isinstance(source, dict):
        name, content = "the SQuAD dict", source
    elif isinstance(source, (str, bytes, os.PathLike)):
        name = os.fsdecode(source)
        if not storage.isfile(name):
            raise FileNotFoundError(f"SQuAD file {name} does not exist")
        try:
            content = json.loads(storage.read_bytes(name).decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            raise ValueError(f"SQuAD file {name} is not valid UTF-8 JSON: {error}") from None
    else:
        raise TypeError(
            "SQuAD source must be a path or the parsed JSON dict, got "
            f"{type(source).__name__}"
        )
    if not isinstance(content, dict) or not isinstance(content.get("data"), list):
        raise ValueError(f"{name} is not SQuAD JSON: it needs a top-level \"data\" list")
    return content["data"], name


def _field(value, key, kind, where):
    """value[key], checked to be of `kind`; a clear error naming `where` otherwise."""
    if not isinstance(value, dict) or key not in value:
        raise ValueError(f"{where} has no {key!r}")
    item = value[key]
    if not isinstance(item, kind) or (kind is int and isinstance(item, bool)):
        kinds = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
        raise ValueError(f"{where}: {key!r} must be a {kinds}, got {type(item).__name__}")
    if isinstance(item, str):
        _check_unicode(item, f"{where}: {key!r}")
    return item


def _check_unicode(text, where):
    """JSON can spell lone surrogates ("\\ud800"); they are not text and cannot be UTF-8."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        raise ValueError(
            f"{where} is not valid Unicode: lone surrogate {text[error.start]!r} at "
            f"character {error.start}"
        ) from None


def split_words(text):
    """run_squad's whitespace split: (words, char_to_word_offset).

    >>> split_words("a  bc")
    (['a', 'bc'], [0, 0, 0, 1, 1])
    """
    doc_tokens = []
    char_to_word_offset = []
    prev_is_whitespace = True
    for c in text:
        if c in _WHITESPACE:
            prev_is_whitespace = True
        else:
            if prev_is_whitespace:
                doc_tokens.append(c)
            else:
                doc_tokens[-1] += c
            prev_is_whitespace = False
        char_to_word_offset.append(len(doc_tokens) - 1)
    return doc_tokens, char_to_word_offset


def _answer_texts(qa, key, where):
    answers = qa.get(key, [])
    if not isinstance(answers, list):
        raise ValueError(f"{where}: {key!r} must be a list, got {type(answers).__name__}")
    return [_field(a, "text", str, f"{where} {key}[{i}]") for i, a in enumerate(answers)]


def _answer_span(qa, context, char_to_word_offset, where):
    """The training answer: (text, start word, end word), checked against the context."""
    answers = qa.get("answers")
    if not isinstance(answers, list) or len(answers) != 1:
        count = len(answers) if isinstance(answers, list) else "no"
        hint = ""
        if qa.get("is_impossible") is True:
            hint = "; it is SQuAD 2.0 (is_impossible): pass version_2_with_negative=True"
        raise ValueError(
            f"{where}: for training, each answerable question needs exactly 1 answer in "
            f"'answers', got {count}{hint}"
        )
    text = _field(answers[0], "text", str, f"{where} answers[0]")
    start = _field(answers[0], "answer_start", int, f"{where} answers[0]")
    if not text.strip():
        raise ValueError(f"{where} answers[0]: the answer text is empty")
    if start < 0 or start + len(text) > len(context):
        raise ValueError(
            f"{where} answers[0]: answer_start {start} with text of {len(text)} characters "
            f"runs outside the context ({len(context)} characters)"
        )
    return text, char_to_word_offset[start], char_to_word_offset[start + len(text) - 1]


def read_squad_examples(source, is_training, version_2_with_negative=False):
    """Reads SQuAD v1.1 or v2.0 JSON into `SquadExample`s, as run_squad.read_squad_examples.

    Args:
      source: path of a SQuAD JSON file (read through `tf.io.gfile`, so gs:// works) or the
        parsed JSON dict (with its top-level "data" list).
      is_training: read the answer spans (exactly one answer per answerable question) and
        skip the questions whose answer text is not found in the context at `answer_start`
        (a warning says how many).
      version_2_with_negative: SQuAD 2.0: training questions carry `is_impossible`.

    Returns:
      A list of `SquadExample`, in file order.

    Raises:
      FileNotFoundError, ValueError: a missing file, bad JSON, or an entry that is not SQuAD
        (the error names the file and the entry: data index, paragraph index, qas id);
        also a question id used twice.

    >>> data = {"data": [{"paragraphs": [{"context": "Paris is in France.",
    ...     "qas": [{"id": "q1", "question": "Where is Paris?", "answers": [],
    ...              "is_impossible": True, "plausible_answers": [
    ...                  {"text": "France", "answer_start": 12}]}]}]}]}
    >>> [example] = read_squad_examples(data, True, version_2_with_negative=True)
    >>> example.is_impossible, example.start_position, example.plausible_answers
    (True, -1, ['France'])
    """
    data, name = load_squad_json(source)
    examples, skipped, seen = [], [], {}
    for i, entry in enumerate(data):
        article = f"{name}: data[{i}]"
        for j, paragraph in enumerate(_field(entry, "paragraphs", list, article)):
            where = f"{article} paragraphs[{j}]"
            context = _field(paragraph, "context", str, where)
            doc_tokens, char_to_word_offset = split_words(context)
            if not doc_tokens:
                raise ValueError(f"{where}: the context is empty")
            for k, qa in enumerate(_field(paragraph, "qas", list, where)):
                qas_id = _field(qa, "id", str, f"{where} qas[{k}]")
                at = f"{where} qas[{k}] (id {qas_id!r})"
                if qas_id in seen:
                    raise ValueError(f"{at}: the id is used twice (also at {seen[qas_id]})")
                seen[qas_id] = at
                example = SquadExample(
                    qas_id=qas_id,
                    question_text=_field(qa, "question", str, at),
                    context_text=context,
                    doc_tokens=doc_tokens,
                    char_to_word_offset=char_to_word_offset,
                    answers=_answer_texts(qa, "answers", at),
                    plausible_answers=_answer_texts(qa, "plausible_answers", at),
                )
                if is_training and not _read_training_answer(
                    example, qa, version_2_with_negative, at
                ):
                    skipped.append(example)
                    continue
                examples.append(example)
    _warn_skipped(skipped, name)
    return examples


def _read_training_answer(example, qa, version_2_with_negative, at):
    """Fills the answer span of a training example; False when the answer is not found."""
    if version_2_with_negative:
        example.is_impossible = _field(qa, "is_impossible", bool, at)
    if example.is_impossible:
        example.orig_answer_text, example.start_position, example.end_position = "", -1, -1
        return True
    text, start, end = _answer_span(qa, example.context_text, example.char_to_word_offset, at)
    example.orig_answer_text, example.start_position, example.end_position = text, start, end
    # Only answers whose text can be recovered from the words are kept (run_squad.py).
    actual_text = " ".join(example.doc_tokens[start : end + 1])
    cleaned_answer_text = " ".join(text.split())
    return actual_text.find(cleaned_answer_text) != -1


def _warn_skipped(skipped, name):
    if not skipped:
        return
    first = skipped[0]
    actual = " ".join(first.doc_tokens[first.start_position : first.end_position + 1])
    warnings.warn(
        f"{name}: skipped {len(skipped)} training question(s) whose answer text is not in "
        f"the context words at answer_start (as run_squad.py does), e.g. id "
        f"{first.qas_id!r}: {actual!r} vs. {first.orig_answer_text!r}",
        stacklevel=3,
    )
