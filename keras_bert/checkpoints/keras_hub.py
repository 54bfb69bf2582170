"""keras-hub BERT presets saved locally (directories written by ``save_to_preset``).

Such a directory holds keras-hub's ``config.json`` (``BertBackbone``), ``model.weights.h5``,
``metadata.json`` and, for the tokenizer, ``tokenizer.json`` and
``assets/tokenizer/vocabulary.txt``. The backbone is rebuilt with keras-hub itself (imported
only here) and its variables are mapped to the canonical Google names. keras-hub's BERT
computes the tanh approximation of GELU with LayerNorm epsilon 1e-12, so the config says so.

A task preset adds ``task.json`` and ``task.weights.h5``. A ``BertTextClassifier``'s head (its
one dense layer over the pooled output, kernel ``[hidden, num_classes]``) is read as Google's
``output_weights`` (transposed) and ``output_bias``, with its ``num_classes``, ``dropout`` and
``activation`` (`read_head`). keras-hub's ``BertMaskedLM`` head is not read: it computes the
exact GELU with LayerNorm epsilon 1e-5 over an encoder of the tanh form, which keras_bert's
masked-LM head (the original's) does not.
"""

import os
import re

import numpy as np

from keras_bert import storage
from keras_bert.checkpoints import casing, task_heads
from keras_bert.checkpoints.common import (
    CheckpointError, build_config, check_shapes, encoder_shapes, plain_vocabulary,
    read_json_object,
)
from keras_bert.config import BertConfig

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.weights.h5"
TOKENIZER_FILE = "tokenizer.json"
TASK_FILE = "task.json"
TASK_WEIGHTS_FILE = "task.weights.h5"
# Where Keras stores a BertTextClassifier's dense head in task.weights.h5 (kernel, bias).
_CLASSIFIER = ("layers/dense/vars/0", "layers/dense/vars/1")
VOCAB_FILE = os.path.join("assets", "tokenizer", "vocabulary.txt")
# Every file this format reads, keras-hub's loader among the readers (see
# `keras_bert.checkpoints.formats.check_links`).
FILES = ("*.json", "*.h5", os.path.join("assets", "*", "*"))


def is_keras_hub_preset(directory):
    path = os.path.join(directory, CONFIG_FILE)
    if not storage.isfile(path):
        return False
    try:
        values = storage.read_json(path)
    except (OSError, ValueError):
        return False
    return isinstance(values, dict) and "class_name" in values and "module" in values


_REQUIRED = ("vocabulary_size", "hidden_dim", "num_layers", "num_heads", "intermediate_dim")


def _backbone_config(path):
    """The ``config`` object of a keras-hub ``BertBackbone``'s ``config.json``."""
    values = read_json_object(path, "keras-hub config")
    if values.get("class_name") != "BertBackbone":
        raise CheckpointError(
            f"{path}: a keras-hub {values.get('class_name')!r} preset, not a BertBackbone."
        )
    config = values.get("config")
    if not isinstance(config, dict):
        raise CheckpointError(f'{path}: no "config" object; not a keras-hub preset file.')
    missing = [k for k in _REQUIRED if k not in config]
    if missing:
        raise CheckpointError(f"{path}: the BertBackbone config lacks {', '.join(missing)}.")
    return config


def read_config(directory):
    path = os.path.join(directory, CONFIG_FILE)
    c = _backbone_config(path)
    return build_config(path, lambda: BertConfig(
        vocab_size=c["vocabulary_size"],
        hidden_size=c["hidden_dim"],
        num_hidden_layers=c["num_layers"],
        num_attention_heads=c["num_heads"],
        intermediate_size=c["intermediate_dim"],
        hidden_act="gelu_tanh",  # keras-hub BertBackbone uses gelu_approximate
        hidden_dropout_prob=c.get("dropout", 0.1),
        attention_probs_dropout_prob=c.get("dropout", 0.1),
        max_position_embeddings=c.get("max_sequence_length", 512),
        type_vocab_size=c.get("num_segments", 2),
        layer_norm_eps=1e-12,
    ))


