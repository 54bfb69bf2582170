"""LoRA (low-rank adaptation, Hu et al. 2021) for `BertEncoder` and the task models.

``model.enable_lora(rank, target_layer_names=None)`` (keras-hub's ``Backbone.enable_lora``)
freezes every weight of the encoder (embeddings, LayerNorms, biases, kernels, pooler) and
gives the chosen projections of every transformer block trainable low-rank factors ``A``
[in, rank] and ``B`` [rank, out] (``B`` zero at first, so the model starts where it was):
the projection computes ``x @ W + (lora_alpha / rank) * (x @ A) @ B``. A task model's head
stays trainable. What trained is small: ``save_lora_weights(path)`` writes it (the factors,
and a task model's head) to one ``.lora.h5`` file, which ``load_lora_weights(path)`` puts
back onto a fresh ``from_preset`` model. ``merge_lora()`` folds the factors into the kernels
(one plain matmul per projection again) for serving; every export writes a merged copy
(`for_export`).

The projections LoRA can target (``TARGETS``), by the names of their `Dense` layers in
`TransformerBlock`: ``query``, ``key``, ``value``, ``attention_output`` (the attention's
projections) and ``intermediate``, ``output`` (the feed-forward's); keras-hub's names of the
same layers (``query_dense``, ``value_dense``, ...) are taken too. Default: ``query`` and
``value``, as the LoRA paper and keras-hub.

>>> from keras_bert import BertEncoder
>>> encoder = BertEncoder.from_preset("tiny_random")  # 1 block, hidden size 16
>>> encoder.enable_lora(rank=2)
>>> encoder.lora_config
{'rank': 2, 'lora_alpha': 2, 'target_layer_names': ['query', 'value']}
>>> sorted({v.name for v in encoder.trainable_weights})
['lora_kernel_a', 'lora_kernel_b']
>>> sum(int(np.prod(v.shape)) for v in encoder.trainable_weights)  # 1 block x 2 x (16x2 + 2x16)
128
"""

import gc
import io
import json
import numbers
import os
import warnings

import numpy as np

from keras_bert import storage

# get_config's key for the LoRA state of an encoder (`record`, `enable_again`).
CONFIG_KEY = "lora"

# The projections of a TransformerBlock LoRA can target: {name: the block's attribute}.
TARGETS = {
    "query": "query",
    "key": "key",
    "value": "value",
    "attention_output": "attention_output",
    "intermediate": "intermediate",
    "output": "output_dense",
}
DEFAULT_TARGETS = ("query", "value")
# keras-hub's names of the same layers (BertBackbone's attention and feed-forward).
KERAS_HUB_NAMES = {
    "query_dense": "query",
    "key_dense": "key",
    "value_dense": "value",
    "output_dense": "attention_output",
    "feedforward_intermediate_dense": "intermediate",
    "feedforward_output_dense": "output",
}

FILE_SUFFIX = ".lora.h5"  # keras-hub's: save_lora_weights refuses other names
FILE_FORMAT = "keras_bert.lora"
FILE_VERSION = 1
# BertConfig fields a LoRA file must agree on with the model it is loaded onto.
ARCHITECTURE = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                "intermediate_size", "max_position_embeddings", "type_vocab_size")


# ---------------------------------------------------------------- arguments
def check_rank(rank):
    """``rank`` as an int >= 1; ValueError naming it otherwise."""
    if isinstance(rank, (bool, np.bool_)) or not isinstance(rank, numbers.Integral) or rank < 1:
        raise ValueError(f"enable_lora: rank must be a positive int (the factors' inner "
                         f"dimension, e.g. 4 or 8), got {rank!r}.")
    return int(rank)


def check_alpha(lora_alpha, rank):
    """``lora_alpha`` (None: ``rank``, a scale of 1) as a positive number."""
    if lora_alpha is None:
        return rank
    if (isinstance(lora_alpha, (bool, np.bool_)) or not isinstance(lora_alpha, numbers.Real)
            or not np.isfinite(lora_alpha) or lora_alpha <= 0):
        raise ValueError(f"enable_lora: lora_alpha must be a positive number (the factors' "
                         f"product is scaled by lora_alpha / rank), got {lora_alpha!r}.")
    return lora_alpha


