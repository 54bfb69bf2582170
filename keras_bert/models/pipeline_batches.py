"""The batching helpers of `PipelineModel` (``fit``, ``evaluate``, ``predict``): inputs
already read by the preprocessor (`keras_bert.text.raw_inputs`) are checked against their
labels (`check_same_length`, `labels_array`), sliced with them into a batched `tf.data`
pipeline (grouped by length with `sorted_batches`), and their batches counted
(`BatchCounter`). It tells an empty batch (`is_empty`) and makes one of a dataset's element
type (`zero_rows`), so that no inputs behave the same on every path. (Each batch is cut to
its longest sequence by `keras_bert.text.packer.trim_padding`.)
"""

import numbers

import keras
import numpy as np
import tensorflow as tf

from keras_bert.checks import TaskInputError  # raised here; the task models' input error


def is_empty(x):
    """Whether in-memory inputs (not a dataset) hold no examples: a batch of 0 rows (every
    segment of a text tuple, every packed input).

    >>> is_empty({"input_word_ids": np.zeros([0, 8])}), is_empty((tf.constant(["a"]),))
    (True, False)
    """
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


class AtFirstEpochEnd(keras.callbacks.Callback):
    """Calls ``function`` once, when fit's first epoch ends.

    >>> calls = []
    >>> callback = AtFirstEpochEnd(lambda: calls.append("done"))
    >>> callback.on_epoch_end(0); callback.on_epoch_end(1)
    >>> calls
    ['done']
    """

    def __init__(self, function):
        super().__init__()
        self.function = function
        self.called = False

    def on_epoch_end(self, epoch, logs=None):
        if not self.called:
            self.called = True
            self.function()


def with_callback(callbacks, extra):
    """``callbacks`` with ``extra`` added (None: unchanged)."""
    if extra is None:
        return callbacks
    if isinstance(callbacks, keras.callbacks.CallbackList):
        callbacks.append(extra)
        return callbacks
    return list(callbacks or []) + [extra]


def split_validation(texts, y, sample_weight, fraction, labels):
    """Keras' validation_split for raw text read by the preprocessor (a tuple of tensors):
    the last ``fraction`` of the rows, as ``(texts, y, sample_weight, validation_data)``;
    TaskInputError when a side is left empty."""
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
        one_segment(tuple(tail(t) for t in texts)), tail(y), tail(sample_weight))
    return tuple(head(t) for t in texts), head(y), head(sample_weight), validation


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