def recorded_casing(directory):
    """``[(what, do_lower_case)]`` from ``tokenizer.json``'s ``lowercase``; ``[]`` when it
    does not say."""
    path = os.path.join(directory, TOKENIZER_FILE)
    if not storage.isfile(path):
        return []
    config = read_json_object(path, "keras-hub tokenizer config").get("config")
    if not isinstance(config, dict):
        raise CheckpointError(f"{path}: no \"config\" object; not a keras-hub tokenizer file.")
    source = casing.recorded(path, "lowercase", config.get("lowercase"))
    return [] if source is None else [source]


_BLOCK = {
    "self_attention_layer/attention_output/kernel": "attention/output/dense/kernel",
    "self_attention_layer/attention_output/bias": "attention/output/dense/bias",
    "self_attention_layer_norm/gamma": "attention/output/LayerNorm/gamma",
    "self_attention_layer_norm/beta": "attention/output/LayerNorm/beta",
    "feedforward_intermediate_dense/kernel": "intermediate/dense/kernel",
    "feedforward_intermediate_dense/bias": "intermediate/dense/bias",
    "feedforward_output_dense/kernel": "output/dense/kernel",
    "feedforward_output_dense/bias": "output/dense/bias",
    "feedforward_layer_norm/gamma": "output/LayerNorm/gamma",
    "feedforward_layer_norm/beta": "output/LayerNorm/beta",
}
for _qkv in ("query", "key", "value"):
    _BLOCK[f"self_attention_layer/{_qkv}/kernel"] = f"attention/self/{_qkv}/kernel"
    _BLOCK[f"self_attention_layer/{_qkv}/bias"] = f"attention/self/{_qkv}/bias"

_TOP = {
    "token_embedding/embeddings": "bert/embeddings/word_embeddings",
    "position_embedding/embeddings": "bert/embeddings/position_embeddings",
    "segment_embedding/embeddings": "bert/embeddings/token_type_embeddings",
    "embeddings_layer_norm/gamma": "bert/embeddings/LayerNorm/gamma",
    "embeddings_layer_norm/beta": "bert/embeddings/LayerNorm/beta",
    "pooled_dense/kernel": "bert/pooler/dense/kernel",
    "pooled_dense/bias": "bert/pooler/dense/bias",
}


def canonical_name(path):
    """The Google name of a keras-hub ``BertBackbone`` variable path, or None."""
    if path in _TOP:
        return _TOP[path]
    head, _, rest = path.partition("/")
    if head.startswith("transformer_layer_") and rest in _BLOCK:
        return f"bert/encoder/layer_{int(head[len('transformer_layer_'):])}/{_BLOCK[rest]}"
    return None


def backbone_to_canonical(backbone):
    """Canonical weights of a built ``keras_hub.models.BertBackbone``.

    Multi-head attention kernels ``[H, heads, head_size]`` / ``[heads, head_size, H]`` and
    biases ``[heads, head_size]`` are flattened to Google's ``[H, H]`` and ``[H]``.
    """
    h = backbone.hidden_dim
    weights = {}
    for var in backbone.weights:
        name = canonical_name(var.path)
        if name is None:
            continue
        value = np.asarray(var.numpy(), dtype=np.float32)
        if "/attention/" in name and name.endswith("/kernel"):
            value = value.reshape(h, h)
        elif "/attention/self/" in name and name.endswith("/bias"):
            value = value.reshape(h)
        weights[name] = value
    return weights


def read_weights(directory, config):
    """Rebuilds the keras-hub backbone from ``directory`` and returns canonical weights."""
    try:
        import keras_hub
    except ImportError:
        raise CheckpointError(
            f"{directory} is a keras-hub preset and reading it needs keras-hub, which is not "
            "installed: pip install 'keras-bert-zoo[keras_hub]' (keras-hub==0.32.0)."
        ) from None

    weights_path = os.path.join(directory, WEIGHTS_FILE)
    if not storage.isfile(weights_path):
        raise CheckpointError(f"keras-hub weights file not found: {weights_path}.")
    try:
        backbone = keras_hub.models.BertBackbone.from_preset(directory)
    except Exception as e:
        raise CheckpointError(
            f"Cannot load the keras-hub preset {directory} ({weights_path}): "
            f"{type(e).__name__}: {e}"
        ) from None
    weights = backbone_to_canonical(backbone)
    unexplained = [v.path for v in backbone.weights if canonical_name(v.path) is None]
    unexplained += _stored_blocks_beyond(weights_path, config.num_hidden_layers)
    check_shapes({k: v.shape for k, v in weights.items()}, config, weights_path, unexplained)
    weights.update(_classifier_weights(directory))
    return weights