def check_targets(names):
    """The target names as a list of `TARGETS` keys (None: `DEFAULT_TARGETS`; keras-hub's
    names mapped; one string is one name); ValueError naming a bad one and the valid ones."""
    if names is None:
        return list(DEFAULT_TARGETS)
    if isinstance(names, str):
        names = [names]
    valid = ", ".join(TARGETS)
    if not isinstance(names, (list, tuple)) or not names:
        raise ValueError(f"enable_lora: target_layer_names must be a non-empty list of layer "
                         f"names ({valid}), got {names!r}.")
    out = []
    for name in names:
        if not isinstance(name, str):
            raise ValueError(f"enable_lora: target_layer_names holds {name!r}, not a layer "
                             f"name; valid names: {valid}.")
        target = KERAS_HUB_NAMES.get(name, name)
        if target not in TARGETS:
            raise ValueError(
                f"enable_lora: {name!r} is not a projection of the transformer blocks LoRA "
                f"can target; valid names: {valid} (or keras-hub's "
                f"{', '.join(KERAS_HUB_NAMES)}).")
        if target in out:
            raise ValueError(f"enable_lora: target_layer_names names {target!r} twice.")
        out.append(target)
    return out


# ---------------------------------------------------------------- the encoder's LoRA
def lora_layers(encoder):
    """``{"transformer_block_<i>/<target>": Dense}`` of the LoRA-enabled projections."""
    state = encoder.lora_config
    if state is None:
        return {}
    return {f"transformer_block_{i}/{name}": getattr(block, TARGETS[name])
            for i, block in enumerate(encoder.transformer_blocks)
            for name in state["target_layer_names"]}


def enable(encoder, rank, target_layer_names=None, lora_alpha=None):
    """Implements ``BertEncoder.enable_lora`` (see the module docstring); returns the state
    it records (``encoder.lora_config``)."""
    rank = check_rank(rank)
    targets = check_targets(target_layer_names)
    lora_alpha = check_alpha(lora_alpha, rank)
    if encoder.lora_config is not None:
        raise ValueError(f"{encoder.name}: LoRA is already enabled "
                         f"({_describe(encoder.lora_config)}); merge_lora() first to enable "
                         f"it again on the merged kernels.")
    quantized = [layer.path for layer in encoder._flatten_layers(include_self=False)
                 if layer.quantization_mode is not None]
    if quantized:
        raise ValueError(f"{encoder.name}: LoRA on a quantized encoder is not supported "
                         f"({len(quantized)} quantized layers, e.g. {quantized[0]}): enable "
                         "LoRA on the float model.")
    encoder.trainable = True
    for layer in encoder._flatten_layers(include_self=False):
        layer.trainable = False
    for block in encoder.transformer_blocks:
        for name in targets:
            dense = getattr(block, TARGETS[name])
            dense.trainable = True
            dense.enable_lora(rank, lora_alpha=lora_alpha)  # freezes the kernel
            if dense.bias is not None:
                dense.bias.trainable = False
    return {"rank": rank, "lora_alpha": lora_alpha, "target_layer_names": targets}


def merge(encoder):
    """Implements ``BertEncoder.merge_lora``: every LoRA projection's factors folded into its
    kernel and removed; the encoder stays frozen. One ``gc.collect()`` at the end returns the
    factors' memory (`keras_bert.layers.Dense` drops them without a heap scan each)."""
    if encoder.lora_config is None:
        raise ValueError(f"{encoder.name}: LoRA is not enabled, there is nothing to merge.")
    for dense in lora_layers(encoder).values():
        dense.merge_lora()
        dense.trainable = False
    gc.collect()


def merged_kernels(encoder):
    """``{id(kernel variable): merged kernel (numpy)}`` of the LoRA projections."""
    return {id(dense._kernel): np.asarray(dense.merged_kernel())
            for dense in lora_layers(encoder).values()}


def reset_functions(model):
    """Drops the traced train/test/predict functions: the trainable set has changed."""
    model.train_function = model.test_function = model.predict_function = None


def record(model, config):
    """``config`` (an encoder's `get_config`) with its LoRA state, if any."""
    state = getattr(model, "lora_config", None)
    return {**config, CONFIG_KEY: state} if state else config


def enable_again(model, state):
    """Enables LoRA as ``state`` (what `record` put in the config; None: nothing) says."""
    if state:
        model.enable_lora(state["rank"], state["target_layer_names"],
                          lora_alpha=state["lora_alpha"])
    return model


def _describe(state):
    return (f"rank {state['rank']}, lora_alpha {state['lora_alpha']}, on "
            f"{', '.join(state['target_layer_names'])}")


