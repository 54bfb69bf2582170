"""The one reader of raw input: what a user hands a preprocessor, or a task model's ``fit``,
``evaluate`` and ``predict``, turned into string tensors, or a `TaskInputError` naming what is
wrong and listing the forms that are read.

Each preprocessor names its form (`RawInputReader.input_form`) and reads through
`read_raw_inputs`; the task models and the serving exports ask their preprocessor, so the
answer to "what raw input does this task take?" is written here once:

* ``"texts"`` (`BertPreprocessor` and the masked-LM preprocessors): a batch of texts (a list
  of str, a numpy or pandas column of str, a tf.string tensor [batch]); a tuple of 1 to 3
  such batches ``(texts_a, texts_b)``, one per segment (a list of tensors too); or a list of
  pairs (or triples) ``[[text_a, text_b], ...]``, as Hugging Face tokenizers take them.
  Unbatched (a preprocessor called on its own), a single string too, and symbolic inputs.
* ``"words"`` (`BertTokenClassifierPreprocessor`): a list of word lists, a batch of texts
  (split on whitespace, as the serving export splits them), or a ragged tf.string tensor
  [batch, (words)].
* ``"choices"`` (`BertMultipleChoicePreprocessor`): ``(contexts, choices)`` with contexts
  [batch] and choices [batch, num_choices], or ``choices`` alone.
* ``"columns"`` (`BertTextEmbedderPreprocessor`): a batch of texts, as ``"texts"`` reads it;
  or a tuple of 2 or 3 such batches ``(anchors, positives)`` / ``(anchors, positives,
  negatives)`` (a list of tensors too), or a list of pairs (or triples) ``[[anchor, positive],
  ...]``: columns of separate texts, each embedded on its own (not segments of one sequence).

An empty batch (``[]``, ``()``, an empty array or column, ``([], [])``) is read as texts of no
rows in every form. ``batched=True`` is how ``fit``/``evaluate``/``predict`` read: batches only
(a single string is an error that says to wrap it in a list).

Example:

>>> [t.numpy().tolist() for t in read_raw_inputs([["a question", "a context"]])]
[[b'a question'], [b'a context']]
>>> read_raw_inputs(["Paris is big"], form=WORDS)[0].to_list()
[[b'Paris', b'is', b'big']]
>>> read_raw_inputs("a great movie", batched=True)
Traceback (most recent call last):
...
keras_bert.checks.TaskInputError: BertPreprocessor texts is a single string; fit/evaluate/predict take a batch: wrap it in a list, e.g. ['a great movie']. ...
"""

import keras
import numpy as np
import tensorflow as tf

from keras_bert import checks
from keras_bert.checks import TaskInputError  # the one error of raw input

TEXTS, WORDS, CHOICES, COLUMNS = "texts", "words", "choices", "columns"
SEGMENT_NAMES = ("texts_a", "texts_b", "texts_c")
COLUMN_NAMES = ("anchors", "positives", "negatives")

_BATCH = "a batch of texts (a list of str, a numpy or pandas column of str, a tf.string tensor " \
         "[batch])"
_ACCEPTED = {
    TEXTS: f"{_BATCH}; a tuple of 1 to 3 such batches, (texts_a, texts_b), one per segment "
           "(also a list of tensors); or a list of pairs (or triples) of strings, "
           "[[text_a, text_b], ...], as Hugging Face tokenizers take them",
    WORDS: "a list of word lists ([['Paris', 'is', 'big'], ...]); a batch of texts, split on "
           "whitespace (a list of str, a numpy or pandas column of str, a tf.string tensor "
           "[batch]); or a ragged tf.string tensor [batch, (words)]",
    CHOICES: "a tuple (contexts, choices) of a batch of contexts [batch] and a batch of choices "
             "[batch, num_choices] (lists of num_choices texts, a numpy array or tf.string "
             "tensor); or the choices alone",
    COLUMNS: f"{_BATCH}; or columns of separate texts, each embedded on its own: a tuple of 2 "
             "or 3 such batches, (anchors, positives) or (anchors, positives, negatives) (also "
             "a list of tensors), or a list of pairs (or triples) of strings, "
             "[[anchor, positive], ...]",
}


