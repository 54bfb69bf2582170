"""Texts longer than ``seq_length`` are cut to it: a `TruncationWarning` says how many, once per
call, and how to keep more.

The preprocessors count the rows they cut from what the packer knows anyway (each segment's
real length against the room ``seq_length`` leaves, `keras_bert.text.packer.overflowing_rows`)
and hand the count to `record`:

* called eagerly on their own, they warn at once: one warning per call;
* inside a task model's ``fit``, ``evaluate``, ``predict`` or ``*_on_batch`` (`counting`),
  they add to the model's `CutCounter` instead, eagerly at once and from traced functions
  (``tf.data`` maps, ``tf.function``) each time these run, through one `tf.py_function` per
  batch; the model warns once for the call (``fit``: after its first epoch);
* traced anywhere else (your own ``dataset.map(preprocessor)``, an exported SavedModel) they
  add nothing to the graph and say nothing: Python warnings cannot fire per element there.
"""

import contextlib
import sys
import threading
import warnings

import tensorflow as tf

from keras_bert import checks

_ACTIVE = threading.local()  # the counter of the call under way in this thread, if any


class TruncationWarning(UserWarning):
    """Texts were longer than ``seq_length`` and were cut to it: the model saw only their
    first tokens. Silence it with ``warnings.filterwarnings("ignore",
    category=TruncationWarning)``.

    >>> import warnings
    >>> from keras_bert import BertPreprocessor
    >>> preprocessor = BertPreprocessor.from_preset("tiny_random", seq_length=4)
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     _ = preprocessor(["a great dull movie", "dull"])
    >>> len(caught), str(caught[0].message).split(" (")[0]
    (1, 'BertPreprocessor: 1 of 2 texts were longer than seq_length=4 tokens and were cut to fit')
    """


class CutCounter:
    """The texts cut over one call of a task model (thread-safe: ``tf.data`` adds from its
    threads). `warn` says it once and starts again from zero.

    >>> counter = CutCounter()
    >>> counter.add(2, 10, 128)
    >>> counter.add(1, 10, 128)
    >>> counter.cut, counter.total
    (3, 20)
    """

    def __init__(self):
        self._lock = threading.Lock()
        self.reset()

    def reset(self):
        with self._lock:
            self.cut = self.total = 0
            self.seq_length = None

    def add(self, cut, total, seq_length=None):
        with self._lock:
            self.cut += int(cut)
            self.total += int(total)
            if seq_length is not None:
                self.seq_length = int(seq_length)

    def warn(self, where, how):
        """One `TruncationWarning` for what was counted (none if nothing was cut); resets.
        ``how``: the advice, a string or a function of the ``seq_length`` counted."""
        with self._lock:
            cut, total, seq_length = self.cut, self.total, self.seq_length
        self.reset()
        if cut:
            how = how(seq_length) if callable(how) else how
            warnings.warn(message(where, cut, total, seq_length, how), TruncationWarning,
                          stacklevel=_user_frame())


def message(where, cut, total, seq_length, how):
    """The warning's words: how many texts of how many, at which ``seq_length``, and ``how``
    to keep more of them."""
    length = "seq_length" if seq_length is None else f"seq_length={seq_length}"
    return (f"{where}: {cut} of {total} texts were longer than {length} tokens and were cut "
            f"to fit ([CLS] and [SEP] included; a pair counts as one text): the model sees only "
            f"their first tokens. {how}")


def how_to_keep_more(seq_length, preprocessor, model=None, limit=None):
    """The advice of the warning: a larger ``seq_length=`` where the preprocessor is made
    (``preprocessor``, ``model``: class names), up to the encoder's ``limit``
    (max_position_embeddings; None: not known here); at the limit, windows.

    >>> print(how_to_keep_more(128, "BertPreprocessor", "BertClassifier", limit=512))
    To keep more of each text, pass a larger seq_length, up to 512 (the encoder's
    max_position_embeddings): BertClassifier.from_preset(..., seq_length=256), or
    model.preprocessor = BertPreprocessor.from_preset(..., seq_length=256).
    """
    if limit is not None and seq_length is not None and seq_length >= limit:
        return (f"seq_length is already the encoder's max_position_embeddings ({limit}): to "
                "keep all of a long text, split it into parts and predict each.")
    bound = (f"up to {limit} (the encoder's max_position_embeddings)" if limit is not None
             else "up to the encoder's max_position_embeddings (512 for BERT)")
    larger = "..." if seq_length is None else min(2 * seq_length, limit or 512)
    if model is None:
        where = (f"{preprocessor}(..., seq_length={larger}) or "
                 f"{preprocessor}.from_preset(..., seq_length={larger})")
    else:
        where = (f"{model}.from_preset(..., seq_length={larger}), or model.preprocessor = "
                 f"{preprocessor}.from_preset(..., seq_length={larger})")
    return f"To keep more of each text, pass a larger seq_length, {bound}: {where}."


@contextlib.contextmanager
def counting(counter, in_graphs=True):
    """Within it, the preprocessors of this thread add their cuts to ``counter`` instead of
    warning: eager calls at once, functions traced inside (``in_graphs``) whenever they run.
    Yields True for the outermost `counting` (which warns), False inside another."""
    if getattr(_ACTIVE, "counter", None) is not None:
        yield False
        return
    _ACTIVE.counter, _ACTIVE.in_graphs = counter, in_graphs
    try:
        yield True
    finally:
        _ACTIVE.counter = None


def record(overflow, seq_length, outputs, where):
    """Counts the texts a preprocessor cut (``overflow``: bool [batch], or a scalar for an
    unbatched call) and returns ``outputs``: unchanged, or in a counted graph computed after
    the count. Eagerly and not `counting`, warns at once (``where``: the preprocessor's class
    name)."""
    counter = getattr(_ACTIVE, "counter", None)
    length = seq_length if isinstance(seq_length, int) else None
    if checks.is_eager(overflow):
        cut, total = int(tf.reduce_sum(tf.cast(overflow, tf.int32))), int(tf.size(overflow))
        if counter is not None:
            counter.add(cut, total, length)
        elif cut:
            warnings.warn(message(where, cut, total, length, how_to_keep_more(length, where)),
                          TruncationWarning, stacklevel=_user_frame())
        return outputs
    if counter is None or not _ACTIVE.in_graphs:
        return outputs

    def add(cut, total):
        counter.add(int(cut), int(total), length)
        return 0

    counted = tf.py_function(
        add, [tf.reduce_sum(tf.cast(overflow, tf.int32)), tf.size(overflow)], Tout=tf.int32)
    return checks.after([counted], outputs)


_LIBRARIES = ("keras_bert", "keras", "tensorflow", "contextlib", "threading")


def _user_frame():
    """The ``stacklevel`` for a `warnings.warn` in the caller that names the first frame
    outside keras_bert, Keras and TensorFlow: the user's line that made the call."""
    frame, level = sys._getframe(1), 1
    while frame.f_back is not None and (
            frame.f_globals.get("__name__", "").split(".")[0] in _LIBRARIES):
        frame, level = frame.f_back, level + 1
    return level
