"""Fine-tuning examples from TSV, CSV or JSON Lines files with a header.

`read_examples` reads one file (local or ``gs://``, through `tf.io.gfile`) into
`Examples`: texts, optional second texts (sentence pairs) and labels. The format comes from
the extension: ``.tsv`` (tab-separated, no quoting, as GLUE's files), ``.csv`` (RFC 4180
quoting), ``.jsonl``/``.json`` (one JSON object per line). Every problem names the file and,
where it has one, the line.
"""

import csv
import dataclasses
import io
import json
import math

from keras_bert import storage


FORMATS = {".tsv": "tsv", ".csv": "csv", ".jsonl": "jsonl", ".json": "jsonl"}
LABEL_TYPES = ("class", "float")


class DataFileError(ValueError):
    """A data file that is missing, empty or malformed, or lacks a column.

    >>> from keras_bert.data import DataFileError, read_examples
    >>> try:
    ...     read_examples("/no/such/train.tsv", text_column="sentence")
    ... except DataFileError as error:
    ...     print(error)
    /no/such/train.tsv: no such data file.
    """


@dataclasses.dataclass
class Examples:
    """Rows of a data file: ``texts`` (str), ``texts_b`` (str, or None for single texts),
    ``labels`` (int class ids or floats, or None without a label column),
    ``label_names`` (class id -> the label as written in the file, for string labels) and
    ``texts_c`` (a third column of texts, or None: an embedder's hard negatives).

    >>> from keras_bert.data import Examples
    >>> pairs = Examples(["a man eats", "it rains"], texts_b=["he eats", "it is dry"],
    ...                  labels=[1, 0])
    >>> len(pairs), pairs.x
    (2, (['a man eats', 'it rains'], ['he eats', 'it is dry']))
    >>> Examples(["great", "dull"]).x
    ['great', 'dull']
    """

    texts: list
    texts_b: list = None
    labels: list = None
    label_names: list = None
    texts_c: list = None

    def __len__(self):
        return len(self.texts)

    @property
    def x(self):
        """What a task model's fit/predict takes: the texts, or a tuple of pair segments (of
        columns, with ``texts_c``)."""
        if self.texts_b is None:
            return self.texts
        return (self.texts, self.texts_b) + ((self.texts_c,) if self.texts_c is not None
                                             else ())


def file_format(path):
    for ending, name in FORMATS.items():
        if str(path).lower().endswith(ending):
            return name
    raise DataFileError(f"{path}: unknown data file type; use one of "
                        f"{', '.join(sorted(FORMATS))}.")


def _rows(path, fmt):
    """Yields (line number, {column: value}) of a file with a header."""
    if not storage.exists(path):
        raise DataFileError(f"{path}: no such data file.")
    try:
        raw = storage.read_bytes(path)
    except OSError as e:
        raise DataFileError(f"{path}: cannot read it ({e.strerror or e}).") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        raise DataFileError(f"{path} line {line}: not UTF-8 ({e.reason}).") from None
    if not text.strip():
        raise DataFileError(f"{path}: the file is empty; expected a header line and rows.")
    if fmt == "jsonl":
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise DataFileError(f"{path} line {number}: not valid JSON ({e.msg}).") from None
            if not isinstance(row, dict):
                raise DataFileError(f"{path} line {number}: expected a JSON object, got "
                                    f"{type(row).__name__}.")
            yield number, row
        return
    if fmt == "tsv":
        reader = csv.reader(io.StringIO(text), delimiter="\t", quoting=csv.QUOTE_NONE)
    else:
        reader = csv.reader(io.StringIO(text))
    try:
        header = next(reader)
        for row in reader:
            number = reader.line_num
            if not any(cell.strip() for cell in row):
                continue
            if len(row) != len(header):
                raise DataFileError(f"{path} line {number}: {len(row)} fields, but the header "
                                    f"has {len(header)} ({header}).")
            yield number, dict(zip(header, row))
    except csv.Error as e:
        raise DataFileError(f"{path} line {reader.line_num}: {e}.") from None


