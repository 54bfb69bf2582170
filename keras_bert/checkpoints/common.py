"""What every checkpoint converter shares: errors, the canonical names and shapes, vocab checks.

The canonical weights are a dict of numpy arrays keyed by the variable names of Google's
original TF1 BERT checkpoints, in Google's layouts (dense kernels ``[in, out]``):

* ``bert/embeddings/{word,position,token_type}_embeddings``, ``bert/embeddings/LayerNorm/{gamma,beta}``
* ``bert/encoder/layer_N/attention/self/{query,key,value}/{kernel,bias}``,
  ``.../attention/output/dense/{kernel,bias}``, ``.../attention/output/LayerNorm/{gamma,beta}``,
  ``.../intermediate/dense/{kernel,bias}``, ``.../output/dense/{kernel,bias}``,
  ``.../output/LayerNorm/{gamma,beta}``
* ``bert/pooler/dense/{kernel,bias}``: absent from checkpoints of models without a pooler
  (transformers' ``BertForTokenClassification``, ``BertForQuestionAnswering`` and
  ``BertForMaskedLM`` save none); the loader then leaves the encoder's pooler fresh
* pre-training heads, when a checkpoint has them: ``cls/predictions/transform/dense/{kernel,bias}``,
  ``cls/predictions/transform/LayerNorm/{gamma,beta}``, ``cls/predictions/output_bias``,
  ``cls/seq_relationship/output_weights`` ``[2, hidden]``, ``cls/seq_relationship/output_bias``.

Every converter maps its format to and from that dict, so any format converts to any other.
"""

import json
import os
import re

from keras_bert import storage
from keras_bert.config import BertConfigError
from keras_bert.vocab import load_vocabulary


class CheckpointError(ValueError):
    """A checkpoint that is missing, unreadable, or does not fit its configuration.

    >>> from keras_bert.checkpoints import CheckpointError
    >>> from keras_bert.checkpoints.common import read_json_object
    >>> try:
    ...     read_json_object("/no/such/bert_config.json", what="BERT config")
    ... except CheckpointError as error:
    ...     print(error)
    Cannot read the BERT config /no/such/bert_config.json: ...
    """


def read_json_object(path, what="JSON file"):
    """The JSON object in ``path``; `CheckpointError` naming the file when it is unreadable,
    not JSON, or not an object."""
    try:
        values = storage.read_json(path)
    except json.JSONDecodeError as e:
        raise CheckpointError(f"Cannot read the {what} {path}: not valid JSON ({e}).") from None
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise CheckpointError(f"Cannot read the {what} {path}: {e}") from None
    if not isinstance(values, dict):
        raise CheckpointError(
            f"The {what} {path}: expected a JSON object; it holds a JSON "
            f"{type(values).__name__}."
        )
    return values


def encoder_shapes(config):
    """The shape of every encoder variable (embeddings, blocks, pooler) for a `BertConfig`."""
    h, i = config.hidden_size, config.intermediate_size
    shapes = {
        "bert/embeddings/word_embeddings": (config.vocab_size, h),
        "bert/embeddings/position_embeddings": (config.max_position_embeddings, h),
        "bert/embeddings/token_type_embeddings": (config.type_vocab_size, h),
        "bert/embeddings/LayerNorm/gamma": (h,),
        "bert/embeddings/LayerNorm/beta": (h,),
    }
    for n in range(config.num_hidden_layers):
        p = f"bert/encoder/layer_{n}/"
        for name in ("attention/self/query", "attention/self/key", "attention/self/value",
                     "attention/output/dense"):
            shapes[f"{p}{name}/kernel"] = (h, h)
            shapes[f"{p}{name}/bias"] = (h,)
        shapes[f"{p}intermediate/dense/kernel"] = (h, i)
        shapes[f"{p}intermediate/dense/bias"] = (i,)
        shapes[f"{p}output/dense/kernel"] = (i, h)
        shapes[f"{p}output/dense/bias"] = (h,)
        for name in ("attention/output/LayerNorm", "output/LayerNorm"):
            shapes[f"{p}{name}/gamma"] = (h,)
            shapes[f"{p}{name}/beta"] = (h,)
    shapes["bert/pooler/dense/kernel"] = (h, h)
    shapes["bert/pooler/dense/bias"] = (h,)
    return shapes


POOLER = ("bert/pooler/dense/kernel", "bert/pooler/dense/bias")


def has_pooler(names):
    """Whether a checkpoint with these variable names has a pooler (any of its variables: one
    without the other is reported missing by `check_shapes`)."""
    names = set(names)
    return any(name in names for name in POOLER)


def head_shapes(config):
    """Shapes of the MLM and NSP pre-training head variables."""
    h = config.hidden_size
    return {
        "cls/predictions/transform/dense/kernel": (h, h),
        "cls/predictions/transform/dense/bias": (h,),
        "cls/predictions/transform/LayerNorm/gamma": (h,),
        "cls/predictions/transform/LayerNorm/beta": (h,),
        "cls/predictions/output_bias": (config.vocab_size,),
        "cls/seq_relationship/output_weights": (2, h),
        "cls/seq_relationship/output_bias": (2,),
    }


