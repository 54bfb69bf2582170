"""What a task model's `fit`, `evaluate` and `predict` do with their inputs before Keras sees them.

Users pass raw text the way they hold it: Python lists of strings, numpy string or object
arrays, pandas columns, string tensors, a tuple ``(texts_a, texts_b)`` of pair segments,
Hugging Face's list of pairs ``[[a, b], ...]``, or a `tf.data.Dataset` of any of these. This
module turns them into string tensors (`text_segments`), slices them with labels and sample
weights into a batched `tf.data` pipeline, and (for training and evaluation) trims each
batch's padding to its longest sequence (`trim_padding`), which changes no result: padded
positions get no attention and no loss. It tells an empty batch (`is_empty`), makes one of a
dataset's element type (`zero_rows`), and counts the batches Keras ran (`BatchCounter`), so
that no inputs behave the same on every path.
"""

import numbers

import keras
import numpy as np
import tensorflow as tf

from keras_bert.checks import TaskInputError  # raised here; the task models' input error
from keras_bert.config import INPUT_NAMES  # per-token model inputs: [batch, (choices,) seq]

PAD_MULTIPLE = 8  # trimmed lengths are rounded up to this, so few shapes get traced


ACCEPTED_TEXT = (
    "a batch of texts (a list of str, a numpy/pandas column of str, a tf.string tensor), a "
    "tuple (texts_a, texts_b) of equally long batches for pairs, a list of pairs "
    "[[text_a, text_b], ...], a dict of packed inputs (input_word_ids, input_mask, "
    "input_type_ids), or a tf.data.Dataset of these"
)

ACCEPTED_WORDS = (
    "a batch of word lists ([['Paris', 'is', 'big'], ...]), texts (split on whitespace), a "
    "ragged tf.string tensor [batch, (words)], a dict of packed inputs (input_word_ids, "
    "input_mask, input_type_ids), or a tf.data.Dataset of these"
)


def _is_text_leaf(value):
    if isinstance(value, (str, bytes)):
        return True
    if isinstance(value, np.ndarray):
        return value.dtype.kind in "USO"
    if isinstance(value, (tf.Tensor, tf.RaggedTensor)):
        return value.dtype == tf.string
    if hasattr(value, "to_numpy") and hasattr(value, "dtype"):  # pandas Series / Index
        return _is_text_leaf(value.to_numpy())
    if isinstance(value, (list, tuple)) and value:
        return all(_is_text_leaf(v) for v in value)
    return False


def is_text(x):
    """Whether ``x`` (not a dataset) is raw text rather than packed ids. An empty batch (an
    empty list or tuple, a numpy array or pandas column of no rows) counts as text."""
    if isinstance(x, dict):
        return False
    return _is_text_leaf(x) or (is_empty(x) and not isinstance(x, (tf.Tensor, tf.RaggedTensor)))


def is_empty(x):
    """Whether in-memory inputs (not a dataset) hold no examples: a batch of 0 rows (every
    segment of a text tuple, every packed input)."""
    if isinstance(x, dict):
        return bool(x) and all(is_empty(v) for v in x.values())
    if isinstance(x, tuple) and x:
        return all(is_empty(segment) for segment in x)
    if isinstance(x, (list, tuple)):
        return len(x) == 0
    shape = getattr(x, "shape", None)
    return shape is not None and len(shape) > 0 and shape[0] == 0


def zero_rows(spec):
    """A batch of no rows with the type of a batched (nested) dataset element spec: what an
    empty dataset would have yielded. Unknown inner dimensions are 1."""
    def one(s):
        shape = [0] + [1 if d is None else d for d in s.shape[1:]]
        if isinstance(s, tf.RaggedTensorSpec):
            return tf.RaggedTensor.from_tensor(tf.zeros(shape, s.dtype),
                                               ragged_rank=s.ragged_rank,
                                               row_splits_dtype=s.row_splits_dtype)
        return tf.zeros(shape, s.dtype)

    return tf.nest.map_structure(one, spec)