# ---------------------------------------------------------------- what exports write
def _encoder_of(model):
    """The encoder of ``model`` (a `BertEncoder` or a task model)."""
    return model if hasattr(model, "transformer_blocks") else model.encoder


def for_export(model):
    """What every export writes of ``model`` (`Task.export` for Keras' own formats, and each
    writer of `keras_bert.export`): ``model`` itself, or, with LoRA enabled, a copy (encoder
    or task model; the same preprocessor object) with the factors merged into its kernels
    and every weight trainable, as a model fresh from ``from_preset``: the same outputs from
    plain projections. ``model`` itself keeps its factors. Any other object is returned as
    it is, for the writer to refuse."""
    encoder = model if hasattr(model, "transformer_blocks") else getattr(model, "encoder", None)
    if getattr(encoder, "lora_config", None) is None:
        return model
    if encoder is model:
        copy = type(model).from_config(model.get_config())
        copy.vocabulary, copy._vocab_source = model.vocabulary, model._vocab_source
    else:
        config = model.get_config()
        config["preprocessor"] = model.preprocessor  # its vocabulary is no part of the config
        copy = type(model).from_config({**config, "compile": False})
        copy.encoder.vocabulary, copy.encoder._vocab_source = (encoder.vocabulary,
                                                               encoder._vocab_source)
    copy.set_weights(model.get_weights())
    copy.merge_lora()
    for layer in copy._flatten_layers():  # (Keras' model.trainable = True stops at the model)
        layer.trainable = True
    return copy


# ---------------------------------------------------------------- the LoRA-only file
def _head_weights(model):
    """``{path: variable}`` of a task model's weights outside its encoder (the head); {} for
    an encoder."""
    encoder = _encoder_of(model)
    if encoder is model:
        return {}
    inside = {id(v) for v in encoder.weights}
    return {v.path: v for v in model.weights if id(v) not in inside}


def _factors(model):
    """``{"<layer>/lora_kernel_a" ...: variable}`` of the LoRA projections."""
    out = {}
    for path, dense in lora_layers(_encoder_of(model)).items():
        out[f"{path}/lora_kernel_a"] = dense.lora_kernel_a
        out[f"{path}/lora_kernel_b"] = dense.lora_kernel_b
    return out


def _file_header(model):
    encoder = _encoder_of(model)
    config = encoder.bert_config.to_dict()
    return {"format": FILE_FORMAT, "format_version": FILE_VERSION,
            "model_class": type(model).__name__, "lora": encoder.lora_config,
            "architecture": {k: config[k] for k in ARCHITECTURE},
            "preset_name": encoder.preset_name}


def save(model, filepath):
    """Implements ``save_lora_weights``: the factors and (task models) the head's weights,
    with what they belong to, in one HDF5 file written atomically through
    `keras_bert.storage` (local, ``gs://``, ``ram://``). Returns ``filepath``."""
    import h5py

    encoder = _encoder_of(model)
    if encoder.lora_config is None:
        raise ValueError(f"{model.name}: LoRA is not enabled, so there are no LoRA weights to "
                         "save: call enable_lora(rank) first (save_weights or save writes a "
                         "whole model).")
    filepath = os.fspath(filepath)
    if not filepath.endswith(FILE_SUFFIX):
        raise ValueError(f"save_lora_weights: the file name must end in {FILE_SUFFIX!r} "
                         f"(keras-hub's convention), got {filepath!r}.")
    buffer = io.BytesIO()
    with h5py.File(buffer, "w") as f:
        f.attrs["keras_bert_lora"] = json.dumps(_file_header(model), sort_keys=True)
        for group, weights in (("lora", _factors(model)), ("head", _head_weights(model))):
            for path, variable in weights.items():
                f[f"{group}/{path}"] = np.asarray(variable.numpy())
    return storage.write_bytes(filepath, buffer.getvalue())