_STORED_BLOCK = re.compile(r"(?:^|/)transformer_encoder(?:_(\d+))?/")
# How Keras stores a BertBackbone in model.weights.h5: each layer under a name made from its
# class (the backbone's only Dense is the pooler, its only Embedding the segment table),
# its variables as vars/0 (kernel, gamma, embeddings) and vars/1 (bias, beta).
_STORED_TOP = {
    "layers/reversible_embedding/vars/0": "bert/embeddings/word_embeddings",
    "layers/position_embedding/vars/0": "bert/embeddings/position_embeddings",
    "layers/embedding/vars/0": "bert/embeddings/token_type_embeddings",
    "layers/layer_normalization/vars/0": "bert/embeddings/LayerNorm/gamma",
    "layers/layer_normalization/vars/1": "bert/embeddings/LayerNorm/beta",
    "layers/dense/vars/0": "bert/pooler/dense/kernel",
    "layers/dense/vars/1": "bert/pooler/dense/bias",
}
_STORED_IN_BLOCK = {
    "_self_attention_layer/output_dense": "attention/output/dense",
    "_self_attention_layer_norm": "attention/output/LayerNorm",
    "_feedforward_intermediate_dense": "intermediate/dense",
    "_feedforward_output_dense": "output/dense",
    "_feedforward_layer_norm": "output/LayerNorm",
}
for _qkv in ("query", "key", "value"):
    _STORED_IN_BLOCK[f"_self_attention_layer/{_qkv}_dense"] = f"attention/self/{_qkv}"
_STORED_VARIABLE = re.compile(r"^layers/transformer_encoder(?:_(\d+))?/(.+)/vars/([01])$")


def _stored_name(name):
    """The canonical name of a ``model.weights.h5`` dataset of a BertBackbone, or None."""
    if name in _STORED_TOP:
        return _STORED_TOP[name]
    match = _STORED_VARIABLE.match(name)
    if not match or match.group(2) not in _STORED_IN_BLOCK:
        return None
    layer = _STORED_IN_BLOCK[match.group(2)]
    kind = ("gamma", "beta") if layer.endswith("LayerNorm") else ("kernel", "bias")
    return f"bert/encoder/layer_{int(match.group(1) or 0)}/{layer}/{kind[int(match.group(3))]}"


def _flat(name, shape):
    """keras-hub's multi-head layouts ([H, heads, size], [heads, size, H], [heads, size]) as
    Google's ([H, H], [H])."""
    if "/attention/self/" in name:
        return (shape[0], shape[1] * shape[2]) if name.endswith("/kernel") else (
            shape[0] * shape[1],)
    if "/attention/output/dense/kernel" in name:
        return (shape[0] * shape[1], shape[2])
    return shape


def list_variables(directory, config):
    """``(shapes, unexplained, source)`` of ``model.weights.h5`` from its datasets' names and
    shapes (no tensor is read, no model built): Google's names and layouts, and the datasets
    that are no BertBackbone variable or lie in blocks beyond ``config``'s. A file laid out
    otherwise (another Keras, keras-hub's older presets) gives the shapes keras-hub builds
    from its ``config.json`` instead (keras-hub itself checks the file against them when it
    loads it)."""
    weights_path = os.path.join(directory, WEIGHTS_FILE)
    if not storage.isfile(weights_path):
        raise CheckpointError(f"keras-hub weights file not found: {weights_path}.")
    stored = _stored_shapes(weights_path)
    head = {name: tuple(np.shape(value)) for name, value in
            _classifier_weights(directory, shapes_only=True).items()}
    if "layers/reversible_embedding/vars/0" not in stored:
        return {**encoder_shapes(read_config(directory)), **head}, [], weights_path
    shapes, unexplained = {}, []
    for name, shape in stored.items():
        canonical = _stored_name(name)
        match = _STORED_BLOCK.search(name)
        if canonical is None or (match and int(match.group(1) or 0) >= config.num_hidden_layers):
            unexplained.append(name)
        else:
            shapes[canonical] = _flat(canonical, shape)
    return {**shapes, **head}, unexplained, weights_path


