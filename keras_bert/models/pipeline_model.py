"""`PipelineModel`: raw inputs in Keras' fit/evaluate/predict, through one hook.

The base of `Task` (as keras-hub's ``utils/pipeline_model.py`` is of its tasks): whatever a
user gives ``fit``, ``evaluate``, ``predict`` or the ``*_on_batch`` methods (raw input in any
form its preprocessor reads, with labels and sample weights, or a `tf.data.Dataset` of them)
is turned into a batched, preprocessed `tf.data` pipeline; packed dicts go straight to the
model. It batches and groups only: ``self.preprocessor`` reads the raw input (and the labels
it transforms, such as word labels) through `keras_bert.text.raw_inputs`, the one reader of
raw input, and packs each batch (``preprocess_samples``). The subclass supplies the label
hooks ``check_labels``, ``check_labels_in_graph`` and ``token_labels``;
`keras_bert.models.pipeline_batches` holds the helpers on plain data.

Texts longer than the preprocessor's ``seq_length`` are cut to it; each call that cuts some
gives one `keras_bert.text.truncation.TruncationWarning` naming how many (``fit``: when its
first epoch ends; not under a `tf.distribute` strategy, where the input pipeline counts
nothing).

No inputs and empty inputs are the same on every input path (texts in any form, pairs,
packed dicts, a `tf.data.Dataset`): ``x=None`` is a `TaskInputError` naming the method;
``fit``, ``evaluate``, ``train_on_batch`` and ``test_on_batch`` on no examples are a
`TaskInputError` (there is nothing to train on or score), and so are missing labels where
the task needs them; ``predict`` and ``predict_on_batch`` on no examples return what they
return for a batch, with 0 rows (``(0, num_classes)`` for a classifier, a dict of such
arrays for a task with several outputs), as TF Serving answers an empty batch.

Example (what `Task` adds on top is the encoder, the head and compile's defaults):

>>> from keras_bert.models.pipeline_model import PipelineModel
>>> from keras_bert.models.task import Task
>>> issubclass(Task, PipelineModel)
True
"""

import contextlib
import functools
import math
import weakref

import keras
import numpy as np
import tensorflow as tf

from keras_bert.checks import TaskInputError
from keras_bert.models import pipeline_batches as batching
from keras_bert.text import truncation
from keras_bert.text.packer import trim_padding

PACKED = "a dict of packed inputs (input_word_ids, input_mask, input_type_ids)"

_PREPROCESS_CHUNK = 4096  # texts per call when predict() preprocesses in-memory inputs
LENGTH_GROUP = 16  # batches per chunk sorted by length (fit with group_by_length)
# The functions tf.data maps trace (`_preprocess_element`, `_trim`, the lambdas below) and
# `_preprocess_now`'s are plain TensorFlow (no Python control flow on tensors): traced as
# written, without AutoGraph's conversion of their source, which costs about a second per
# process.
_plain = tf.autograph.experimental.do_not_convert


def _counts_cut_texts(method, at_end=True):
    """Decorates a Keras API method of `PipelineModel`: the texts its preprocessor cuts
    during the call are counted, and told once when it returns (``at_end``; fit tells them
    when its first epoch ends)."""
    def decorate(function):
        @functools.wraps(function)
        def counted(self, *args, **kwargs):
            with self._counting_cuts(method, at_end):
                return function(self, *args, **kwargs)
        return counted
    return decorate