def _string_tensor(value, what):
    """One batch of texts -> tf.string tensor [batch] (or [batch, choices])."""
    if isinstance(value, (tf.Tensor, tf.RaggedTensor)):
        if value.dtype != tf.string:
            raise TaskInputError(f"{what} is a {value.dtype.name} tensor, not text. Pass "
                                 f"{ACCEPTED_TEXT}.")
        return value
    if hasattr(value, "to_numpy") and not isinstance(value, np.ndarray):
        value = value.to_numpy()  # pandas
    if isinstance(value, (str, bytes)):
        raise TaskInputError(
            f"{what} is a single string; fit/evaluate/predict take a batch: wrap it in a "
            f"list, e.g. [{value!r}]."
        )
    array = np.asarray(value, dtype=object)
    if array.ndim == 0:
        raise TaskInputError(f"{what} has no batch dimension. Pass {ACCEPTED_TEXT}.")
    bad = [v for v in array.reshape(-1) if not isinstance(v, (str, bytes))]
    if bad:
        raise TaskInputError(
            f"{what} holds {type(bad[0]).__name__} value {bad[0]!r} among its texts; every "
            f"entry must be a str (found {len(bad)} such entries)."
        )
    return tf.constant(array.tolist() if array.ndim > 1 else list(array), dtype=tf.string)


def _is_list_of_pairs(x):
    return (isinstance(x, list) and x and all(isinstance(item, (list, tuple)) for item in x)
            and all(all(isinstance(t, (str, bytes)) for t in item) for item in x))


def text_segments(x):
    """Raw text in any accepted form -> tuple of tf.string tensors, one per segment."""
    if isinstance(x, tuple) and not x:
        x = []  # an empty tuple: an empty batch, as []
    if _is_list_of_pairs(x):
        lengths = sorted({len(item) for item in x})
        if len(lengths) > 1 or lengths[0] not in (2, 3):
            raise TaskInputError(
                f"A list of lists is read as a list of text pairs, but its items hold "
                f"{', '.join(map(str, lengths))} texts; every item must hold 2 (or 3). "
                f"Pass {ACCEPTED_TEXT}."
            )
        return tuple(tf.constant([item[i] for item in x], tf.string) for i in range(lengths[0]))
    if isinstance(x, tuple):
        segments = tuple(_string_tensor(s, f"segment {i} of the text tuple")
                         for i, s in enumerate(x))
        sizes = [int(s.shape[0]) for s in segments]
        if len(set(sizes)) > 1:
            raise TaskInputError(
                f"The segments of a text tuple must be equally long batches; got batch sizes "
                f"{sizes}."
            )
        return segments
    return (_string_tensor(x, "the text input"),)


def word_lists(x):
    """Words for tagging -> ragged tf.string [batch, (words)]: a list of word lists, a ragged
    string tensor, or texts (split on whitespace)."""
    if isinstance(x, tf.RaggedTensor):
        if x.dtype != tf.string or x.shape.rank != 2:
            raise TaskInputError(f"Words must be a ragged tf.string tensor [batch, (words)]; got "
                                 f"{x.dtype.name} of rank {x.shape.rank}.")
        return x
    if isinstance(x, tuple) and x:
        raise TaskInputError(
            "A tagging model labels the words of single texts; a tuple is the sentence-pair "
            "form (texts_a, texts_b), which it does not take. Pass a list of word lists, "
            "e.g. [['Paris', 'is', 'big']].")
    if hasattr(x, "to_numpy") and not isinstance(x, np.ndarray):
        x = x.to_numpy()
    if isinstance(x, (str, bytes)):
        raise TaskInputError("Words must come as a batch: a list of word lists, e.g. "
                             "[['Paris', 'is', 'big']].")
    rows = list(x.tolist() if isinstance(x, np.ndarray) else x)
    if all(isinstance(row, (str, bytes)) for row in rows):
        return tf.strings.split(tf.constant(rows, tf.string))
    for i, row in enumerate(rows):
        if not isinstance(row, (list, tuple, np.ndarray)) or not all(
                isinstance(w, (str, bytes)) for w in row):
            raise TaskInputError(
                f"Row {i} of the words is {type(row).__name__} {row!r:.80}; a tagging model "
                "takes a list of word lists (or texts, split on whitespace).")
    return tf.ragged.constant([list(row) for row in rows], dtype=tf.string, ragged_rank=1) \
        if rows else tf.ragged.constant([[]], dtype=tf.string)[:0]


