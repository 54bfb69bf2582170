"""`PresetLoader`: the one way every ``from_preset`` of keras_bert loads a preset, beside
`PresetSaver`, which writes them (`keras_bert.presets.preset_saver`).

keras-hub's ``PresetLoader`` shape: a preset (a registered name or a keras-hub / TF Hub name
of one, an ``hf://`` or ``kaggle://`` handle, a directory in keras_bert, Google, Hugging Face
or keras-hub format, a Google ``.zip``) is resolved once, when the loader is made
(`keras_bert.presets.resolver.load_preset` gives a `Preset`), and the loader then builds
what a class asks for from that `Preset`: `load_config`, `load_encoder`, `load_tokenizer`,
`load_preprocessor`, `load_task`. It takes the class to build as an argument (a task class
names its ``encoder_cls``, ``tokenizer_cls`` and ``preprocessor_cls``) and uses the models'
public methods (the constructor, ``set_canonical_weights``, ``head_variables``), so this
module, two rows below the models, imports none of them. Head weights are read here
(`load_head_weights`) and written beside, in the saver (`head_weights`).

`encoder_from_preset`, `task_from_preset` and `text_preset` are the ``from_preset`` of the
encoder, of the task models and of the text layers: each checks the keyword arguments
against what the class takes before anything is resolved, then loads through one loader.

>>> from keras_bert.presets.preset_loader import PresetLoader
>>> loader = PresetLoader("minilm_l6", require_weights=False, require_vocab=True)
>>> loader.load_config().hidden_size, loader.do_lower_case
(384, True)
"""

import inspect
import logging
import warnings

import numpy as np

from keras_bert import vocab
from keras_bert.checks import check_kwargs, keyword_parameters
from keras_bert.checkpoints import task_heads
from keras_bert.checkpoints.common import POOLER, CheckpointError, has_pooler
from keras_bert.checkpoints.formats import Preset
from keras_bert.config import BertConfig
from keras_bert.presets.preset_saver import (
    PREPROCESSOR_KEY, TASK_KEY, pooler_fingerprint, preprocessor_arguments,
)
from keras_bert.presets.resolver import load_preset

log = logging.getLogger("keras_bert.presets")

# Keyword arguments of from_preset that steer loading rather than the model.
LOAD_OPTIONS = ("url", "sha256", "do_lower_case", "progress")
# The encoder's own constructor arguments a task's from_preset passes on to it.
ENCODER_ARGUMENTS = ("dtype",)


def _config_fields():
    return tuple(BertConfig().to_dict())