class PipelineModel(keras.Model):
    """A Keras model whose ``fit``/``evaluate``/``predict`` take raw inputs (see the module
    docstring). ``preprocessor`` None turns the text path off.

    Example:

    >>> from keras_bert.models.pipeline_model import PipelineModel
    >>> PipelineModel.group_by_length
    True
    """

    # fit() on in-memory raw text batches similar lengths together (see _dataset); set False
    # for batches drawn uniformly at random.
    group_by_length = True
    # Whether the outputs have one row per example and no sequence axis (classification,
    # multiple choice, masked-LM predictions): then predict cuts each batch to its longest
    # sequence (rounded up to 8) as fit does, which changes no output and computes only what
    # the text needs. Per-token outputs keep seq_length, so that the batches concatenate.
    trim_predictions = False
    preprocessor = None
    # Whether the preprocessor makes the labels of raw text (masked LM: the masked ids).
    preprocessor_makes_labels = False
    # Whether fit/evaluate need labels (False: the loss reads the outputs alone, as in-batch
    # negatives do).
    needs_labels = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._preprocess_functions = {}
        self._preprocess_owner = lambda: None  # (a weak reference to whose functions they are)
        self._cut_texts = truncation.CutCounter()

    @property
    def accepted_inputs(self):
        """What fit/evaluate/predict take, in words (the preprocessor says what raw input)."""
        if self.preprocessor is None:
            return f"{PACKED}, or a tf.data.Dataset of these"
        return (f"{self.preprocessor.accepted_inputs(batched=True)}; {PACKED}; or a "
                "tf.data.Dataset of these")

    def _plan_schedule(self, steps):
        """Called by ``fit`` with the number of steps it will run (None: unknown)."""

    def preprocess_samples(self, x, y=None, sample_weight=None):
        """The one hook: a batch of raw inputs -> (packed x, y, sample_weight)."""
        out = self.preprocessor(x, y=y, sample_weight=sample_weight)
        return keras.utils.unpack_x_y_sample_weight(out) if isinstance(out, tuple) else (
            out, y, sample_weight)

    # ------------------------------------------------------------------ input hooks
    def check_labels(self, y):
        """Raises a clear error for labels this task cannot use (numpy, eagerly)."""

    def check_labels_in_graph(self, y):
        """The same check on a tensor inside tf.data; returns ``y``."""
        return y

    def labels(self, y):
        """Labels as given -> numpy arrays or tensors: read by the preprocessor where it
        transforms them (word labels), numbers with clear errors."""
        return batching.labels_array(self.preprocessor.read_labels(y), "y")

    @property
    def token_labels(self):
        """True when labels are per token (then trimmed with the inputs)."""
        return False

    def _raw(self, x, method):
        """Whether ``x`` is raw input for the preprocessor (else packed ids for the model);
        raises a clear error for None (``method``: how the message names the call, e.g.
        ``"predict()"``) and for raw input with no preprocessor."""
        if x is None:
            raise TaskInputError(f"{type(self).__name__}.{method} got x=None; pass "
                                 f"{self.accepted_inputs}.")
        if isinstance(x, tf.data.Dataset):
            x_spec = batching.unpack_element(x.element_spec)[0]
            text = any(s.dtype == tf.string for s in tf.nest.flatten(x_spec))
        else:
            text = not isinstance(x, dict)
        if text and self.preprocessor is None:
            raise TaskInputError(
                f"{type(self).__name__} has no preprocessor (preprocessor=None), so it takes "
                f"packed inputs ({PACKED[2:]}), not text. Set model.preprocessor, or pack the "
                "text with a BertPreprocessor first.")
        return text

    def _read_raw(self, x, method):
        """``x`` as fit/evaluate/predict use it: (raw?, x), raw in-memory input read by the
        preprocessor into a tuple of tensors (`keras_bert.text.raw_inputs`)."""
        raw = self._raw(x, method)
        if raw and not isinstance(x, tf.data.Dataset):
            x = self.preprocessor.read_inputs(x, batched=True)
        return raw, x

    @contextlib.contextmanager
    def _counting_cuts(self, method, at_end=True):
        """Counts the texts the preprocessor cuts within one call (nested calls, such as
        fit's validation, count into the outermost) and, ``at_end``, warns once when it
        returns (`_warn_cuts`). Under a tf.distribute strategy the input pipeline counts
        nothing (its functions may run where Python does not)."""
        in_graphs = (not tf.distribute.has_strategy()
                     and getattr(self, "_distribute_strategy", None) is None)
        with truncation.counting(self._cut_texts, in_graphs) as outermost:
            if outermost:
                self._cut_texts.reset()
            yield
            if outermost and at_end:
                self._warn_cuts(method)

    def _warn_cuts(self, method):
        """One `TruncationWarning` for the texts cut since the call began (none if none)."""
        if self.preprocessor is None:
            return
        config = getattr(getattr(self, "encoder", None), "bert_config", None)
        limit = getattr(config, "max_position_embeddings", None)
        self._cut_texts.warn(f"{type(self).__name__}.{method}", lambda seq_length: (
            truncation.how_to_keep_more(seq_length, type(self.preprocessor).__name__,
                                        type(self).__name__, limit)))

    def _check_data(self, x, y, raw, method):
        """fit/evaluate (and their per-batch forms) need examples and, where the task's loss
        needs them, labels: clear errors before Keras sees the data."""
        name = f"{type(self).__name__}.{method}"
        if isinstance(x, tf.data.Dataset):
            if int(x.cardinality()) == 0:
                raise TaskInputError(f"{name} got an empty dataset: it yields no batches.")
        elif batching.is_empty(x):
            raise TaskInputError(f"{name} got no examples: x is an empty batch (0 rows).")
        if y is not None or getattr(self, "loss", None) is None or not self.needs_labels or (
                raw and self.preprocessor_makes_labels):
            return
        if not isinstance(x, tf.data.Dataset):
            raise TaskInputError(f"{name} needs labels: pass y (got y=None).")
        if batching.unpack_element(x.element_spec)[1] is None:
            raise TaskInputError(f"{name} needs labels, but the dataset's elements hold inputs "
                                 "only: make them (x, y) pairs.")

    @staticmethod
    def _unknown_length(x):
        """Whether ``x`` is a dataset whose length tf.data cannot tell (it may be empty)."""
        return (isinstance(x, tf.data.Dataset)
                and int(x.cardinality()) == tf.data.UNKNOWN_CARDINALITY)

    def steps_per_epoch(self, num_examples, batch_size=32, shuffle=True):
        """How many batches ``fit`` makes of ``num_examples`` in-memory raw examples (the
        length-grouped chunks end in partial batches), to size a schedule exactly."""
        if shuffle and self.group_by_length:
            chunk = batch_size * LENGTH_GROUP
            return num_examples // chunk * LENGTH_GROUP + math.ceil(
                num_examples % chunk / batch_size)
        return math.ceil(num_examples / batch_size)

    def _dataset(self, x, y, sample_weight, batch_size, shuffle, trim):
        """Raw inputs (a dataset, or in-memory input read by the preprocessor) -> (batched,
        preprocessed dataset, batches per epoch or None).

        In-memory training data (``shuffle``) is grouped by length when
        ``group_by_length``: shuffled, cut into chunks of `LENGTH_GROUP` batches, each chunk
        sorted by length and split into batches, the batches shuffled again. With ``trim``
        each batch is cut to its longest sequence.
        """
        if isinstance(x, tf.data.Dataset):
            for name, value in (("y", y), ("sample_weight", sample_weight),
                                ("batch_size", batch_size)):
                if value is not None:
                    raise TaskInputError(
                        f"When x is a tf.data.Dataset, give {name} inside the dataset, not as "
                        "an argument."
                    )
            x_spec = batching.unpack_element(x.element_spec)[0]
            if any(spec.shape.rank == 0 for spec in tf.nest.flatten(x_spec)):
                raise TaskInputError("A tf.data.Dataset given to a task model must be batched "
                                     "(dataset.batch(32)), as Keras requires.")
            cardinality = int(x.cardinality())
            ds = x.map(self._preprocess_element, num_parallel_calls=tf.data.AUTOTUNE)
            if trim:
                ds = ds.map(self._trim, num_parallel_calls=tf.data.AUTOTUNE)
            return ds.prefetch(tf.data.AUTOTUNE), cardinality if cardinality >= 0 else None

        texts = x
        y = None if y is None else self.labels(y)
        sample_weight = batching.labels_array(sample_weight, "sample_weight")
        n = batching.check_same_length({"x": texts, "y": y, "sample_weight": sample_weight})
        if y is not None:
            self.check_labels(y)
        ds = tf.data.Dataset.from_tensor_slices(
            keras.utils.pack_x_y_sample_weight(batching.one_segment(texts), y, sample_weight))
        batch_size = batch_size or 32
        if shuffle:
            ds = ds.shuffle(max(n, 1), reshuffle_each_iteration=True)
        if shuffle and self.group_by_length:
            chunk = batch_size * LENGTH_GROUP
            ds = ds.batch(chunk).map(self._preprocess_element, num_parallel_calls=tf.data.AUTOTUNE)
            ds = ds.flat_map(_plain(lambda *e: batching.sorted_batches(e, batch_size)))
            ds = ds.shuffle(2 * LENGTH_GROUP, reshuffle_each_iteration=True)
            steps = self.steps_per_epoch(n, batch_size)
            ds = ds.apply(tf.data.experimental.assert_cardinality(steps))
        else:
            ds = ds.batch(batch_size).map(self._preprocess_element,
                                          num_parallel_calls=tf.data.AUTOTUNE)
            steps = self.steps_per_epoch(n, batch_size, shuffle=False)
        if trim:
            ds = ds.map(self._trim, num_parallel_calls=tf.data.AUTOTUNE)
        return ds.prefetch(tf.data.AUTOTUNE), steps

    @_plain
    def _preprocess_element(self, *element):
        """A batched dataset element of raw text -> the packed element (x, y, sample_weight)."""
        x, y, sample_weight = batching.unpack_element(element[0] if len(element) == 1 else element)
        x, y, sample_weight = self.preprocess_samples(x, y, sample_weight)
        if y is not None:
            y = self.check_labels_in_graph(y)
        return keras.utils.pack_x_y_sample_weight(x, y, sample_weight)

    @_plain
    def _trim(self, *element):
        x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(
            element[0] if len(element) == 1 else element)
        x, y, sample_weight = trim_padding(x, y, sample_weight, self.token_labels)
        return keras.utils.pack_x_y_sample_weight(x, y, sample_weight)

    def _preprocess_now(self, texts):
        """In-memory raw input read by the preprocessor -> packed numpy inputs, through one
        traced function per input structure (so predict() on new texts of any count does not
        trace again), traced anew for a preprocessor set since. A batch of no rows gets the
        model's input shapes (an empty batch of choices cannot tell how many choices it
        has)."""
        if self._preprocess_owner() is not self.preprocessor:  # model.preprocessor = ...
            self._preprocess_functions.clear()
            self._preprocess_owner = weakref.ref(self.preprocessor)
        signature = tuple(batching.batch_free_spec(t) for t in texts)
        key = repr(signature)
        if key not in self._preprocess_functions:
            def run(*segments):
                return self.preprocess_samples(batching.one_segment(segments))[0]

            self._preprocess_functions[key] = tf.function(run, input_signature=signature,
                                                          autograph=False)
        fn = self._preprocess_functions[key]
        n = int(texts[0].shape[0])
        chunks = [fn(*(t[i:i + _PREPROCESS_CHUNK] for t in texts))
                  for i in range(0, max(n, 1), _PREPROCESS_CHUNK)]
        packed = tf.nest.map_structure(
            lambda *parts: np.concatenate([p.numpy() for p in parts]), *chunks)
        if n == 0 and isinstance(packed, dict) and isinstance(self.input, dict):
            packed = {k: v.reshape([0] + [d if d is not None else s for d, s in zip(
                self.input[k].shape[1:], v.shape[1:])]) if k in self.input else v
                      for k, v in packed.items()}
        return packed

    # ------------------------------------------------------------------ Keras API
    @_counts_cut_texts("fit()", at_end=False)
    def fit(self, x=None, y=None, batch_size=None, epochs=1, verbose="auto", callbacks=None,
            validation_split=0.0, validation_data=None, shuffle=True, class_weight=None,
            sample_weight=None, initial_epoch=0, steps_per_epoch=None, validation_steps=None,
            validation_batch_size=None, validation_freq=1):
        raw, x = self._read_raw(x, "fit()")
        self._check_data(x, y, raw, "fit()")
        batches = batching.BatchCounter() if self._unknown_length(x) else None
        if raw and validation_split:
            if isinstance(x, tf.data.Dataset):
                raise TaskInputError("validation_split does not work with a "
                                     "tf.data.Dataset; pass validation_data.")
            x, y, sample_weight, validation_data = batching.split_validation(
                x, y, sample_weight, validation_split, self.labels)
            validation_split = 0.0
        steps = steps_per_epoch
        if raw:
            x, per_epoch = self._dataset(x, y, sample_weight, batch_size, shuffle, trim=True)
            y = sample_weight = batch_size = None
            shuffle = False  # done by the dataset, before batching
            steps = steps or per_epoch
        elif steps is None and not isinstance(x, tf.data.Dataset):
            n = batching.batch_size_of(x)
            steps = math.ceil(n * (1 - validation_split) / (batch_size or 32))
        elif steps is None and isinstance(x, tf.data.Dataset) and int(x.cardinality()) >= 0:
            steps = int(x.cardinality())
        if validation_data is not None:
            validation_data, raw_validation = self._validation(
                validation_data, validation_batch_size or batch_size)
            if raw_validation:
                validation_batch_size = None
        self._plan_schedule(None if steps is None else steps * (epochs - initial_epoch))
        # The texts cut are told once, when the first epoch ends (later ones cut the same).
        cuts = batching.AtFirstEpochEnd(lambda: self._warn_cuts("fit() (its first epoch)"))
        history = super().fit(
            x, y, batch_size=batch_size, epochs=epochs, verbose=verbose,
            callbacks=batching.with_callback(batching.with_callback(callbacks, batches), cuts),
            validation_split=validation_split, validation_data=validation_data,
            shuffle=shuffle, class_weight=class_weight,
            sample_weight=sample_weight, initial_epoch=initial_epoch,
            steps_per_epoch=steps_per_epoch, validation_steps=validation_steps,
            validation_batch_size=validation_batch_size, validation_freq=validation_freq)
        if batches is not None and not batches.train and epochs > initial_epoch:
            raise TaskInputError(f"{type(self).__name__}.fit() got an empty dataset: it yielded "
                                 "no batches, so nothing was trained.")
        return history

    def _validation(self, data, batch_size):
        """validation_data -> (what Keras gets, whether it was raw text)."""
        what = "fit(validation_data=...)"
        if isinstance(data, tf.data.Dataset):
            raw = self._raw(data, what)
            self._check_data(data, None, raw, what)
            if raw:
                return self._dataset(data, None, None, None, shuffle=False, trim=True)[0], True
            return data, False
        vx, vy, vsw = keras.utils.unpack_x_y_sample_weight(tuple(data))
        raw, vx = self._read_raw(vx, what)
        self._check_data(vx, vy, raw, what)
        if raw:
            return self._dataset(vx, vy, vsw, batch_size, shuffle=False, trim=True)[0], True
        return data, False

    @_counts_cut_texts("evaluate()")
    def evaluate(self, x=None, y=None, batch_size=None, verbose="auto", sample_weight=None,
                 steps=None, callbacks=None, return_dict=False, **kwargs):
        if kwargs.get("_use_cached_eval_dataset"):  # fit's validation: checked by fit
            return super().evaluate(x, y, batch_size=batch_size, verbose=verbose,
                                    sample_weight=sample_weight, steps=steps,
                                    callbacks=callbacks, return_dict=return_dict, **kwargs)
        raw, x = self._read_raw(x, "evaluate()")
        self._check_data(x, y, raw, "evaluate()")
        batches = batching.BatchCounter() if self._unknown_length(x) else None
        if raw:
            x, _ = self._dataset(x, y, sample_weight, batch_size, shuffle=False, trim=True)
            y = sample_weight = batch_size = None
        result = super().evaluate(x, y, batch_size=batch_size, verbose=verbose,
                                  sample_weight=sample_weight, steps=steps,
                                  callbacks=batching.with_callback(callbacks, batches),
                                  return_dict=return_dict, **kwargs)
        if batches is not None and not batches.test:
            raise TaskInputError(f"{type(self).__name__}.evaluate() got an empty dataset: it "
                                 "yielded no batches, so there is nothing to score.")
        return result

    @_counts_cut_texts("predict()")
    def predict(self, x, batch_size=None, verbose="auto", steps=None, callbacks=None):
        """Keras' ``predict`` on raw inputs too. No examples (an empty batch, a dataset that
        yields nothing) give the outputs of a batch with 0 rows."""
        raw, x = self._read_raw(x, "predict()")
        if not isinstance(x, tf.data.Dataset):
            if batching.is_empty(x):
                return self._predict_on_batch(x, raw)
            if raw:
                x = self._preprocess_now(x)
                if self.trim_predictions:
                    x, batch_size = self.trimmed_batches(x, batch_size or 32), None
            return super().predict(x, batch_size=batch_size, verbose=verbose, steps=steps,
                                   callbacks=callbacks)
        if int(x.cardinality()) == 0:
            return self._empty_predictions(x, raw)
        batches = batching.BatchCounter() if self._unknown_length(x) else None
        data = x
        if raw:
            data, _ = self._dataset(x, None, None, None, shuffle=False,
                                    trim=self.trim_predictions)
        try:
            return super().predict(data, batch_size=batch_size, verbose=verbose,
                                   steps=steps,
                                   callbacks=batching.with_callback(callbacks, batches))
        except UnboundLocalError:
            # Keras' predict loop ends normally on a dataset that yields nothing, then
            # fails to concatenate no outputs.
            if batches is None or not batches.ended or batches.predict:
                raise
        return self._empty_predictions(x, raw)

    def _empty_predictions(self, dataset, raw):
        """The outputs of a batch of 0 rows of ``dataset``'s element type."""
        x = batching.zero_rows(batching.unpack_element(dataset.element_spec)[0])
        if raw:
            x = self.preprocess_samples(x)[0]
        return super().predict_on_batch(x)

    @staticmethod
    def trimmed_batches(packed, batch_size):
        """Packed inputs (numpy) -> a dataset of ``batch_size`` batches, in order, each cut to
        its longest sequence rounded up to 8 (`keras_bert.text.packer.trim_padding`)."""
        ds = tf.data.Dataset.from_tensor_slices(packed).batch(batch_size)
        return ds.map(_plain(lambda x: trim_padding(x)[0])).prefetch(tf.data.AUTOTUNE)

    def _on_batch(self, x, y, sample_weight, method):
        raw, x = self._read_raw(x, method)
        self._check_data(x, y, raw, method)
        if not raw:
            return x, y, sample_weight
        y = None if y is None else self.labels(y)
        sample_weight = batching.labels_array(sample_weight, "sample_weight")
        batching.check_same_length({"x": x, "y": y, "sample_weight": sample_weight})
        if y is not None:
            self.check_labels(y)
        return self.preprocess_samples(batching.one_segment(x), y, sample_weight)

    @_counts_cut_texts("train_on_batch()")
    def train_on_batch(self, x, y=None, sample_weight=None, class_weight=None,
                       return_dict=False):
        x, y, sample_weight = self._on_batch(x, y, sample_weight, "train_on_batch()")
        return super().train_on_batch(x, y, sample_weight=sample_weight,
                                      class_weight=class_weight, return_dict=return_dict)

    @_counts_cut_texts("test_on_batch()")
    def test_on_batch(self, x, y=None, sample_weight=None, return_dict=False):
        x, y, sample_weight = self._on_batch(x, y, sample_weight, "test_on_batch()")
        return super().test_on_batch(x, y, sample_weight=sample_weight, return_dict=return_dict)

    @_counts_cut_texts("predict_on_batch()")
    def predict_on_batch(self, x):
        """Keras' ``predict_on_batch`` on raw inputs too; an empty batch gives outputs with 0
        rows."""
        raw, x = self._read_raw(x, "predict_on_batch()")
        return self._predict_on_batch(x, raw)

    def _predict_on_batch(self, x, raw):
        """``predict_on_batch`` of ``x`` as `_read_raw` gives it."""
        if raw and not isinstance(x, tf.data.Dataset):
            x = self._preprocess_now(x)
            if self.trim_predictions:
                x = trim_padding(x)[0]
        return super().predict_on_batch(x)