def word_labels(y):
    """One label per word -> ragged int32 [batch, (words)]."""
    if isinstance(y, tf.RaggedTensor):
        return tf.cast(y, tf.int32)
    rows = list(y.tolist() if isinstance(y, np.ndarray) else y)
    for i, row in enumerate(rows):
        values = np.asarray(row)
        if values.ndim != 1 or (values.size and values.dtype.kind not in "iuf"):
            raise TaskInputError(f"Row {i} of the word labels is {row!r:.80}; give one class id "
                                 "per word.")
    return tf.ragged.constant([list(map(int, row)) for row in rows], dtype=tf.int32,
                              ragged_rank=1)


def batch_size_of(x):
    return int(tf.nest.flatten(x)[0].shape[0])


def _as_array(value, what):
    if value is None:
        return None
    if isinstance(value, (tf.Tensor, tf.RaggedTensor)):
        return value
    if hasattr(value, "to_numpy") and not isinstance(value, np.ndarray):
        value = value.to_numpy()
    if isinstance(value, dict):
        return {k: _as_array(v, f"{what}[{k!r}]") for k, v in value.items()}
    array = np.asarray(value)
    if array.dtype == object:
        try:
            array = array.astype(np.float64)
        except (TypeError, ValueError):
            bad = next(v for v in array.reshape(-1) if not isinstance(v, numbers.Number))
            raise TaskInputError(f"{what} holds {bad!r}, which is not a number.") from None
    if array.dtype.kind in "US":
        bad = array.reshape(-1)[0].item()  # str or bytes, not numpy's scalar (np.str_)
        raise TaskInputError(f"{what} holds the string {bad!r}, which is not a number.")
    if array.dtype == np.float64:
        array = array.astype(np.float32)
    elif array.dtype == np.int64:
        array = array.astype(np.int32)
    return array


def labels_array(y, what="y"):
    """Labels or sample weights -> numpy (int32/float32) or tensors, with clear errors."""
    return _as_array(y, what)


def check_same_length(parts):
    """``parts``: {name: structure}; every leaf must have the same batch size."""
    sizes = {}
    for name, value in parts.items():
        if value is None:
            continue
        for leaf in tf.nest.flatten(value):
            shape = getattr(leaf, "shape", None)
            if shape is None or len(shape) == 0:
                raise TaskInputError(f"{name} has no batch dimension.")
            sizes.setdefault(name, int(shape[0]))
    if len(set(sizes.values())) > 1:
        shown = ", ".join(f"{name}: {n}" for name, n in sizes.items())
        raise TaskInputError(f"Inputs and labels must have the same number of rows; got {shown}.")
    return next(iter(sizes.values()), 0)