class PresetLoader:
    """A preset resolved once, and the builders of what a class asks for from it.

    Args:
        preset: a `Preset` already resolved, or what `load_preset` resolves: a registered
            name (``keras_bert.presets()``) or another name of one, a hub handle (``hf://``,
            ``kaggle://``), a local directory or a Google ``.zip``.
        require_weights: whether the preset must have weights (False: config and
            vocabulary are enough; a registry name downloads nothing).
        require_vocab: whether it must have a vocabulary.
        url, sha256, do_lower_case, progress: the loading options of `load_preset`.

    Example:

    >>> from keras_bert import BertEncoder
    >>> from keras_bert.presets.preset_loader import PresetLoader
    >>> loader = PresetLoader("minilm_l6", require_weights=False)
    >>> encoder = loader.load_encoder(BertEncoder, load_weights=False, num_hidden_layers=1)
    >>> encoder.bert_config.num_hidden_layers, encoder.preset_name
    (1, 'minilm_l6')
    """

    def __init__(self, preset, require_weights=True, require_vocab=False, **load_options):
        check_kwargs("PresetLoader()", load_options, {"loading options": LOAD_OPTIONS})
        if isinstance(preset, Preset):
            self.preset = preset
        else:
            self.preset = load_preset(preset, require_weights=require_weights,
                                      require_vocab=require_vocab, **load_options)
        self._weights = {}

    # ---------------------------------------------------------------- what was resolved
    @property
    def path(self):
        return self.preset.path

    @property
    def name(self):
        return self.preset.name

    @property
    def vocab_path(self):
        return self.preset.vocab_path

    @property
    def do_lower_case(self):
        return self.preset.do_lower_case

    @property
    def metadata(self):
        """What the preset records besides config and weights (keras_bert.json's contents
        for a preset in keras_bert's layout, else {})."""
        return self.preset.metadata

    def load_config(self, overrides=None):
        """The preset's `BertConfig`, with ``overrides`` (field: value) replaced."""
        config = self.preset.config
        return config.replace(**overrides) if overrides else config

    def load_weights(self, config):
        """The canonical weights, checked against ``config`` (read once per config; their
        names and shapes are checked before any tensor is read: `Preset.weights`)."""
        key = repr(config.to_dict())
        if key not in self._weights:
            self._weights = {key: self.preset.weights(config)}
        return self._weights[key]

    # ---------------------------------------------------------------- builders
    def load_encoder(self, cls, load_weights=True, record=True, reads_pooled_output=True,
                     **kwargs):
        """``cls`` (a `BertEncoder` class) from the preset's config, `BertConfig` fields in
        ``kwargs`` overriding it and the rest passed to the class; its weights unless
        ``load_weights`` is False, read and checked against the config before the model is
        built (a checkpoint that does not fit fails at once, whatever the model's size).
        With ``record``, the model keeps the preset's vocabulary, casing and name (for
        ``save_to_preset``). ``reads_pooled_output``: whether the caller reads the pooled
        output, to be told when a checkpoint without a pooler leaves it fresh (see
        `assign_encoder_weights`)."""
        fields = _config_fields()
        overrides = {k: kwargs.pop(k) for k in fields if k in kwargs}
        config = self.load_config(overrides)
        weights = self.load_weights(config) if load_weights else None
        model = cls(config, **kwargs)
        if load_weights:
            assign_encoder_weights(model, weights, source=self.path or self.name,
                                   warn=reads_pooled_output)
        if record:
            model.vocab_path = self.vocab_path  # reads the tokens into model.vocabulary
            if self.vocab_path is None:  # tokens from a file of another kind, or none
                model.vocabulary = self.preset.vocabulary
            model.do_lower_case = self.do_lower_case
            model.preset_name = self.name
        return model

    def load_vocabulary(self):
        """The preset's vocabulary (a list of tokens), read and checked by the tokenizer's
        reader."""
        tokens = self.preset.vocabulary
        vocab.check_vocabulary(tokens, path=self.vocab_path)
        return tokens

    def load_tokenizer(self, cls, **kwargs):
        """``cls`` (a `BertTokenizer` class) on the preset's vocabulary (its file, or its
        tokens when they come from another kind of file) and casing; ``kwargs`` (the
        constructor's other arguments, ``do_lower_case`` among them) override."""
        vocabulary = self.vocab_path if self.vocab_path is not None else self.preset.vocabulary
        return cls(vocabulary, **{"do_lower_case": self.do_lower_case, **kwargs})

    def load_preprocessor(self, task_cls, **kwargs):
        """The preprocessor ``task_cls`` takes: its ``preprocessor_cls`` on the preset's
        tokenizer, with the task's defaults, the arguments a saved task preset recorded, and
        ``kwargs``, in that order of precedence (last wins)."""
        names = preprocessor_arguments(task_cls)
        saved = {k: v for k, v in (self.metadata.get(PREPROCESSOR_KEY) or {}).items()
                 if k in names}
        tokenizer = self.load_tokenizer(task_cls.tokenizer_cls)
        return task_cls.preprocessor_cls(
            tokenizer, **{**task_cls.preprocessor_defaults, **saved, **kwargs})

    def load_task(self, cls, load_weights=True, **kwargs):
        """The task model ``cls`` (see `task_from_preset` for ``kwargs``): the encoder with
        its weights, the preprocessor (unless ``preprocessor`` is given), and the head: the
        checkpoint's when it holds one for the task (its arguments taken from it: see
        `task_arguments`), else fresh, which one log line says (INFO, logger
        ``keras_bert.presets``: a fresh head is where fine-tuning starts, so it prints
        nothing unless logging shows INFO)."""
        kwargs = dict(kwargs)
        preprocessor_given = "preprocessor" in kwargs
        preprocessor = kwargs.pop("preprocessor", None)
        check_task_kwargs(cls, kwargs)
        saved_task = self.metadata.get(TASK_KEY) or {}
        if saved_task.get("class_name") != cls.__name__:  # what else the preset records
            kwargs = {**cls.preset_defaults(self.metadata), **kwargs}
        overrides = {k: kwargs.pop(k) for k in _config_fields() if k in kwargs}
        pre_args = {k: kwargs.pop(k) for k in preprocessor_arguments(cls) if k in kwargs}
        encoder_args = {k: kwargs.pop(k) for k in ENCODER_ARGUMENTS if k in kwargs}
        head_args = self.task_arguments(cls, self.load_config(overrides), kwargs, load_weights)

        encoder = self.load_encoder(cls.encoder_cls, load_weights=load_weights, record=False,
                                    reads_pooled_output=getattr(cls, "reads_pooled_output", True),
                                    **overrides, **encoder_args)
        if not preprocessor_given:
            preprocessor = self.load_preprocessor(cls, **pre_args)
        model = cls(encoder, preprocessor=preprocessor, **head_args)
        if load_weights:
            loaded = load_head_weights(model, self.load_weights(encoder.bert_config),
                                       source=self.path or self.name)
            if not loaded and model.head_variables():
                log.info("%s holds no %s head: %s's head (%s) starts fresh; train it "
                         "before using its outputs.", self.path or self.name,
                         getattr(cls, "head_task", None) or "task", cls.__name__,
                         ", ".join(model.head_variables()))
        return model

    def task_arguments(self, cls, config, kwargs, load_weights=True):
        """The head arguments of the task model ``cls`` (of ``head_task`` kind) for ``config``,
        decided before anything is built: those a task preset of the same class recorded,
        then those the checkpoint's head decides (`task_heads.head_arguments`: its
        ``num_classes``, label names, ...; with ``load_weights`` False, those its files
        describe), then ``kwargs``. `CheckpointError` when the checkpoint holds another
        task's head, a head of shapes the task cannot take (`task_heads.check_head`), or a
        head of other ``num_classes`` than ``kwargs`` give; `TypeError` when an argument the
        class needs is in none of them."""
        task = getattr(cls, "head_task", None)
        saved = self.metadata.get(TASK_KEY) or {}
        args = dict(saved.get("config") or {}) if saved.get("class_name") == cls.__name__ else {}
        found = {}
        if task is not None:
            source, head = self.path or self.name, self.preset.head
            shapes = {}
            if load_weights:
                self.preset.check_variables(config)  # the encoder's names and shapes first
                shapes = self.preset.variable_shapes(config)
            task_heads.check_head(task, shapes, head, config.hidden_size, source, cls.__name__)
            found = (task_heads.head_arguments(task, shapes, head) if load_weights
                     else task_heads.described_arguments(task, head))
            given = kwargs.get("num_classes")
            if "num_classes" in found and given is not None and given != found["num_classes"]:
                raise CheckpointError(
                    f"{source}: num_classes={given} was given, but the checkpoint's {task} "
                    f"head has {found['num_classes']} classes"
                    f"{_labels(found.get('label_names'))}. Leave num_classes out to load that "
                    f"head, or give {cls.__name__} a new one on the checkpoint's encoder: "
                    f"{cls.__name__}(BertEncoder.from_preset(...), num_classes={given}).")
        args.update(found)
        args.update(kwargs)
        missing = [name for name in _required(cls) if name not in args]
        if missing:
            why = (f"the checkpoint holds no {task} head to take it from" if task
                   else "the preset does not record it")
            raise TypeError(f"{cls.__name__}.from_preset({self.name!r}) needs "
                            f"{' and '.join(missing)}: {why}.")
        return args