_LAYER_INDEX = re.compile(r"(?:layer|encoder)[_.](\d+)(?=[/.])")  # every format's block names


def _natural(name):
    """Sort key that puts ``layer_9`` before ``layer_10``."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def _listing(names, first=5):
    """The first few names and how many more."""
    names = sorted(names, key=_natural)
    more = f" and {len(names) - first} more" if len(names) > first else ""
    return ", ".join(names[:first]) + more


def _layer_hint(names, config):
    """`` (the checkpoint has N layers, the config says num_hidden_layers=M)`` when they differ."""
    indices = [int(m.group(1)) for m in map(_LAYER_INDEX.search, names) if m]
    layers = max(indices) + 1 if indices else 0
    if layers == config.num_hidden_layers:
        return ""
    return (f" (the checkpoint has {layers} layers, the config says "
            f"num_hidden_layers={config.num_hidden_layers})")


def check_shapes(shapes, config, source, unexplained=()):
    """Checks a ``{name: shape}`` map against ``config`` before any weight is read.

    The checkpoint must fit the config exactly. Every encoder variable must be there with its
    shape, but the pooler, which checkpoints of models without one leave out (both of its
    variables, or neither: see `has_pooler`); head variables (``cls/``) are optional but must
    have their shape when present. Every other variable inside the encoder namespace is an
    error: a ``bert/`` name the config has no place for (a config with fewer layers than the checkpoint), and ``unexplained``, the
    names (in the format's own spelling) that a reader found in the encoder's part of its file
    and could not place. Outside it, task heads and optimizer state are the readers' to skip.
    Errors name the variables, the shapes and ``source``.
    """
    expected = encoder_shapes(config)
    if not has_pooler(shapes):
        for name in POOLER:
            del expected[name]
    missing = set(expected) - set(shapes)
    if missing:
        raise CheckpointError(f"{source}: missing variable(s) {_listing(missing)}"
                              f"{_layer_hint(list(shapes) + list(unexplained), config)}.")
    unused = [n for n in shapes if n.startswith("bert/") and n not in expected]
    unused += list(unexplained)
    if unused:
        raise CheckpointError(
            f"{source}: {len(unused)} checkpoint variable(s) that the config has no place for: "
            f"{_listing(unused)}{_layer_hint(list(shapes) + unused, config)}."
        )
    expected.update(head_shapes(config))
    for name, want in expected.items():  # canonical order: the first bad layer is reported
        shape = shapes.get(name)
        if shape is not None and tuple(shape) != tuple(want):
            hint = ""
            if name in ("bert/embeddings/word_embeddings", "cls/predictions/output_bias") \
                    and tuple(shape)[1:] == tuple(want)[1:]:
                hint = (f" (the checkpoint has {shape[0]} vocabulary entries but the config "
                        f"says vocab_size={want[0]})")
            raise CheckpointError(
                f"{source}: variable {name} has shape {tuple(shape)} but the config expects "
                f"{tuple(want)}{hint}."
            )


def check_vocab(vocab_path, config, source=None, tokens=None, tokens_from=None):
    """Raises `CheckpointError` unless the vocabulary has exactly ``config.vocab_size``
    tokens: the file ``vocab_path`` (one token a line), or ``tokens`` read from the file
    ``tokens_from`` (a ``tokenizer.json``)."""
    if tokens is not None:
        n, vocab_path = len(tokens), tokens_from
    elif vocab_path is None:
        return
    elif not storage.isfile(vocab_path):
        raise CheckpointError(f"Vocabulary file not found: {vocab_path}")
    else:
        try:
            n = len(load_vocabulary(vocab_path))  # read as the tokenizer reads it, with its checks
        except ValueError as e:  # not UTF-8, a BOM, a token with spaces: named by file and line
            raise CheckpointError(str(e)) from None
    if n != config.vocab_size:
        raise CheckpointError(
            f"{source or vocab_path}: {vocab_path} has {n} tokens but the config says "
            f"vocab_size={config.vocab_size}; the vocabulary and the checkpoint do not belong "
            "together."
        )


def plain_vocabulary(path):
    """A format's ``vocabulary(directory)`` when it keeps a plain vocabulary file (one token
    a line) at ``path``: ``(path, None)``, or ``(None, None)`` when the file is not there."""
    return (path if storage.isfile(path) else None), None


def build_config(path, make):
    """``make()`` (a `BertConfig` read from ``path``); its errors become a `CheckpointError`
    that names ``path``."""
    try:
        return make()
    except BertConfigError as e:
        message = str(e)
        if not message.startswith(os.fspath(path)):
            message = f"{path}: {message}"
        raise CheckpointError(message) from None


def require_file(path, what, fix=""):
    """Raises `CheckpointError` naming ``path`` when it is not a file."""
    if not storage.isfile(path):
        raise CheckpointError(f"{what} not found: {path}.{(' ' + fix) if fix else ''}")
    return path