def trim_padding(x, y=None, sample_weight=None, token_labels=False):
    """Cuts a packed batch to its longest sequence (rounded up to `PAD_MULTIPLE`).

    ``x``'s per-token inputs [batch, (choices,) seq] are cut on the last axis; with
    ``token_labels``, per-token ``y`` and ``sample_weight`` [batch, seq] too.
    """
    mask = x["input_mask"]
    full = tf.shape(mask)[-1]
    longest = tf.reduce_max(tf.reduce_sum(tf.cast(mask, tf.int32), axis=-1))
    length = tf.minimum(full, (longest + PAD_MULTIPLE - 1) // PAD_MULTIPLE * PAD_MULTIPLE)
    length = tf.maximum(length, 1)

    def cut(t):
        return t[..., :length]

    x = {k: cut(v) if k in INPUT_NAMES else v for k, v in x.items()}
    if token_labels:
        y = tf.nest.map_structure(cut, y) if y is not None else None
        sample_weight = (tf.nest.map_structure(cut, sample_weight)
                         if sample_weight is not None else None)
    return x, y, sample_weight


def sorted_batches(element, batch_size):
    """A packed chunk (x, y, sample_weight) -> a dataset of ``batch_size`` batches of it in
    order of sequence length (the longest real length over choices for [batch, choices, seq])."""
    element = element[0] if len(element) == 1 else element
    mask = tf.nest.flatten(keras.utils.unpack_x_y_sample_weight(element)[0]["input_mask"])[0]
    lengths = tf.reduce_sum(tf.cast(mask, tf.int32), axis=-1)
    while lengths.shape.rank > 1:
        lengths = tf.reduce_max(lengths, axis=-1)
    order = tf.argsort(lengths, stable=True)
    ordered = tf.nest.map_structure(lambda t: tf.gather(t, order), element)
    return tf.data.Dataset.from_tensor_slices(ordered).batch(batch_size)


# ---- fit/evaluate/predict plumbing on plain data (the PipelineModel's helpers)
class BatchCounter(keras.callbacks.Callback):
    """Counts the batches fit, evaluate or predict ran, and whether predict's loop ended: a
    dataset of unknown length may turn out empty.

    >>> counter = BatchCounter()
    >>> counter.on_predict_batch_end(0)
    >>> counter.predict, counter.ended
    (1, False)
    """

    async_safe = True  # keeps Keras' asynchronous dispatch of the batch hooks

    def __init__(self):
        super().__init__()
        self.train = self.test = self.predict = 0
        self.ended = False

    def on_train_batch_end(self, batch, logs=None):
        self.train += 1

    def on_test_batch_end(self, batch, logs=None):
        self.test += 1  # (in fit, the validation's batches)

    def on_predict_batch_end(self, batch, logs=None):
        self.predict += 1

    def on_predict_end(self, logs=None):
        self.ended = True


def with_callback(callbacks, extra):
    """``callbacks`` with ``extra`` added (None: unchanged)."""
    if extra is None:
        return callbacks
    if isinstance(callbacks, keras.callbacks.CallbackList):
        callbacks.append(extra)
        return callbacks
    return list(callbacks or []) + [extra]


def split_validation(x, y, sample_weight, fraction, text_inputs, labels):
    """Keras' validation_split for raw text: the last ``fraction`` of the rows, as
    ``(x, y, sample_weight, validation_data)``; TaskInputError when a side is left empty."""
    texts = text_inputs(x)
    n = int(texts[0].shape[0])
    cut = int(n * (1 - fraction))
    if cut == 0 or cut == n:
        raise TaskInputError(
            f"validation_split={fraction} of {n} examples leaves {cut} to train on and "
            f"{n - cut} to validate on; both need at least one.")

    def head(v):
        return None if v is None else tf.nest.map_structure(lambda a: a[:cut], v)

    def tail(v):
        return None if v is None else tf.nest.map_structure(lambda a: a[cut:], v)

    y = None if y is None else labels(y)
    sample_weight = labels_array(sample_weight, "sample_weight")
    validation = keras.utils.pack_x_y_sample_weight(
        tuple(tail(t) for t in texts) if len(texts) > 1 else tail(texts[0]), tail(y),
        tail(sample_weight))
    train = tuple(head(t) for t in texts) if len(texts) > 1 else head(texts[0])
    return train, head(y), head(sample_weight), validation


def one_segment(texts):
    """A tuple of one text segment is that segment (the preprocessor's single-text form)."""
    return texts[0] if len(texts) == 1 else tuple(texts)


def unpack_element(element):
    """A dataset element (or its spec) -> (x, y, sample_weight), as Keras unpacks it, except
    that a tuple of texts only is x itself: the segments of pairs, with no labels."""
    if not isinstance(element, tuple):
        return element, None, None
    if all(getattr(leaf, "dtype", None) == tf.string for leaf in tf.nest.flatten(element)):
        return element, None, None
    return keras.utils.unpack_x_y_sample_weight(element)


def batch_free_spec(value):
    """The type spec of a tensor with its batch dimension left open."""
    shape = [None] + list(value.shape[1:])
    if isinstance(value, tf.RaggedTensor):
        return tf.RaggedTensorSpec(shape, value.dtype, ragged_rank=value.ragged_rank,
                                   row_splits_dtype=value.row_splits.dtype)
    return tf.TensorSpec(shape, value.dtype)