def _task(directory):
    """``(class name, config)`` of the directory's ``task.json``, or ``(None, {})``."""
    path = os.path.join(directory, TASK_FILE)
    if not storage.isfile(path):
        return None, {}
    values = read_json_object(path, "keras-hub task config")
    config = values.get("config")
    return values.get("class_name"), config if isinstance(config, dict) else {}


def _classifier_weights(directory, shapes_only=False):
    """A ``BertTextClassifier``'s head from ``task.weights.h5`` as Google's ``output_weights``
    ``[num_classes, hidden]`` and ``output_bias`` (``{}`` for other tasks); with
    ``shapes_only``, arrays of the right shapes stand in for the values (nothing is read)."""
    if _task(directory)[0] != "BertTextClassifier":
        return {}
    import h5py

    path = os.path.join(directory, TASK_WEIGHTS_FILE)
    if not storage.isfile(path):
        raise CheckpointError(f"keras-hub task weights file not found: {path} (task.json "
                              "names a BertTextClassifier).")
    try:
        with storage.open(path, "rb") as stream, h5py.File(stream, "r") as f:
            if not all(name in f for name in _CLASSIFIER):
                raise CheckpointError(f"{path}: no {' or '.join(_CLASSIFIER)}; not a "
                                      "BertTextClassifier's weights.")
            kernel, bias = (np.empty(f[name].shape, np.float32) if shapes_only
                            else np.asarray(f[name], np.float32) for name in _CLASSIFIER)
    except OSError as e:
        raise CheckpointError(f"Cannot read the keras-hub task weights file {path}: {e}") from None
    return {"output_weights": kernel.T, "output_bias": bias}


def read_head(directory, metadata):
    """The `TaskHead` of a ``BertTextClassifier`` preset (``task.json``), else None."""
    name, config = _task(directory)
    if name != "BertTextClassifier":
        return None
    count = config.get("num_classes")
    activation = config.get("activation")
    return task_heads.TaskHead(
        task_heads.SEQUENCE_CLASSIFICATION, f"{os.path.join(directory, TASK_FILE)} ({name})",
        num_labels=count, dropout=config.get("dropout"),
        problem_type=task_heads.REGRESSION if count == 1 else task_heads.SINGLE_LABEL,
        activation=None if activation in (None, "linear") else activation)


def _stored_shapes(weights_path):
    """``{dataset name: shape}`` of ``model.weights.h5`` (shapes only: no data is read)."""
    import h5py

    shapes = {}
    try:
        with storage.open(weights_path, "rb") as stream, h5py.File(stream, "r") as f:
            f.visititems(lambda name, obj: shapes.__setitem__(name, tuple(obj.shape))
                         if isinstance(obj, h5py.Dataset) else None)
    except OSError as e:
        raise CheckpointError(f"Cannot read the keras-hub weights file {weights_path}: {e}") from None
    return shapes


def _stored_blocks_beyond(weights_path, num_layers):
    """Variables of ``model.weights.h5`` in transformer blocks ``num_layers`` and above.

    keras-hub rebuilds the backbone from ``config.json`` and loads only the blocks it has,
    silently, so the file's own blocks are counted here. Keras stores block ``n`` (in build
    order) under ``layers/transformer_encoder_<n>/`` (``transformer_encoder`` for 0).
    """
    beyond = []
    for name in _stored_shapes(weights_path):
        match = _STORED_BLOCK.search(name)
        if match and int(match.group(1) or 0) >= num_layers:
            beyond.append(name)
    return beyond


# ---- the format interface (`keras_bert.checkpoints.formats.FORMATS`) ----------------------
detect = is_keras_hub_preset


def read_metadata(directory):
    return {}


def check_files(directory, metadata):
    """keras-hub's layout records nothing to check its files against."""


def vocab_file(directory):
    return os.path.join(directory, VOCAB_FILE)


def vocabulary(directory):
    """``(assets/tokenizer/vocabulary.txt, None)``, or ``(None, None)`` when there is none."""
    return plain_vocabulary(vocab_file(directory))


def check_weights(directory):
    """Weights are read (and their absence reported) by `read_weights`."""