def read_examples(path, text_column, text_b_column=None, label_column=None,
                  label_type="class", label_names=None, text_c_column=None):
    """Reads ``path`` into `Examples`.

    Args:
        path: a ``.tsv``, ``.csv`` or ``.jsonl`` file with a header (JSON Lines: keys).
        text_column: the column of the (first) text.
        text_b_column: the column of the second text of sentence pairs, if any.
        text_c_column: a third column of texts (``texts_c``: an embedder's negatives), if
            any; it needs ``text_b_column``.
        label_column: the label column, if any (test files may have none).
        label_type: ``"class"`` (integers, or strings mapped to ids by ``label_names`` or,
            without it, in sorted order) or ``"float"`` (regression).
        label_names: the class names in id order, to map string labels the same way across
            files (pass the train file's ``Examples.label_names`` to its eval file).

    Example:

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "train.tsv")
    >>> with open(path, "w") as f:
    ...     _ = f.write("sentence\\tlabel\\na great movie\\tpos\\ndull\\tneg\\n")
    >>> examples = read_examples(path, "sentence", label_column="label")
    >>> examples.texts, examples.labels, examples.label_names
    (['a great movie', 'dull'], [1, 0], ['neg', 'pos'])
    """
    if label_type not in LABEL_TYPES:
        raise ValueError(f"label_type must be one of {LABEL_TYPES}, got {label_type!r}.")
    if text_c_column and not text_b_column:
        raise ValueError("text_c_column is a third column of texts: give text_b_column too.")
    fmt = file_format(path)
    wanted = [c for c in (text_column, text_b_column, text_c_column, label_column) if c]
    texts, texts_b, texts_c, raw_labels = [], [], [], []
    seen_header = False
    for number, row in _rows(path, fmt):
        if not seen_header:
            missing = [c for c in wanted if c not in row]
            if missing:
                raise DataFileError(f"{path}: no column {', '.join(map(repr, missing))}; the "
                                    f"columns are {sorted(row)}.")
            seen_header = True
        values = {}
        for column in wanted:
            if column not in row:
                raise DataFileError(f"{path} line {number}: no {column!r}.")
            values[column] = row[column]
        for column in (text_column, text_b_column, text_c_column):
            if column and not isinstance(values[column], str):
                raise DataFileError(f"{path} line {number}: {column!r} is "
                                    f"{values[column]!r}, not text.")
        texts.append(values[text_column])
        if text_b_column:
            texts_b.append(values[text_b_column])
        if text_c_column:
            texts_c.append(values[text_c_column])
        if label_column:
            raw_labels.append((number, values[label_column]))
    if not texts:
        raise DataFileError(f"{path}: a header but no rows.")
    labels, names = None, None
    if label_column:
        labels, names = _labels(path, raw_labels, label_type, label_names)
    return Examples(texts, texts_b if text_b_column else None, labels, names,
                    texts_c if text_c_column else None)


def _labels(path, raw, label_type, label_names):
    if label_type == "float":
        out = []
        for number, value in raw:
            try:
                number_value = float(value)
            except (TypeError, ValueError):
                raise DataFileError(f"{path} line {number}: label {value!r} is not a number.") \
                    from None
            if not math.isfinite(number_value):
                raise DataFileError(f"{path} line {number}: label {value!r} is not finite.")
            out.append(number_value)
        return out, None
    as_ints = []
    for _, value in raw:
        if isinstance(value, bool):
            break
        try:
            as_ints.append(int(str(value).strip()))
        except ValueError:
            break
    if len(as_ints) == len(raw) and label_names is None:
        return as_ints, None
    names = list(label_names) if label_names is not None else sorted(
        {str(v).strip() for _, v in raw})
    index = {name: i for i, name in enumerate(names)}
    out = []
    for number, value in raw:
        key = str(value).strip()
        if key not in index:
            raise DataFileError(f"{path} line {number}: label {value!r} is not one of the "
                                f"classes {names}.")
        out.append(index[key])
    return out, names


def _list_cell(path, number, column, value):
    """A list-valued cell: a JSON list, or whitespace-separated text in TSV/CSV."""
    if isinstance(value, str):
        return value.split()
    if isinstance(value, list):
        return value
    raise DataFileError(f"{path} line {number}: {column!r} is {value!r:.60}, not a list.")


