"""`Task`: the base of every task model (an encoder, a head and optionally a preprocessor)."""

import math
import warnings

import keras
import numpy as np
import tensorflow as tf

from keras_bert.layers.arguments import check_kwargs
from keras_bert.models import task_data, task_presets
from keras_bert.models.task_data import TaskInputError
from keras_bert.text.preprocessor import BertPreprocessor

DEFAULT_LEARNING_RATE = 5e-5
DEFAULT_WARMUP_RATIO = 0.1
_PREPROCESS_CHUNK = 4096  # texts per call when predict() preprocesses in-memory inputs
LENGTH_GROUP = 16  # batches per chunk sorted by length (fit with group_by_length)


class Task(keras.Model):
    """The base of keras_bert's task models: an encoder, a head and optionally a preprocessor.

    A subclass builds its functional graph from ``encoder`` (packed inputs in, the head's
    outputs out) and calls ``super().__init__(inputs=..., outputs=..., preprocessor=...)``.
    The base gives every task model:

    * raw text in ``fit``, ``evaluate``, ``predict`` and the ``*_on_batch`` methods: Python
      lists of strings, numpy/pandas columns of text, string tensors, a tuple ``(texts_a,
      texts_b)`` or a list of pairs ``[[a, b], ...]`` for sentence pairs, or a batched
      `tf.data.Dataset` of those, go through ``preprocessor`` on `tf.data` threads; packed
      dicts (``input_word_ids``, ``input_mask``, ``input_type_ids``) go straight to the model,
      and so does everything when ``preprocessor`` is None. In training and evaluation each
      batch is cut to its longest sequence (rounded up to 8), which changes no result.
    * ``compile()`` defaults: the original BERT fine-tuning recipe (AdamW, weight decay 0.01
      except LayerNorm and biases, gradients clipped to norm 1.0, learning rate 5e-5 warmed up
      over the first 10% of the steps, then decayed linearly to 0 at the last step of ``fit``;
      each later ``fit`` call extends the decay to its own last step), and the subclass's loss
      and metrics.
    * a complete ``get_config`` (encoder, preprocessor, head arguments), so the model
      round-trips through ``.keras`` with its vocabulary and takes raw strings after loading.

    Example (a subclass, as `BertClassifier` is one):

    >>> import keras
    >>> from keras_bert import BertConfig, BertEncoder
    >>> from keras_bert.models.task import Task
    >>> class MeanTokenRegressor(Task):
    ...     def __init__(self, encoder, preprocessor=None, **kwargs):
    ...         inputs = encoder.input
    ...         pooled = keras.layers.GlobalAveragePooling1D()(
    ...             encoder(inputs)["sequence_output"])
    ...         outputs = keras.layers.Dense(1, name="score")(pooled)
    ...         super().__init__(inputs=inputs, outputs=outputs, encoder=encoder,
    ...                          preprocessor=preprocessor, **kwargs)
    ...     def default_loss(self):
    ...         return "mse"
    >>> encoder = BertEncoder(BertConfig(vocab_size=30, hidden_size=8, num_hidden_layers=1,
    ...                                  num_attention_heads=2, intermediate_size=16))
    >>> model = MeanTokenRegressor(encoder)
    >>> model.optimizer.__class__.__name__, model.loss
    ('AdamW', 'mse')
    """

    # fit() on in-memory raw text batches similar lengths together (see _dataset); set False
    # for batches drawn uniformly at random.
    group_by_length = True
    # What from_preset attaches, and the arguments it gives it unless told otherwise.
    preprocessor_cls = BertPreprocessor
    preprocessor_defaults = {}

    def __init__(self, *args, encoder=None, preprocessor=None, compile=True, **kwargs):
        # keras.Model's functional constructor drops keyword arguments it does not know.
        check_kwargs(f"{type(self).__name__}()", kwargs, {
            f"{type(self).__name__} arguments": task_presets.keyword_parameters(
                type(self).__init__, skip=("encoder", "preprocessor")) + ("compile",),
            "Keras model arguments": ("name", "trainable", "inputs", "outputs")})
        _check_preprocessor(encoder, preprocessor)
        super().__init__(*args, **kwargs)
        self.encoder = encoder
        self.preprocessor = preprocessor
        self._preprocess_functions = {}
        self._auto_schedule = False
        if compile:
            self.compile()

    # ------------------------------------------------------------------ compile
    def default_loss(self):
        """The loss ``compile()`` uses by default."""
        raise NotImplementedError(f"{type(self).__name__} must define default_loss().")

    def default_metrics(self):
        """The metrics ``compile()`` uses by default."""
        return None

    def compile(self, optimizer="auto", loss="auto", metrics="auto", **kwargs):
        """Keras' ``compile``; ``"auto"`` picks the BERT recipe and the task's loss/metrics."""
        self._auto_schedule = optimizer == "auto"
        if self._auto_schedule:
            # The recipe lives in keras_bert.training (row 4); a task model only needs it when
            # compiled with defaults, so it is imported here, at call time.
            from keras_bert.training import optimization

            schedule = optimization.LinearWarmupDecay(DEFAULT_LEARNING_RATE, num_train_steps=1)
            optimizer = optimization.AdamW(learning_rate=schedule)
        if loss == "auto":
            loss = self.default_loss()
        if metrics == "auto":
            metrics = self.default_metrics()
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics, **kwargs)

    def get_compile_config(self):
        return super().get_compile_config()

    def compile_from_config(self, config):
        # Keras' own restoration (it skips models whose compile() is overridden); a saved
        # compile config names its optimizer, loss and metrics explicitly.
        self.compile(**keras.saving.deserialize_keras_object(config))
        if self.built:
            self.optimizer.build(self.trainable_variables)

    def _plan_schedule(self, steps):
        """Sizes compile()'s default schedule to end at the last step of this fit()."""
        if not self._auto_schedule:
            return
        schedule = self.optimizer.learning_rate_schedule
        done = int(self.optimizer.iterations.numpy())
        if steps is None:
            warnings.warn(
                "fit() cannot tell how many steps it will run (a dataset of unknown length and "
                "no steps_per_epoch), so the default learning-rate schedule cannot decay to 0 "
                f"at the end; it stays at {schedule.peak_learning_rate} after warm-up. Pass "
                "steps_per_epoch, or compile with keras_bert.training.create_optimizer(...).",
                stacklevel=3,
            )
            steps = 10**9
        schedule.num_train_steps = done + steps
        if done == 0:
            schedule.num_warmup_steps = int(round(DEFAULT_WARMUP_RATIO * steps))
        self.train_function = None  # the schedule's numbers are baked into the traced step

    # ------------------------------------------------------------------ inputs
    def check_labels(self, y):
        """Raises a clear error for labels this task cannot use (numpy, eagerly)."""

    def check_labels_in_graph(self, y):
        """The same check on a tensor inside tf.data; returns ``y``."""
        return y

    def text_inputs(self, x):
        """Raw text -> the tensors the preprocessor takes (default: a tuple of segments)."""
        return task_data.text_segments(x)

    def labels(self, y):
        """Labels as given -> numpy arrays or tensors (default: numbers, clear errors)."""
        return task_data.labels_array(y, "y")

    def head_variables(self):
        """The head's weights: ``{name in Google's checkpoints: (variable, transposed)}``
        (``transposed``: Google stores the kernel as [out, in])."""
        return {}

    @property
    def token_labels(self):
        """True when labels are per token (then trimmed with the inputs)."""
        return False

    def _raw(self, x):
        """Whether ``x`` is raw text for the preprocessor (else packed ids for the model);
        raises a clear error for inputs that are neither."""
        if x is None:
            return False
        if isinstance(x, tf.data.Dataset):
            x_spec = _unpack_element(x.element_spec)[0]
            text = any(s.dtype == tf.string for s in tf.nest.flatten(x_spec))
        elif isinstance(x, dict):
            text = False
        else:
            text = task_data.is_text(x)
            if not text:
                self.text_inputs(x)  # raises the task's own account of what it takes
                raise TaskInputError(
                    f"{type(self).__name__} got {type(x).__name__} input that is not text: pass "
                    f"{task_data.ACCEPTED_TEXT}.")
        if text and self.preprocessor is None:
            raise TaskInputError(
                f"{type(self).__name__} has no preprocessor (preprocessor=None), so it takes "
                "packed inputs (a dict of input_word_ids, input_mask, input_type_ids), not text. "
                "Set model.preprocessor, or pack the text with a BertPreprocessor first.")
        return text

    def _preprocess_batch(self, x, y=None, sample_weight=None):
        out = self.preprocessor(x, y=y, sample_weight=sample_weight)
        return keras.utils.unpack_x_y_sample_weight(out) if isinstance(out, tuple) else (
            out, y, sample_weight)

    def steps_per_epoch(self, num_examples, batch_size=32, shuffle=True):
        """How many batches ``fit`` makes of ``num_examples`` in-memory raw examples (the
        length-grouped chunks end in partial batches), to size a schedule exactly."""
        if shuffle and self.group_by_length:
            chunk = batch_size * LENGTH_GROUP
            return num_examples // chunk * LENGTH_GROUP + math.ceil(
                num_examples % chunk / batch_size)
        return math.ceil(num_examples / batch_size)

    def _dataset(self, x, y, sample_weight, batch_size, shuffle, trim):
        """Raw inputs -> (batched, preprocessed dataset, batches per epoch or None).

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
            x_spec = _unpack_element(x.element_spec)[0]
            if any(spec.shape.rank == 0 for spec in tf.nest.flatten(x_spec)):
                raise TaskInputError("A tf.data.Dataset given to a task model must be batched "
                                     "(dataset.batch(32)), as Keras requires.")
            cardinality = int(x.cardinality())
            ds = x.map(self._preprocess_element, num_parallel_calls=tf.data.AUTOTUNE)
            if trim:
                ds = ds.map(self._trim, num_parallel_calls=tf.data.AUTOTUNE)
            return ds.prefetch(tf.data.AUTOTUNE), cardinality if cardinality >= 0 else None

        texts = self.text_inputs(x)
        y = None if y is None else self.labels(y)
        sample_weight = task_data.labels_array(sample_weight, "sample_weight")
        n = task_data.check_same_length({"x": texts, "y": y, "sample_weight": sample_weight})
        if y is not None:
            self.check_labels(y)
        ds = tf.data.Dataset.from_tensor_slices(
            keras.utils.pack_x_y_sample_weight(_one(texts), y, sample_weight))
        batch_size = batch_size or 32
        if shuffle:
            ds = ds.shuffle(max(n, 1), reshuffle_each_iteration=True)
        if shuffle and self.group_by_length:
            chunk = batch_size * LENGTH_GROUP
            ds = ds.batch(chunk).map(self._preprocess_element, num_parallel_calls=tf.data.AUTOTUNE)
            ds = ds.flat_map(lambda *e: task_data.sorted_batches(e, batch_size))
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

    def _preprocess_element(self, *element):
        """A batched dataset element of raw text -> the packed element (x, y, sample_weight)."""
        x, y, sample_weight = _unpack_element(element[0] if len(element) == 1 else element)
        x, y, sample_weight = self._preprocess_batch(x, y, sample_weight)
        if y is not None:
            y = self.check_labels_in_graph(y)
        return keras.utils.pack_x_y_sample_weight(x, y, sample_weight)

    def _trim(self, *element):
        x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(
            element[0] if len(element) == 1 else element)
        x, y, sample_weight = task_data.trim_padding(x, y, sample_weight, self.token_labels)
        return keras.utils.pack_x_y_sample_weight(x, y, sample_weight)

    def _preprocess_now(self, x):
        """In-memory raw text -> packed numpy inputs, through one traced function per input
        structure (so predict() on new texts of any count does not trace again)."""
        texts = self.text_inputs(x)
        signature = tuple(_batch_free_spec(t) for t in texts)
        key = repr(signature)
        if key not in self._preprocess_functions:
            def run(*segments):
                return self._preprocess_batch(_one(segments))[0]

            self._preprocess_functions[key] = tf.function(run, input_signature=signature)
        fn = self._preprocess_functions[key]
        n = int(texts[0].shape[0]) if hasattr(texts[0], "shape") else len(texts[0])
        chunks = [fn(*(t[i:i + _PREPROCESS_CHUNK] for t in texts))
                  for i in range(0, max(n, 1), _PREPROCESS_CHUNK)]
        return tf.nest.map_structure(lambda *parts: np.concatenate([p.numpy() for p in parts]),
                                     *chunks)

    # ------------------------------------------------------------------ Keras API
    def fit(self, x=None, y=None, batch_size=None, epochs=1, verbose="auto", callbacks=None,
            validation_split=0.0, validation_data=None, shuffle=True, class_weight=None,
            sample_weight=None, initial_epoch=0, steps_per_epoch=None, validation_steps=None,
            validation_batch_size=None, validation_freq=1):
        raw = self._raw(x)
        if raw and validation_split:
            if isinstance(x, tf.data.Dataset):
                raise TaskInputError("validation_split does not work with a tf.data.Dataset; "
                                     "pass validation_data.")
            x, y, sample_weight, validation_data = _split(x, y, sample_weight, validation_split,
                                                          self.text_inputs, self.labels)
            validation_split = 0.0
        steps = steps_per_epoch
        if raw:
            x, batches = self._dataset(x, y, sample_weight, batch_size, shuffle, trim=True)
            y = sample_weight = batch_size = None
            shuffle = False  # done by the dataset, before batching
            steps = steps or batches
        elif steps is None and not isinstance(x, tf.data.Dataset) and x is not None:
            n = task_data.batch_size_of(x)
            steps = math.ceil(n * (1 - validation_split) / (batch_size or 32))
        elif steps is None and isinstance(x, tf.data.Dataset) and int(x.cardinality()) >= 0:
            steps = int(x.cardinality())
        if validation_data is not None:
            validation_data, raw_validation = self._validation(
                validation_data, validation_batch_size or batch_size)
            if raw_validation:
                validation_batch_size = None
        self._plan_schedule(None if steps is None else steps * (epochs - initial_epoch))
        return super().fit(
            x, y, batch_size=batch_size, epochs=epochs, verbose=verbose, callbacks=callbacks,
            validation_split=validation_split, validation_data=validation_data, shuffle=shuffle,
            class_weight=class_weight, sample_weight=sample_weight, initial_epoch=initial_epoch,
            steps_per_epoch=steps_per_epoch, validation_steps=validation_steps,
            validation_batch_size=validation_batch_size, validation_freq=validation_freq)

    def _validation(self, data, batch_size):
        """validation_data -> (what Keras gets, whether it was raw text)."""
        if isinstance(data, tf.data.Dataset):
            if self._raw(data):
                return self._dataset(data, None, None, None, shuffle=False, trim=True)[0], True
            return data, False
        vx, vy, vsw = keras.utils.unpack_x_y_sample_weight(tuple(data))
        if self._raw(vx):
            return self._dataset(vx, vy, vsw, batch_size, shuffle=False, trim=True)[0], True
        return data, False

    def evaluate(self, x=None, y=None, batch_size=None, verbose="auto", sample_weight=None,
                 steps=None, callbacks=None, return_dict=False, **kwargs):
        if self._raw(x):
            x, _ = self._dataset(x, y, sample_weight, batch_size, shuffle=False, trim=True)
            y = sample_weight = batch_size = None
        return super().evaluate(x, y, batch_size=batch_size, verbose=verbose,
                                sample_weight=sample_weight, steps=steps, callbacks=callbacks,
                                return_dict=return_dict, **kwargs)

    def predict(self, x, batch_size=None, verbose="auto", steps=None, callbacks=None):
        if self._raw(x):
            if isinstance(x, tf.data.Dataset):
                x, _ = self._dataset(x, None, None, None, shuffle=False, trim=False)
            else:
                x = self._preprocess_now(x)
        return super().predict(x, batch_size=batch_size, verbose=verbose, steps=steps,
                               callbacks=callbacks)

    def _on_batch(self, x, y=None, sample_weight=None):
        if not self._raw(x):
            return x, y, sample_weight
        texts = self.text_inputs(x)
        y = None if y is None else self.labels(y)
        sample_weight = task_data.labels_array(sample_weight, "sample_weight")
        task_data.check_same_length({"x": texts, "y": y, "sample_weight": sample_weight})
        if y is not None:
            self.check_labels(y)
        return self._preprocess_batch(_one(texts), y, sample_weight)

    def train_on_batch(self, x, y=None, sample_weight=None, class_weight=None,
                       return_dict=False):
        x, y, sample_weight = self._on_batch(x, y, sample_weight)
        return super().train_on_batch(x, y, sample_weight=sample_weight,
                                      class_weight=class_weight, return_dict=return_dict)

    def test_on_batch(self, x, y=None, sample_weight=None, return_dict=False):
        x, y, sample_weight = self._on_batch(x, y, sample_weight)
        return super().test_on_batch(x, y, sample_weight=sample_weight, return_dict=return_dict)

    def predict_on_batch(self, x):
        if self._raw(x) and not isinstance(x, tf.data.Dataset):
            x = self._preprocess_now(x)
        return super().predict_on_batch(x)

    # ------------------------------------------------------------------ export
    def export(self, filepath, format="tf_saved_model", verbose=None, input_signature=None,
               **kwargs):
        """Keras' ``export``: with ``format="tf_saved_model"`` (the default), the end-to-end
        serving SavedModel for TF Serving: raw strings in (``serving_default``), packed ids
        in (``serving_ids``), scores and labels out, written to ``filepath``, the version
        directory of TF Serving's layout (``/models/<name>/<version>``). Options
        (``pairs``, ``label_names``, ``top_k``, ``max_answer_length``) and the signatures:
        `keras_bert.export.export_model`. Returns the export's path.

        Other formats (``"onnx"``, ``"openvino"``, ``"litert"``) are Keras' own exports of
        the model on packed inputs. Raises `keras_bert.export.ExportError` (a
        ``ValueError``) for an ``input_signature`` with ``"tf_saved_model"``: its
        signatures are fixed (text and ids).
        """
        if format != "tf_saved_model":
            return super().export(filepath, format=format, verbose=verbose,
                                  input_signature=input_signature, **kwargs)
        # The export lives in keras_bert.export (row 5), imported at call time as
        # compile() imports keras_bert.training.
        from keras_bert.export import serving

        if input_signature is not None:
            raise serving.ExportError(
                "input_signature: the serving export's signatures are fixed (serving_default "
                "takes text, serving_ids the packed ids); see keras_bert.export.serving.")
        return serving.export_model(self, filepath, verbose=bool(verbose), **kwargs)

    # ------------------------------------------------------------------ presets
    @classmethod
    def from_preset(cls, preset, load_weights=True, **kwargs):
        """Builds the task model from a preset: the encoder with its weights, the preset's
        preprocessor (vocabulary and casing), and the head, loaded when the checkpoint has
        it with the same shape (a preset saved by ``save_to_preset``, Google's pre-training
        heads), fresh otherwise.

        Args:
            preset: a registered name (``keras_bert.presets()``), or a local directory
                (keras_bert, Google, Hugging Face or keras-hub format) or Google ``.zip``.
            load_weights: False builds the architecture with fresh weights.
            **kwargs: the head's arguments (e.g. ``num_classes=2``; a preset saved from this
                class supplies its own), the preprocessor's (``seq_length``, ...),
                ``preprocessor=None`` for none, ``dtype``, `BertConfig` fields to override,
                and loading options (``url``, ``sha256``, ``do_lower_case``, ``progress``).
                Any other name is a `TypeError` raised before anything is loaded.
        """
        return task_presets.build_from_preset(cls, preset, load_weights=load_weights, **kwargs)

    def save_to_preset(self, directory):
        """Writes the encoder and the head (Google's names), the config, the vocabulary and
        the task's arguments in keras_bert's layout; ``from_preset(directory)`` loads it."""
        return task_presets.save_task_to_preset(self, directory)

    def head_config(self):
        """The head's constructor arguments (the config without encoder and preprocessor)."""
        config = self.get_config()
        return {k: v for k, v in config.items() if k not in ("encoder", "preprocessor", "name")}

    # ------------------------------------------------------------------ config
    def get_config(self):
        # Not Functional's nested config: the constructor arguments of the task.
        return {
            "encoder": keras.saving.serialize_keras_object(self.encoder),
            "preprocessor": keras.saving.serialize_keras_object(self.preprocessor)
            if self.preprocessor is not None else None,
            "name": self.name,
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        for key in ("encoder", "preprocessor"):
            if isinstance(config.get(key), dict):
                config[key] = keras.saving.deserialize_keras_object(config[key])
        return cls(**config)


def _split(x, y, sample_weight, fraction, text_inputs, labels):
    """Keras' validation_split for raw text: the last ``fraction`` of the rows."""
    texts = text_inputs(x)
    n = int(texts[0].shape[0])
    cut = int(n * (1 - fraction))

    def head(v):
        return None if v is None else tf.nest.map_structure(lambda a: a[:cut], v)

    def tail(v):
        return None if v is None else tf.nest.map_structure(lambda a: a[cut:], v)

    y = None if y is None else labels(y)
    sample_weight = task_data.labels_array(sample_weight, "sample_weight")
    validation = keras.utils.pack_x_y_sample_weight(
        tuple(tail(t) for t in texts) if len(texts) > 1 else tail(texts[0]), tail(y),
        tail(sample_weight))
    train = tuple(head(t) for t in texts) if len(texts) > 1 else head(texts[0])
    return train, head(y), head(sample_weight), validation


def _check_preprocessor(encoder, preprocessor):
    """The preprocessor must make ids the encoder has rows for, and sequences it can take."""
    if encoder is None or preprocessor is None:
        return
    config = encoder.bert_config
    tokenizer = getattr(preprocessor, "tokenizer", None)
    # (A tokenizer made from a config gets its vocabulary later, from the .keras assets.)
    if (tokenizer is not None and tokenizer.vocabulary is not None
            and tokenizer.vocabulary_size != config.vocab_size):
        raise ValueError(
            f"The preprocessor's vocabulary has {tokenizer.vocabulary_size} tokens but the "
            f"encoder's vocab_size is {config.vocab_size}: they do not belong together (use "
            "the preprocessor of the encoder's preset).")
    seq_length = getattr(preprocessor, "seq_length", None)
    if seq_length is not None and seq_length > config.max_position_embeddings:
        raise ValueError(
            f"The preprocessor packs seq_length={seq_length} tokens, but the encoder takes at "
            f"most max_position_embeddings={config.max_position_embeddings}; pass "
            f"seq_length<={config.max_position_embeddings}.")


def _one(texts):
    """A tuple of one text segment is that segment (the preprocessor's single-text form)."""
    return texts[0] if len(texts) == 1 else tuple(texts)


def _unpack_element(element):
    """A dataset element (or its spec) -> (x, y, sample_weight), as Keras unpacks it, except
    that a tuple of texts only is x itself: the segments of pairs, with no labels."""
    if not isinstance(element, tuple):
        return element, None, None
    if all(getattr(leaf, "dtype", None) == tf.string for leaf in tf.nest.flatten(element)):
        return element, None, None
    return keras.utils.unpack_x_y_sample_weight(element)


def _batch_free_spec(value):
    """The type spec of a tensor with its batch dimension left open."""
    shape = [None] + list(value.shape[1:])
    if isinstance(value, tf.RaggedTensor):
        return tf.RaggedTensorSpec(shape, value.dtype, ragged_rank=value.ragged_rank,
                                   row_splits_dtype=value.row_splits.dtype)
    return tf.TensorSpec(shape, value.dtype)
