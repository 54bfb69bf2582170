"""`from_preset` and `save_to_preset` of the task models.

A task preset is keras_bert's layout (a Google checkpoint directory plus ``keras_bert.json``)
whose checkpoint also holds the head, under Google's names where Google has them
(``cls/predictions/*``, ``cls/seq_relationship/*``, ``cls/squad/*``, and run_classifier's
``output_weights`` / ``output_bias``), and whose metadata records the task (class and head
arguments) and the preprocessor's arguments, so ``BertClassifier.from_preset(saved_dir)``
rebuilds the same model without being told ``num_classes`` again.
"""

import warnings

import numpy as np

from keras_bert.config import BertConfig
from keras_bert.layers.arguments import check_kwargs, keyword_parameters
from keras_bert.models.encoder import BertEncoder
from keras_bert.models.preset_mixin import vocabulary_file
from keras_bert.presets import load_preset
from keras_bert.text.tokenizer import BertTokenizer

LOAD_OPTIONS = ("url", "sha256", "do_lower_case", "progress")
ENCODER_ARGUMENTS = ("dtype",)
TASK_KEY = "task"
PREPROCESSOR_KEY = "preprocessor"


def _preprocessor_arguments(cls):
    pre = cls.preprocessor_cls
    names = set(keyword_parameters(pre.__init__, skip=("tokenizer", "do_lower_case")))
    for base in pre.__mro__[1:]:
        if base.__module__.startswith("keras_bert.") and "__init__" in vars(base):
            names |= set(keyword_parameters(base.__init__, skip=("tokenizer", "do_lower_case")))
    return tuple(sorted(names - {"name", "dtype", "trainable", "autocast"}))


def _head_arguments(cls):
    return keyword_parameters(cls.__init__, skip=("encoder", "preprocessor"))


def build_from_preset(cls, preset, load_weights=True, **kwargs):
    """Implements ``Task.from_preset`` for ``cls`` (see its docstring)."""
    kwargs = dict(kwargs)
    preprocessor_given = "preprocessor" in kwargs
    preprocessor = kwargs.pop("preprocessor", None)
    pre_names = _preprocessor_arguments(cls)
    fields = tuple(BertConfig().to_dict())
    check_kwargs(f"{cls.__name__}.from_preset()", kwargs, {
        f"{cls.__name__} arguments": _head_arguments(cls) + ENCODER_ARGUMENTS,
        f"{cls.preprocessor_cls.__name__} arguments": pre_names,
        "BertConfig fields": fields,
        "loading options": LOAD_OPTIONS,
    })
    load = {k: kwargs.pop(k) for k in LOAD_OPTIONS if k in kwargs}
    overrides = {k: kwargs.pop(k) for k in fields if k in kwargs}
    pre_args = {k: kwargs.pop(k) for k in pre_names if k in kwargs}
    encoder_args = {k: kwargs.pop(k) for k in ENCODER_ARGUMENTS if k in kwargs}

    resolved = load_preset(preset, require_weights=load_weights,
                           require_vocab=not preprocessor_given, **load)
    metadata = getattr(resolved.checkpoint, "metadata", None) or {}
    saved_task = metadata.get(TASK_KEY) or {}
    head_args = {}
    if saved_task.get("class_name") == cls.__name__:
        head_args.update(saved_task.get("config") or {})
    head_args.update(kwargs)

    config = resolved.config.replace(**overrides) if overrides else resolved.config
    encoder = BertEncoder(config, **encoder_args)
    weights = None
    if load_weights:
        weights = resolved.weights(config)
        encoder.set_canonical_weights(weights, source=resolved.path)
    if not preprocessor_given:
        saved_pre = {k: v for k, v in (metadata.get(PREPROCESSOR_KEY) or {}).items()
                     if k in pre_names}
        tokenizer = BertTokenizer(resolved.vocab_path, do_lower_case=resolved.do_lower_case)
        preprocessor = cls.preprocessor_cls(
            tokenizer, **{**cls.preprocessor_defaults, **saved_pre, **pre_args})
    model = cls(encoder, preprocessor=preprocessor, **head_args)
    if weights is not None:
        load_head_weights(model, weights, source=resolved.path)
    return model


def load_head_weights(model, weights, source):
    """Assigns the head weights ``weights`` holds (Google's names and layouts). A checkpoint
    without them leaves the head fresh; one whose head has other shapes (another
    ``num_classes``) too, with a warning that names both shapes."""
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
            stored = tuple(np.shape(weights[name]))
            want = tuple(variable.shape[::-1] if transposed else variable.shape)
            warnings.warn(
                f"{source}: the checkpoint's {name} has shape {stored}, this "
                f"{type(model).__name__}'s needs {want}; its head starts fresh.", stacklevel=3)
            return []
        arrays[name] = value
    missing = sorted(set(variables) - set(present))
    if missing:
        warnings.warn(f"{source}: the checkpoint has part of the head; {', '.join(missing)} "
                      "start fresh.", stacklevel=3)
    for name, value in arrays.items():
        variables[name][0].assign(value.astype(variables[name][0].dtype))
    return present


def head_weights(model):
    """The head's weights in Google's names and layouts (numpy)."""
    out = {}
    for name, (variable, transposed) in model.head_variables().items():
        value = np.asarray(variable.numpy(), dtype=np.float32)
        out[name] = value.T if transposed else value
    return out


def save_task_to_preset(model, directory):
    """Implements ``Task.save_to_preset``: encoder and head weights, config, vocabulary,
    casing, and the task's and preprocessor's arguments in ``keras_bert.json``."""
    from keras_bert.checkpoints import layout

    weights = model.encoder.get_canonical_weights()
    weights.update(head_weights(model))
    extra = {TASK_KEY: {"class_name": type(model).__name__, "config": model.head_config()}}
    tokenizer = getattr(model.preprocessor, "tokenizer", None)
    if model.preprocessor is not None:
        pre_config = model.preprocessor.get_config()
        extra[PREPROCESSOR_KEY] = {k: pre_config[k] for k in _preprocessor_arguments(type(model))
                                   if k in pre_config}
    # The preprocessor's vocabulary and casing; without a preprocessor, the encoder's (what
    # its from_preset recorded), if any.
    if tokenizer is not None:
        tokens, do_lower_case = tokenizer.get_vocabulary(), tokenizer.do_lower_case
    else:
        tokens, do_lower_case = model.encoder.vocabulary, model.encoder.do_lower_case
    with vocabulary_file(tokens, beside=directory) as vocab_path:
        layout.write(directory, model.encoder.bert_config, weights, vocab_path=vocab_path,
                     do_lower_case=do_lower_case, name=model.name,
                     source=type(model).__name__, extra=extra)
    return directory