def accepted(form=TEXTS, batched=False):
    """What ``form`` reads, in words (the end of every message of this module)."""
    if form in (TEXTS, COLUMNS) and not batched:
        return "a string, or " + _ACCEPTED[form]
    return _ACCEPTED[form]


def read_raw_inputs(x, form=TEXTS, batched=False, where="BertPreprocessor"):
    """Raw input ``x`` of ``form`` -> a tuple of tensors: 1 to 3 tf.string segments
    [batch] (``"texts"``; unbatched: scalars), the ragged words [batch, (words)] (``"words"``),
    contexts [batch] and choices [batch, num_choices] (``"choices"``; choices alone: one), or
    1 to 3 tf.string columns [batch] (``"columns"``).

    ``where`` names the reader in messages (the preprocessor's class). `TaskInputError` for
    anything else; where a graph leaves batch sizes unknown, assertions in front of the
    tensors.
    """
    if form in (TEXTS, COLUMNS):
        return _texts(x, batched, where, form)
    if form == WORDS:
        return (_words(x, batched, where),)
    if form == CHOICES:
        return _choices(x, batched, where)
    raise ValueError(f"form must be one of {TEXTS!r}, {WORDS!r}, {CHOICES!r}, {COLUMNS!r}, "
                     f"got {form!r}")


def read_word_labels(y, where="BertTokenClassifierPreprocessor", dtype=tf.int32):
    """One label (or sample weight) per word -> ragged [batch, (words)] of ``dtype``: nested
    lists, a numpy or pandas column of them, a ragged tensor, or a dense tensor
    [batch, words]."""
    if isinstance(y, tf.RaggedTensor):
        return tf.cast(y, dtype)
    if isinstance(y, tf.Tensor):
        return tf.RaggedTensor.from_tensor(tf.cast(y, dtype))
    if hasattr(y, "to_numpy") and not isinstance(y, np.ndarray):
        y = y.to_numpy()  # pandas
    rows = [np.asarray(row) for row in (y.tolist() if isinstance(y, np.ndarray) else y)]
    for i, values in enumerate(rows):
        if values.ndim != 1 or (values.size and values.dtype.kind not in "iuf"):
            raise TaskInputError(f"{where} row {i} of the word labels is "
                                 f"{values.tolist()!r:.80}; give one class id per word.")
    flat = np.concatenate([r.astype(dtype.as_numpy_dtype) for r in rows]) if rows else []
    return tf.RaggedTensor.from_row_lengths(tf.constant(flat, dtype, shape=[len(flat)]),
                                            tf.constant([len(r) for r in rows], tf.int64,
                                                        shape=[len(rows)]))


class RawInputReader:
    """What a preprocessor reads, through `read_raw_inputs`: mixed into each preprocessor
    class, which sets `input_form`. Task models and serving exports ask the preprocessor
    (``read_inputs``, ``accepted_inputs``, ``read_labels``) instead of reading raw input
    themselves.

    >>> from keras_bert import BertPreprocessor, BertTokenClassifierPreprocessor
    >>> BertPreprocessor.input_form, BertTokenClassifierPreprocessor.input_form
    ('texts', 'words')
    >>> preprocessor = BertPreprocessor.from_preset("tiny_random")
    >>> texts_a, texts_b = preprocessor.read_inputs((["the fox"], ["the"]))
    >>> texts_a.shape, texts_b.dtype
    (TensorShape([1]), tf.string)
    """

    input_form = TEXTS

    def read_inputs(self, x, batched=False):
        """Raw input -> the tensors this preprocessor packs (see `read_raw_inputs`);
        ``batched=True`` is how ``fit``/``evaluate``/``predict`` read."""
        return read_raw_inputs(x, self.input_form, batched=batched, where=type(self).__name__)

    def accepted_inputs(self, batched=False):
        """The raw input this preprocessor reads, in words."""
        return accepted(self.input_form, batched)

    def read_labels(self, y):
        """Labels as given -> what this preprocessor takes (by default, unchanged)."""
        return y