def _read(filepath):
    """(header, {"lora/...": array, "head/...": array}) of a LoRA file."""
    import h5py

    data = storage.read_bytes(filepath)
    try:
        f = h5py.File(io.BytesIO(data), "r")
    except OSError as error:
        raise ValueError(f"{filepath} is not a LoRA weights file (not HDF5: {error}).") from None
    with f:
        if "keras_bert_lora" not in f.attrs:
            raise ValueError(f"{filepath} is not a keras_bert LoRA weights file (no "
                             "keras_bert_lora header; save_lora_weights writes one).")
        header = json.loads(f.attrs["keras_bert_lora"])
        arrays = {}
        f.visititems(lambda name, item: arrays.__setitem__(name, item[()])
                     if isinstance(item, h5py.Dataset) else None)
    if header.get("format") != FILE_FORMAT or header.get("format_version") != FILE_VERSION:
        raise ValueError(f"{filepath}: format {header.get('format')!r} version "
                         f"{header.get('format_version')!r}; this keras_bert reads "
                         f"{FILE_FORMAT!r} version {FILE_VERSION}.")
    return header, arrays


def load(model, filepath):
    """Implements ``load_lora_weights``: checks that the file belongs to this model (class,
    architecture, LoRA rank/alpha/targets, head shapes) and names what differs before
    anything changes; enables LoRA as the file says if the model has none; assigns. An
    encoder's file on a task model loads into its encoder (the head stays as it is)."""
    filepath = os.fspath(filepath)
    header, arrays = _read(filepath)
    encoder = _encoder_of(model)
    where = f"load_lora_weights({filepath!r})"
    # The file's owner: this model, or (an encoder's file on a task model) its encoder, whose
    # factors load while the head stays as it is.
    owner = model
    if header["model_class"] != type(model).__name__:
        if model is encoder or header["model_class"] != type(encoder).__name__:
            raise ValueError(f"{where}: the file holds the LoRA weights of a "
                             f"{header['model_class']}, this model is a "
                             f"{type(model).__name__}.")
        owner = encoder
    config = encoder.bert_config.to_dict()
    differ = [f"{k} {header['architecture'][k]} in the file, {config[k]} here"
              for k in ARCHITECTURE if header["architecture"].get(k) != config[k]]
    if differ:
        raise ValueError(f"{where}: the file belongs to another architecture: "
                         f"{'; '.join(differ)}.")
    state, current = header["lora"], encoder.lora_config
    if current is not None and current != state:
        differ = [f"{k} {state[k]!r} in the file, {current[k]!r} here" for k in state
                  if state[k] != current.get(k)]
        raise ValueError(f"{where}: the file's LoRA differs from this model's: "
                         f"{'; '.join(differ)}. Enable LoRA as the file says "
                         f"(enable_lora({state['rank']}, {state['target_layer_names']!r}, "
                         f"lora_alpha={state['lora_alpha']!r})) or on a fresh model.")
    head = _head_weights(owner)
    _check_arrays(where, "head", {f"head/{p}": v for p, v in head.items()}, arrays, "head/")
    if header.get("preset_name") and encoder.preset_name and (
            header["preset_name"] != encoder.preset_name):
        warnings.warn(f"{where}: the LoRA weights were trained on preset "
                      f"{header['preset_name']!r}, this model was loaded from "
                      f"{encoder.preset_name!r}.", stacklevel=3)
    if current is None:  # (a task model's enable_lora also compiles for LoRA)
        model.enable_lora(state["rank"], state["target_layer_names"],
                          lora_alpha=state["lora_alpha"])
    factors = {f"lora/{p}": v for p, v in _factors(model).items()}
    _check_arrays(where, "LoRA factor", factors, arrays, "lora/")
    for name, variable in {**factors, **{f"head/{p}": v for p, v in head.items()}}.items():
        variable.assign(arrays[name])


def _check_arrays(where, what, variables, arrays, prefix):
    """ValueError naming the ``what`` entries missing from, extra in, or shaped otherwise in
    the file than ``variables`` ({key: variable})."""
    saved = {k for k in arrays if k.startswith(prefix)}
    missing, extra = sorted(set(variables) - saved), sorted(saved - set(variables))
    shapes = [f"{k[len(prefix):]} {tuple(arrays[k].shape)} in the file, "
              f"{tuple(variables[k].shape)} here" for k in sorted(saved & set(variables))
              if tuple(arrays[k].shape) != tuple(variables[k].shape)]
    problems = []
    if missing:
        problems.append(f"missing from the file: {', '.join(m[len(prefix):] for m in missing)}")
    if extra:
        problems.append(f"in the file but not in this model: "
                        f"{', '.join(e[len(prefix):] for e in extra)}")
    if shapes:
        problems.append(f"shapes differ: {'; '.join(shapes)}")
    if problems:
        raise ValueError(f"{where}: the {what} weights do not match: {'. '.join(problems)}.")