def _labels(names):
    return "" if not names else f" ({', '.join(map(str, names[:10]))})"


def _required(cls):
    """The constructor arguments of a task class that have no default (but its parts)."""
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return [name for name, parameter in inspect.signature(cls.__init__).parameters.items()
            if parameter.kind in kinds and parameter.default is inspect.Parameter.empty
            and name not in ("self", "encoder", "preprocessor")]


# -------------------------------------------------------------------- from_preset entries
def split_load_options(kwargs):
    """(the loading options in ``kwargs``, the other arguments)."""
    load = {k: v for k, v in kwargs.items() if k in LOAD_OPTIONS}
    return load, {k: v for k, v in kwargs.items() if k not in LOAD_OPTIONS}


def encoder_from_preset(cls, preset, load_weights=True, **kwargs):
    """``BertEncoder.from_preset``: `BertConfig` fields, loading options and the class's own
    constructor arguments; any other name is a `TypeError` raised before anything loads."""
    check_kwargs(f"{cls.__name__}.from_preset()", kwargs, {
        "BertConfig fields": _config_fields(),
        "loading options": LOAD_OPTIONS,
        f"{cls.__name__} arguments": keyword_parameters(cls.__init__, skip=("config",)),
    })
    load, kwargs = split_load_options(kwargs)
    loader = PresetLoader(preset, require_weights=load_weights, **load)
    return loader.load_encoder(cls, load_weights=load_weights, **kwargs)