def read_tagging_examples(path, words_column, tags_column=None, tag_names=None):
    """Tagging data: one text per row, its words and one tag per word.

    ``words_column`` holds the words (a JSON list, or whitespace-separated text in TSV/CSV),
    ``tags_column`` the tags the same way (class ids, or names mapped to ids by ``tag_names``
    or, without it, in sorted order). Returns `Examples` whose ``texts`` are word lists and
    ``labels`` tag-id lists.

    Example:

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "ner.jsonl")
    >>> with open(path, "w") as f:
    ...     _ = f.write('{"tokens": ["Paris", "is", "big"], "tags": ["LOC", "O", "O"]}\\n')
    >>> examples = read_tagging_examples(path, "tokens", "tags")
    >>> examples.texts, examples.labels, examples.label_names
    ([['Paris', 'is', 'big']], [[0, 1, 1]], ['LOC', 'O'])
    """
    rows = []
    for number, row in _rows(path, file_format(path)):
        for column in (words_column, tags_column):
            if column and column not in row:
                raise DataFileError(f"{path} line {number}: no column {column!r}; the columns "
                                    f"are {sorted(row)}.")
        words = [str(w) for w in _list_cell(path, number, words_column, row[words_column])]
        tags = None
        if tags_column:
            tags = _list_cell(path, number, tags_column, row[tags_column])
            if len(tags) != len(words):
                raise DataFileError(f"{path} line {number}: {len(words)} words but {len(tags)} "
                                    "tags; give one tag per word.")
        rows.append((number, words, tags))
    if not rows:
        raise DataFileError(f"{path}: a header but no rows.")
    texts = [words for _, words, _ in rows]
    if not tags_column:
        return Examples(texts)
    flat = [(number, tag) for number, _, tags in rows for tag in tags]
    ids, names = _labels(path, flat, "class", tag_names)
    labels, i = [], 0
    for _, _, tags in rows:
        labels.append(ids[i:i + len(tags)])
        i += len(tags)
    return Examples(texts, None, labels, names)


def read_choice_examples(path, context_column, choices_column, label_column=None):
    """Multiple-choice data: a context, a JSON list of choices and the index of the right one
    per row (JSON Lines). Returns `Examples` with ``texts`` the contexts, ``texts_b`` the
    choice lists (all of one length) and ``labels`` the indices.

    Example:

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "swag.jsonl")
    >>> with open(path, "w") as f:
    ...     _ = f.write('{"ctx": "He sat", "endings": ["down.", "up."], "label": 0}\\n')
    >>> read_choice_examples(path, "ctx", "endings", "label").texts_b
    [['down.', 'up.']]
    """
    contexts, choices, raw_labels, width = [], [], [], None
    for number, row in _rows(path, file_format(path)):
        for column in (context_column, choices_column, label_column):
            if column and column not in row:
                raise DataFileError(f"{path} line {number}: no column {column!r}; the columns "
                                    f"are {sorted(row)}.")
        options = row[choices_column]
        if not isinstance(options, list) or not all(isinstance(o, str) for o in options):
            raise DataFileError(f"{path} line {number}: {choices_column!r} must be a JSON list "
                                f"of texts, got {options!r:.60}.")
        if width is None:
            width = len(options)
        if len(options) != width or width < 2:
            raise DataFileError(f"{path} line {number}: {len(options)} choices; every row needs "
                                f"the same number (>= 2; the first row has {width}).")
        contexts.append(str(row[context_column]))
        choices.append(options)
        if label_column:
            raw_labels.append((number, row[label_column]))
    if not contexts:
        raise DataFileError(f"{path}: no rows.")
    labels = None
    if label_column:
        labels, _ = _labels(path, raw_labels, "class", None)
        for (number, _), label in zip(raw_labels, labels):
            if not 0 <= label < width:
                raise DataFileError(f"{path} line {number}: label {label} is not a choice index "
                                    f"in [0, {width}).")
    return Examples(contexts, choices, labels)