# ---- the forms --------------------------------------------------------------------------------
def _error(where, problem, form, batched):
    return TaskInputError(f"{where} {problem}. {where} takes {accepted(form, batched)}.")


def _texts(x, batched, where, form=TEXTS):
    """Texts in segments (``"texts"``) or in columns (``"columns"``: the same forms, named
    anchors, positives, negatives)."""
    def fail(problem):
        return _error(where, problem, form, batched)

    if isinstance(x, dict):
        raise fail("got a dict")
    if isinstance(x, tuple):
        parts = list(x) if x else [[]]  # (): an empty batch, as []
    elif isinstance(x, list):
        parts = _list_parts(x, fail)
    else:
        parts = [x]
    if not 1 <= len(parts) <= 3:
        raise fail(f"packs 1 to 3 segments, got {len(parts)}" if form == TEXTS else
                   f"takes 1 to 3 columns, got {len(parts)}")
    names = (SEGMENT_NAMES if form == TEXTS else COLUMN_NAMES)[: len(parts)] \
        if len(parts) > 1 else ("texts",)
    texts = [_string_tensor(p, n, batched, fail, where) for p, n in zip(parts, names)]
    ranks = [tf.TensorShape(t.shape).rank for t in texts]  # (KerasTensor: a tuple)
    for text, name, rank in zip(texts, names, ranks):
        if rank not in ((1,) if batched else (0, 1)):
            shape = _shape(text)
            if batched and rank == 0:
                value = text.numpy() if checks.is_eager(text) else "..."
                raise fail(_single_string(name, value, batched, where))
            raise fail(f"{name} must be {'' if batched else 'a string or '}a batch of strings "
                       f"[batch], got shape {shape}")
    if len(set(ranks)) > 1:
        raise fail(f"{'segments' if form == TEXTS else 'columns'} must be all strings or all "
                   "batches, got shapes "
                   + ", ".join(f"{n}: {_shape(t)}" for n, t in zip(names, texts)))
    if ranks[0] == 0 or isinstance(texts[0], keras.KerasTensor):
        return tuple(texts)
    return tuple(_same_batch_size(texts, names, where))


def _list_parts(items, fail):
    """A Python list: one batch of texts, a batch of pairs/triples, or a list of tensors."""
    if not items or all(isinstance(t, (str, bytes)) for t in items):
        return [items]  # one batch (maybe empty)
    if all(isinstance(t, (list, tuple)) for t in items):
        sizes = sorted({len(t) for t in items})
        if len(sizes) > 1 or sizes[0] not in (2, 3):
            raise fail("got a list of lists, read as a batch of pairs or triples, but the "
                       f"items hold {' or '.join(map(str, sizes))} texts")
        return [[t[i] for t in items] for i in range(sizes[0])]  # pairs -> segments
    if all(_is_tensor(t) for t in items):
        return list(items)  # one tensor per segment
    if not any(isinstance(t, (list, tuple)) or _is_tensor(t) for t in items):
        return [items]  # one batch; its entries that are not text are named below
    kinds = sorted({type(t).__name__ for t in items})
    raise fail(f"cannot read a list that mixes {', '.join(kinds)}")


