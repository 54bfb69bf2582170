"""`Task`: the base of every task model (an encoder, a head and optionally a preprocessor)."""

import warnings

import keras

from keras_bert.checks import check_kwargs, keyword_parameters
from keras_bert.optimizers import optimization
from keras_bert.models import export_formats, load_note, lora, quantization
from keras_bert.models.pipeline_model import PipelineModel
from keras_bert.models.encoder import BertEncoder
from keras_bert.presets.preset_loader import task_from_preset
from keras_bert.presets.preset_saver import PresetSaver
from keras_bert.text.preprocessor import BertPreprocessor
from keras_bert.text.tokenizer import BertTokenizer

DEFAULT_LEARNING_RATE = 5e-5
# The peak learning rate of compile()'s default with LoRA enabled: the factors start at zero
# and are few, and take rates ten times a full fine-tuning's (the LoRA paper's 4e-4 to 5e-4
# for RoBERTa-base on GLUE).
DEFAULT_LORA_LEARNING_RATE = 5e-4
DEFAULT_WARMUP_RATIO = 0.1

class Task(PipelineModel):
    """The base of keras_bert's task models: an encoder, a head and optionally a preprocessor.

    A subclass builds its functional graph from ``encoder`` (packed inputs in, the head's
    outputs out) and calls ``super().__init__(inputs=..., outputs=..., preprocessor=...)``.
    The base gives every task model:

    * raw text in ``fit``, ``evaluate``, ``predict`` and the ``*_on_batch`` methods: every
      form ``preprocessor`` reads (`keras_bert.text.raw_inputs`: Python lists of strings,
      numpy/pandas columns of text, string tensors, a tuple ``(texts_a, texts_b)`` or a list
      of pairs ``[[a, b], ...]`` for sentence pairs; words, choices), or a batched
      `tf.data.Dataset` of those, read by ``preprocessor`` and packed on `tf.data` threads; packed
      dicts (``input_word_ids``, ``input_mask``, ``input_type_ids``) go straight to the model,
      and so does everything when ``preprocessor`` is None. In training and evaluation each
      batch is cut to its longest sequence (rounded up to 8), which changes no result.
    * ``compile()`` defaults: the original BERT fine-tuning recipe (AdamW, weight decay 0.01
      except LayerNorm and biases, gradients clipped to norm 1.0, learning rate 5e-5 (5e-4
      with LoRA enabled) warmed up over the first 10% of the steps, then decayed linearly to
      0 at the last step of ``fit``; each later ``fit`` call extends the decay to its own last
      step), and the subclass's loss and metrics.
    * a complete ``get_config`` (encoder, preprocessor, head arguments), so the model
      round-trips through ``.keras`` with its vocabulary and takes raw strings after loading.

    Example (a subclass, as `BertClassifier` is one):

    >>> import keras
    >>> from keras_bert import BertEncoder
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
    >>> model = MeanTokenRegressor(BertEncoder.from_preset("tiny_random"))
    >>> model.optimizer.__class__.__name__, model.loss
    ('AdamW', 'mse')
    """

    # What from_preset attaches, and the arguments it gives it unless told otherwise.
    encoder_cls = BertEncoder
    tokenizer_cls = BertTokenizer
    preprocessor_cls = BertPreprocessor
    preprocessor_defaults = {}
    # Whether the head reads the encoder's pooled_output: from_preset of a checkpoint without
    # a pooler warns that it starts fresh only when it does.
    reads_pooled_output = True
    # The kind of head (keras_bert.checkpoints.task_heads.TASKS) whose weights from_preset
    # loads and save_to_preset writes; None: a task without one of those.
    head_task = None

    def __init__(self, *args, encoder=None, preprocessor=None, compile=True, **kwargs):
        # keras.Model's functional constructor drops keyword arguments it does not know.
        check_kwargs(f"{type(self).__name__}()", kwargs, {
            f"{type(self).__name__} arguments": keyword_parameters(
                type(self).__init__, skip=("encoder", "preprocessor")) + ("compile",),
            "Keras model arguments": ("name", "trainable", "inputs", "outputs")})
        _check_preprocessor(encoder, preprocessor)
        super().__init__(*args, **kwargs)
        self.encoder = encoder
        self.preprocessor = preprocessor
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
            schedule = optimization.LinearWarmupDecay(self.default_learning_rate(),
                                                      num_train_steps=1)
            optimizer = optimization.AdamW(learning_rate=schedule)
        if loss == "auto":
            loss = self.default_loss()
        if metrics == "auto":
            metrics = self.default_metrics()
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics, **kwargs)

    def default_learning_rate(self):
        """The peak learning rate of ``compile()``'s default optimizer:
        ``DEFAULT_LEARNING_RATE`` (5e-5), or ``DEFAULT_LORA_LEARNING_RATE`` (5e-4) with LoRA
        enabled."""
        return DEFAULT_LORA_LEARNING_RATE if self.lora_config else DEFAULT_LEARNING_RATE

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

    # ------------------------------------------------------------------ saving
    def save(self, filepath, overwrite=True, zipped=None, include_optimizer=True, **kwargs):
        """Keras' ``save``, with tf.keras' ``include_optimizer`` for ``.keras`` files too
        (Keras 3 honours it for ``.h5`` only). ``include_optimizer=False`` leaves out the
        optimizer's state and the compile arguments: the file holds the weights, the config
        and the vocabulary, about the model's own size (an AdamW state is twice the weights),
        and loads without warnings, compiled with the defaults of ``compile()`` and a fresh
        optimizer. Keep it (the default) to resume training where it stopped."""
        if include_optimizer or not self.compiled or str(filepath).endswith((".h5", ".hdf5")):
            return super().save(filepath, overwrite=overwrite, zipped=zipped,
                                include_optimizer=include_optimizer, **kwargs)
        # Keras saves the optimizer it finds on the model, and the compile arguments while
        # the model is compiled: hide both while it writes.
        optimizer = self.optimizer
        try:
            self.optimizer, self.compiled = None, False
            return super().save(filepath, overwrite=overwrite, zipped=zipped, **kwargs)
        finally:
            self.optimizer, self.compiled = optimizer, True

    # ------------------------------------------------------------------ head
    def head_variables(self):
        """The head's weights: ``{name in Google's checkpoints: (variable, transposed)}``
        (``transposed``: Google stores the kernel as [out, in])."""
        return {}

    # ------------------------------------------------------------------ LoRA
    def enable_lora(self, rank, target_layer_names=None, lora_alpha=None):
        """LoRA on the encoder (`BertEncoder.enable_lora`: every encoder weight frozen,
        trainable low-rank factors on the ``target_layer_names`` projections, default
        ``query`` and ``value``); the head stays trainable. A model compiled with the
        default optimizer is compiled again with the LoRA learning rate
        (``DEFAULT_LORA_LEARNING_RATE``); one whose optimizer has trained gets a fresh copy
        of it (its state belonged to the weights that trained before)."""
        if not hasattr(self.encoder, "enable_lora"):
            raise TypeError(f"{type(self).__name__}: LoRA needs a BertEncoder; this model's "
                            f"encoder is a {type(self.encoder).__name__}.")
        self.encoder.enable_lora(rank, target_layer_names, lora_alpha=lora_alpha)
        self._lora_changed()

    @property
    def lora_config(self):
        """The encoder's LoRA (``{"rank", "lora_alpha", "target_layer_names"}``) or None."""
        return getattr(self.encoder, "lora_config", None)

    def save_lora_weights(self, filepath):
        """Writes what LoRA trains, the encoder's factors and the head, to ``filepath`` (a
        ``.lora.h5`` file; local, ``gs://``): ``load_lora_weights`` puts them back onto a
        fresh ``from_preset`` model of the same preset."""
        return lora.save(self, filepath)

    def load_lora_weights(self, filepath):
        """Loads a file of ``save_lora_weights`` (factors and head; an encoder's file:
        the factors alone, the head stays), enabling LoRA as the file says when it is not
        enabled yet. ValueError naming what differs for a file of another task,
        architecture, rank, alpha, targets or head shape."""
        lora.load(self, filepath)  # (enable_lora, when it enables, compiles anew)
        lora.reset_functions(self)

    def merge_lora(self):
        """Folds the LoRA factors into the encoder's kernels (`BertEncoder.merge_lora`):
        the same outputs from plain projections, for serving or ``save_to_preset``."""
        self.encoder.merge_lora()
        self._lora_changed()

    def _lora_changed(self):
        """The trainable weights changed: fresh traced functions, and an optimizer that
        knows the new ones (Keras' refuses variables it was not built with)."""
        lora.reset_functions(self)
        if not getattr(self, "compiled", False):
            return
        args = dict(self._compile_config.config)
        if self._auto_schedule:
            args["optimizer"] = "auto"
        elif self.optimizer.built:
            args["optimizer"] = type(self.optimizer).from_config(self.optimizer.get_config())
        else:
            return
        self.compile(**args)

    # ------------------------------------------------------------------ quantization
    def quantize(self, mode=None, **kwargs):
        """Keras' ``quantize`` (``"int8"``: docs/export.md), without its warning for each layer
        that stays float by design (`quantization.quantizing`), with one heap scan
        at the end instead of one per layer. A compiled model gets
        a fresh optimizer, as with LoRA: the state it kept belonged to the float weights."""
        with quantization.quantizing():
            super().quantize(mode, **kwargs)
        self._lora_changed()  # the trainable weights changed: new functions and optimizer

    # ------------------------------------------------------------------ export
    def export(self, filepath, format="tf_saved_model", verbose=None, input_signature=None,
               **kwargs):
        """Keras' ``export``: with ``format="tf_saved_model"`` (the default), the end-to-end
        serving SavedModel for TF Serving: raw strings in (``serving_default``), packed ids
        in (``serving_ids``), scores and labels out, written to ``filepath``, the version
        directory of TF Serving's layout (``/models/<name>/<version>``). Options
        (``pairs``, ``label_names``, ``top_k``, ``max_answer_length``) and the signatures:
        `keras_bert.export.export_model`. Returns the export's path.

        ``format="litert"``: a LiteRT ``.tflite`` with the tokenizer inside, float32 or
        int8 (``quantize="int8"``), for `BertClassifier` and `BertMultipleChoice`
        (`keras_bert.export.export_litert`). These two are the formats: Keras' others
        (``"onnx"``, ``"openvino"``, ``"torch"``) are refused. Raises
        `keras_bert.export.ExportError` (a ``ValueError``) for those, and for an
        ``input_signature``: the signatures are fixed (text and ids).
        A model with LoRA enabled exports a copy with the factors merged into the kernels
        (`keras_bert.models.lora.for_export`): the same outputs, plain projections; the
        model itself keeps its factors.
        """
        writer = export_formats.writer(format)
        if writer is not None:  # (each writer exports lora.for_export(model))
            return writer(self, filepath, verbose=bool(verbose),
                          input_signature=input_signature, **kwargs)
        model = lora.for_export(self)
        return super(Task, model).export(filepath, format=format, verbose=verbose,
                                         input_signature=input_signature, **kwargs)

    # ------------------------------------------------------------------ presets
    @classmethod
    def from_preset(cls, preset, load_weights=True, **kwargs):
        """Builds the task model from a preset: the encoder with its weights, the preset's
        preprocessor (vocabulary and casing), and the head: the checkpoint's when it holds
        one of this task (a ``save_to_preset`` of this class; transformers' ``BertFor*`` of
        the task; Google's ``run_classifier.py``/``run_squad.py`` heads; keras-hub's
        ``BertTextClassifier``; the pre-training heads), with the arguments it decides
        (``num_classes``, ``label_names`` from ``id2label``, ...); else fresh, which one log
        line says. A checkpoint holding the fine-tuned head of another task is an error,
        raised before anything is built, as is a ``num_classes`` that its head disagrees
        with (docs/migrating.md).

        Args:
            preset: a registered name (``keras_bert.presets()``), a hub handle, or a local
                directory (keras_bert, Google, Hugging Face or keras-hub format) or Google
                ``.zip``.
            load_weights: False builds the architecture with fresh weights.
            **kwargs: the head's arguments (e.g. ``num_classes=2``, needed only when the
                checkpoint has no head to take it from), the preprocessor's
                (``seq_length``, ...), ``preprocessor=None`` for none, ``dtype``,
                `BertConfig` fields to override, and loading options (``url``, ``sha256``,
                ``do_lower_case``, ``progress``). Any other name is a `TypeError` raised
                before anything is loaded.
        """
        return task_from_preset(cls, preset, load_weights=load_weights, **kwargs)

    @classmethod
    def preset_defaults(cls, metadata):
        """The arguments (head and preprocessor) ``from_preset`` gives this class from what a
        preset records besides its weights (``metadata``, `Preset.metadata`), below the
        caller's and those of a preset saved from this class. None by default; a
        sentence-transformers model gives `BertTextEmbedder` its pooling."""
        return {}

    def preset_metadata(self):
        """What ``save_to_preset`` records of this model besides its arguments and weights
        (`preset_defaults` reads it back). Nothing by default."""
        return {}

    def save_to_preset(self, directory, format="keras_bert"):
        """Writes the encoder, the head, the config, the vocabulary and the task's arguments
        to ``directory`` in ``format``; ``from_preset(directory)`` loads it back, and
        returns ``directory``. An earlier preset there is replaced at once
        (`keras_bert.presets.preset_saver`).

        ``format``: ``"keras_bert"`` (Google's layout plus ``keras_bert.json``, with every
        argument of the task and its preprocessor), ``"huggingface"`` (transformers'
        ``AutoModelFor...``, ``AutoTokenizer`` and ``AutoConfig`` read it: the ``BertFor*``
        class of the task, ``id2label`` from ``label_names``), ``"google"`` (what
        ``run_classifier.py``/``run_squad.py`` read: ``output_weights`` or
        ``cls/squad/*``; no label names) or ``"sentence_transformers"`` (a
        `BertTextEmbedder`: a folder sentence-transformers loads)."""
        return PresetSaver(directory, format=format).save_task(self)

    def head_config(self):
        """The head's constructor arguments (the config without encoder and preprocessor)."""
        config = self.get_config()
        return {k: v for k, v in config.items() if k not in (
            "encoder", "preprocessor", "name", quantization.CONFIG_KEY, load_note.KEY)}

    # ------------------------------------------------------------------ config
    def get_config(self):
        # Not Functional's nested config: the constructor arguments of the task, and which of
        # its layers are quantized (the encoder records its own); first, how to load it.
        return load_note.add(quantization.record(self, {
            "encoder": keras.saving.serialize_keras_object(self.encoder),
            "preprocessor": keras.saving.serialize_keras_object(self.preprocessor)
            if self.preprocessor is not None else None,
            "name": self.name,
        }))

    @classmethod
    def from_config(cls, config):
        config = load_note.drop(config)
        quantized = config.pop(quantization.CONFIG_KEY, None)
        for key in ("encoder", "preprocessor"):
            if isinstance(config.get(key), dict):
                config[key] = keras.saving.deserialize_keras_object(config[key])
        return quantization.quantize_again(cls(**config), quantized)


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