def task_from_preset(cls, preset, load_weights=True, **kwargs):
    """``Task.from_preset``: the head's arguments, the preprocessor's, ``preprocessor`` (None
    for none), ``dtype``, `BertConfig` fields and loading options; any other name is a
    `TypeError` raised before anything loads."""
    check_task_kwargs(cls, {k: v for k, v in kwargs.items() if k != "preprocessor"})
    load, kwargs = split_load_options(kwargs)
    loader = PresetLoader(preset, require_weights=load_weights,
                          require_vocab="preprocessor" not in kwargs, **load)
    return loader.load_task(cls, load_weights=load_weights, **kwargs)


def text_preset(preset):
    """The loader the text layers' ``from_preset`` use: the vocabulary (``vocab_path``,
    `load_vocabulary`) and ``do_lower_case`` of the preset (a directory without weights will
    do; one without a vocabulary is a `CheckpointError` naming the file looked for)."""
    return PresetLoader(preset, require_weights=False, require_vocab=True)


# -------------------------------------------------------------------- task arguments
def head_arguments(task_cls):
    return keyword_parameters(task_cls.__init__, skip=("encoder", "preprocessor"))


def check_task_kwargs(cls, kwargs):
    """`TypeError` naming any argument a task's ``from_preset`` does not take."""
    check_kwargs(f"{cls.__name__}.from_preset()", kwargs, {
        f"{cls.__name__} arguments": head_arguments(cls) + ("compile",) + ENCODER_ARGUMENTS,
        f"{cls.preprocessor_cls.__name__} arguments": preprocessor_arguments(cls),
        "BertConfig fields": _config_fields(),
        "loading options": LOAD_OPTIONS,
    })


def assign_encoder_weights(encoder, weights, source, warn=True):
    """Assigns the canonical ``weights`` to ``encoder``. A checkpoint without a pooler (as
    transformers' ``BertForTokenClassification``, ``BertForQuestionAnswering`` and
    ``BertForMaskedLM`` save them) leaves the encoder's pooler as initialised: the encoder
    records that (``encoder.fresh_pooler``, so that ``save_to_preset`` leaves an untrained
    pooler out, see `keras_bert.presets.preset_saver.encoder_weights`) and, with ``warn``
    (the caller reads ``pooled_output``), one warning says so. Returns whether the pooler
    was left fresh."""
    fresh = not has_pooler(weights)
    if fresh:
        current = encoder.canonical_variables()
        weights = {**weights, **{name: current[name].numpy() for name in POOLER}}
    encoder.set_canonical_weights(weights, source=source)
    encoder.fresh_pooler = pooler_fingerprint(encoder) if fresh else None
    if fresh and warn:
        warnings.warn(
            f"{source}: the checkpoint has no pooler (bert/pooler/dense/*; transformers' "
            "BertForTokenClassification, BertForQuestionAnswering and BertForMaskedLM save "
            "none), so the encoder's pooler starts fresh: pooled_output means nothing until "
            "it is trained. sequence_output is the checkpoint's.", stacklevel=2)
    return fresh


def load_head_weights(model, weights, source):
    """Assigns the head weights ``weights`` holds (Google's names and layouts) to the task
    model's ``head_variables()`` (the saver's `head_weights` writes them); their shapes were
    checked before the model was built (`PresetLoader.task_arguments`). A checkpoint without
    them leaves the head fresh; one with part of it (a masked-LM head for `BertPretrainer`)
    too, for the rest, with a warning naming it. Returns the names assigned."""
    variables = model.head_variables()
    present = [name for name in variables if name in weights]
    if not present:
        return []
    arrays = {}
    for name in present:
        variable, transposed = variables[name]
        value = np.asarray(weights[name])
        value = value.T if transposed else value
        if tuple(value.shape) != tuple(variable.shape):
            raise CheckpointError(
                f"{source}: the checkpoint's {name} has shape {tuple(np.shape(weights[name]))}, "
                f"this {type(model).__name__}'s {tuple(variable.shape)} (transposed: "
                f"{transposed}).")
        arrays[name] = value
    missing = sorted(set(variables) - set(present))
    if missing:
        warnings.warn(f"{source}: the checkpoint has part of the head; {', '.join(missing)} "
                      "start fresh.", stacklevel=3)
    for name, value in arrays.items():
        variables[name][0].assign(value.astype(variables[name][0].dtype))
    return present