def _words(x, batched, where):
    def fail(problem):
        return _error(where, problem, WORDS, batched)

    if isinstance(x, (tf.RaggedTensor, tf.Tensor, keras.KerasTensor)):
        if x.dtype not in (tf.string, "string"):
            raise fail(f"words must be strings (tf.string), got dtype {_dtype_name(x)}")
        rank = tf.TensorShape(x.shape).rank
        if isinstance(x, tf.RaggedTensor):
            if rank != 2:
                raise fail(f"words must be a ragged tf.string tensor [batch, (words)], got "
                           f"rank {rank}")
            return x
        if rank == 1:
            return tf.strings.split(x)  # texts, split on whitespace
        if rank == 2:
            return tf.RaggedTensor.from_tensor(x)  # every entry a word
        raise fail(f"words must be a batch of texts [batch] or of word lists [batch, words], "
                   f"got shape {_shape(x)}")
    if isinstance(x, dict):
        raise fail("got a dict")
    if isinstance(x, tuple) and x:
        raise fail("labels the words of single texts; a tuple is the sentence-pair form "
                   "(texts_a, texts_b), which it does not take")
    if hasattr(x, "to_numpy") and not isinstance(x, np.ndarray):
        x = x.to_numpy()  # pandas
    if isinstance(x, (str, bytes)):
        raise fail(_single_string("words", x, batched, where))
    if isinstance(x, np.ndarray) and x.dtype.kind not in "USO" and x.size:
        raise fail(f"words must be strings (tf.string), got dtype {x.dtype}")
    if not isinstance(x, (list, tuple, np.ndarray)):
        raise fail(f"words must be text, got {type(x).__name__} {x!r:.80}")
    rows = list(x.tolist() if isinstance(x, np.ndarray) else x)
    if all(isinstance(row, (str, bytes)) for row in rows):
        return tf.strings.split(tf.constant(rows, tf.string, shape=[len(rows)]))
    for i, row in enumerate(rows):
        if isinstance(row, np.ndarray):
            row = row.tolist()
        if not isinstance(row, (list, tuple)):
            raise fail(f"row {i} of the words is {type(row).__name__} {row!r:.80}, while "
                       "others are word lists")
        bad = [w for w in row if not isinstance(w, (str, bytes))]
        if bad:
            raise fail(f"row {i} of the words holds {type(bad[0]).__name__} value "
                       f"{bad[0]!r:.80}; every word must be a str or bytes")
    return tf.ragged.constant([list(row) for row in rows], dtype=tf.string, ragged_rank=1)


def _choices(x, batched, where):
    def fail(problem):
        return _error(where, problem, CHOICES, batched)

    if isinstance(x, dict):
        raise fail("got a dict")
    if isinstance(x, tuple) or (isinstance(x, list) and x and _rank(x[-1]) == 2):
        parts = list(x) if x else [[], []]
    else:
        parts = [x]
    if len(parts) not in (1, 2):
        raise fail(f"takes (contexts, choices) or choices, got {len(parts)} parts")
    choices = _string_tensor(parts[-1], "choices", batched, fail, where, rows_of_lists=True)
    if tf.TensorShape(choices.shape).rank == 1 and choices.shape[0] == 0:
        choices = tf.reshape(choices, [0, 0])  # no rows to count the choices of
    if tf.TensorShape(choices.shape).rank != 2:
        raise fail(f"choices must be [batch, num_choices] strings, got shape {_shape(choices)}")
    if len(parts) == 1:
        return (choices,)
    contexts = _string_tensor(parts[0], "contexts", batched, fail, where)
    if tf.TensorShape(contexts.shape).rank != 1:
        raise fail(f"contexts must be a batch of strings [batch], got shape {_shape(contexts)}")
    if isinstance(contexts, keras.KerasTensor) or isinstance(choices, keras.KerasTensor):
        return contexts, choices
    known = [checks.static_dim(t, 0) for t in (contexts, choices)]
    if None not in known and known[0] != known[1]:
        raise fail(f"contexts and choices need the same batch size: contexts has {known[0]}, "
                   f"choices has {known[1]}")
    if None in known:
        same = tf.debugging.assert_equal(
            tf.shape(contexts)[0], tf.shape(choices)[0],
            message=f"{where}: contexts and choices need the same batch size")
        contexts, choices = checks.after([same], (contexts, choices))
    return contexts, choices


# ---- one batch of strings ---------------------------------------------------------------------
def _string_tensor(value, name, batched, fail, where, rows_of_lists=False):
    """One batch of texts -> a tf.string tensor (a KerasTensor stays one); ``rows_of_lists``:
    [batch, n] from equally long lists; ``batched``: a single string is an error."""
    if isinstance(value, keras.KerasTensor):
        if value.dtype != "string":
            raise fail(f"{name} must be strings (tf.string), got dtype {value.dtype}")
        return value
    if isinstance(value, tf.RaggedTensor):
        raise fail(f"{name} must be a string tensor, got a RaggedTensor")
    if isinstance(value, tf.Tensor):
        if value.dtype != tf.string:
            raise fail(f"{name} must be strings (tf.string), got dtype {value.dtype.name}")
        return value
    if hasattr(value, "to_numpy") and not isinstance(value, np.ndarray):
        value = value.to_numpy()  # pandas
    if isinstance(value, (str, bytes)):
        if batched:
            raise fail(_single_string(name, value, batched, where))
        return tf.constant(value, tf.string)
    if isinstance(value, (list, tuple)):
        if rows_of_lists and value and all(isinstance(r, (list, tuple)) for r in value):
            sizes = sorted({len(r) for r in value})
            if len(sizes) > 1:
                raise fail(f"{name} must be [batch, num_choices] strings; its rows hold "
                           f"{' or '.join(map(str, sizes))} texts")
        value = np.asarray(value, dtype=object) if value else np.zeros([0], object)
    if not isinstance(value, np.ndarray):
        raise fail(f"{name} must be text (str or bytes), got {type(value).__name__} "
                   f"{value!r:.80}")
    if value.size == 0:
        return tf.zeros(value.shape, tf.string)  # an empty batch, whatever its dtype
    if value.dtype.kind in "US":
        return tf.constant(value)
    if value.dtype.kind != "O":
        raise fail(f"{name} must be strings (tf.string), got dtype {value.dtype}")
    flat = value.reshape(-1)
    bad = [i for i, v in enumerate(flat) if not isinstance(v, (str, bytes))]
    if bad:
        where = np.unravel_index(bad[0], value.shape)
        at = f"row {where[0]}" if value.ndim == 1 else f"index {tuple(map(int, where))}"
        such = f"{len(bad)} such {'entry' if len(bad) == 1 else 'entries'}"
        raise fail(f"{name} holds {type(flat[bad[0]]).__name__} value {flat[bad[0]]!r:.80} "
                   f"among its texts (at {at}; {such}): texts must be str or bytes")
    return tf.constant(value.tolist(), tf.string)


def _same_batch_size(texts, names, where):
    """The segments, with one batch size: TaskInputError now when the static shapes tell,
    else assertions in front of them (the same words)."""
    known = [(n, checks.static_dim(t, 0)) for n, t in zip(names, texts)]
    if len({d for _, d in known if d is not None}) > 1:
        sizes = ", ".join(f"{n} has {d}" for n, d in known if d is not None)
        raise TaskInputError(f"{where}: the batch sizes differ: {sizes}.")
    return checks.after(checks.same_dims(texts, names, 0, "batch size", where), texts)


def _single_string(name, value, batched, where):
    takes = "fit/evaluate/predict take" if batched else f"{where} takes"
    return f"{name} is a single string; {takes} a batch: wrap it in a list, e.g. [{value!r:.80}]"


def _is_tensor(x):
    return isinstance(x, (tf.Tensor, tf.RaggedTensor, np.ndarray, keras.KerasTensor))


def _rank(x):
    """The rank of a tensor or array; 2 for a list of lists; else None."""
    if _is_tensor(x):
        return tf.TensorShape(x.shape).rank
    if isinstance(x, (list, tuple)) and x and all(isinstance(r, (list, tuple)) for r in x):
        return 2
    return None


def _shape(x):
    shape = tf.TensorShape(x.shape)
    return "<unknown>" if shape.rank is None else tuple(shape.as_list())


def _dtype_name(x):
    return x.dtype if isinstance(x.dtype, str) else x.dtype.name
