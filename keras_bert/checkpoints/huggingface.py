"""Hugging Face BERT checkpoints: ``config.json`` + ``model.safetensors`` (+ ``vocab.txt``
or ``tokenizer.json``).

Safetensors are read with ``safetensors.numpy``, so torch is not needed. A
``pytorch_model.bin`` is read only when torch is installed, with ``weights_only=True``. What
transformers' TensorFlow classes wrote (``tf_model.h5``, or safetensors of their names) is
read too (`keras_bert.checkpoints.huggingface_tf`).
Both ``BertModel`` names (``embeddings.word_embeddings.weight``) and ``BertForPreTraining``
names (``bert.embeddings...`` plus ``cls.predictions.*`` and ``cls.seq_relationship.*``) are
understood, and so are the old LayerNorm names ``gamma``/``beta``; the task heads of the
``BertFor*`` classes (``classifier.*``, ``qa_outputs.*``) are read under Google's names and
``config.json`` says which task they belong to (`keras_bert.checkpoints.huggingface_heads`). Dense weights are stored by
torch as ``[out, in]`` and transposed to Google's ``[in, out]``. A checkpoint of a model
without a pooler (``BertForTokenClassification``, ``BertForQuestionAnswering``,
``BertForMaskedLM``) has no ``pooler.*``: its weights come without ``bert/pooler/*``.

The vocabulary is ``vocab.txt`` or, as transformers 5 saves BERT tokenizers (``tokenizer.json``
and ``tokenizer_config.json`` only), the WordPiece model of ``tokenizer.json``; the casing comes
from ``tokenizer_config.json`` and ``tokenizer.json``: the format's tokenizer files are read in
`keras_bert.checkpoints.huggingface_tokenizer` (``read_tokenizer_json``, the one reader of
``tokenizer.json``, ``recorded_casing``, ``vocabulary``, ``vocab_file``).
"""

import io
import json
import os
import re
import struct

import numpy as np

from keras_bert import storage
from keras_bert.checkpoints.common import (
    CheckpointError, build_config, check_shapes, read_json_object, require_file,
)
from keras_bert.checkpoints import huggingface_heads, huggingface_tf, huggingface_tokenizer
from keras_bert.checkpoints.huggingface_tokenizer import (
    TOKENIZER_CONFIG_FILE, TOKENIZER_FILE, VOCAB_FILE,
)
from keras_bert.config import BertConfig

CONFIG_FILE = "config.json"
SAFETENSORS_FILE = "model.safetensors"
TORCH_FILE = "pytorch_model.bin"
TF_FILE = huggingface_tf.TF_FILE
# Every file this format reads (see `keras_bert.checkpoints.formats.check_links`).
FILES = (CONFIG_FILE, SAFETENSORS_FILE, TORCH_FILE, TF_FILE, VOCAB_FILE, TOKENIZER_CONFIG_FILE,
         TOKENIZER_FILE)

# (Google name relative to the model, HF name relative to the model, transpose?)
_EMBEDDINGS = [
    ("embeddings/word_embeddings", "embeddings.word_embeddings.weight", False),
    ("embeddings/position_embeddings", "embeddings.position_embeddings.weight", False),
    ("embeddings/token_type_embeddings", "embeddings.token_type_embeddings.weight", False),
    ("embeddings/LayerNorm/gamma", "embeddings.LayerNorm.weight", False),
    ("embeddings/LayerNorm/beta", "embeddings.LayerNorm.bias", False),
]
_BLOCK = [
    ("attention/self/query/kernel", "attention.self.query.weight", True),
    ("attention/self/query/bias", "attention.self.query.bias", False),
    ("attention/self/key/kernel", "attention.self.key.weight", True),
    ("attention/self/key/bias", "attention.self.key.bias", False),
    ("attention/self/value/kernel", "attention.self.value.weight", True),
    ("attention/self/value/bias", "attention.self.value.bias", False),
    ("attention/output/dense/kernel", "attention.output.dense.weight", True),
    ("attention/output/dense/bias", "attention.output.dense.bias", False),
    ("attention/output/LayerNorm/gamma", "attention.output.LayerNorm.weight", False),
    ("attention/output/LayerNorm/beta", "attention.output.LayerNorm.bias", False),
    ("intermediate/dense/kernel", "intermediate.dense.weight", True),
    ("intermediate/dense/bias", "intermediate.dense.bias", False),
    ("output/dense/kernel", "output.dense.weight", True),
    ("output/dense/bias", "output.dense.bias", False),
    ("output/LayerNorm/gamma", "output.LayerNorm.weight", False),
    ("output/LayerNorm/beta", "output.LayerNorm.bias", False),
]
_POOLER = [
    ("pooler/dense/kernel", "pooler.dense.weight", True),
    ("pooler/dense/bias", "pooler.dense.bias", False),
]
_BUFFERS = ("embeddings.position_ids", "embeddings.token_type_ids")
_MAX_HEADER = 100 << 20  # safetensors' own limit on the JSON header (100 MB)
_HEADS = [
    ("cls/predictions/transform/dense/kernel", "cls.predictions.transform.dense.weight", True),
    ("cls/predictions/transform/dense/bias", "cls.predictions.transform.dense.bias", False),
    ("cls/predictions/transform/LayerNorm/gamma", "cls.predictions.transform.LayerNorm.weight", False),
    ("cls/predictions/transform/LayerNorm/beta", "cls.predictions.transform.LayerNorm.bias", False),
    ("cls/predictions/output_bias", "cls.predictions.bias", False),
    ("cls/seq_relationship/output_weights", "cls.seq_relationship.weight", False),
    ("cls/seq_relationship/output_bias", "cls.seq_relationship.bias", False),
]


def name_map(num_hidden_layers, model_prefix=""):
    """``[(google_name, hf_name, transpose)]`` for an encoder of ``num_hidden_layers`` blocks.

    ``model_prefix`` is ``"bert."`` for ``BertForPreTraining``-style checkpoints.
    """
    out = [(f"bert/{g}", model_prefix + h, t) for g, h, t in _EMBEDDINGS]
    for n in range(num_hidden_layers):
        out += [(f"bert/encoder/layer_{n}/{g}", f"{model_prefix}encoder.layer.{n}.{h}", t)
                for g, h, t in _BLOCK]
    out += [(f"bert/{g}", model_prefix + h, t) for g, h, t in _POOLER]
    return out


def _normalize_key(key):
    # Old checkpoints (and BERT ports from TF) name LayerNorm parameters gamma/beta.
    key = re.sub(r"LayerNorm\.gamma$", "LayerNorm.weight", key)
    return re.sub(r"LayerNorm\.beta$", "LayerNorm.bias", key)


def _tensor_shapes(directory):
    """``({tensor name: shape}, the file)`` of the directory's weights, no tensor read."""
    st_path = os.path.join(directory, SAFETENSORS_FILE)
    if storage.isfile(st_path):
        return safetensors_shapes(st_path), st_path
    pt_path = os.path.join(directory, TORCH_FILE)
    if storage.isfile(pt_path) and not storage.is_remote(pt_path):
        torch = _torch(pt_path)
        try:  # the pickle only: the tensors stay on disk
            state = torch.load(pt_path, map_location="cpu", weights_only=True, mmap=True)
        except Exception as e:
            raise CheckpointError(
                f"Cannot read the PyTorch weights file {pt_path}: {type(e).__name__}: {e}"
            ) from None
        return {k: tuple(v.shape) for k, v in state.items()}, pt_path
    if not storage.isfile(pt_path) and storage.isfile(huggingface_tf.tf_file(directory)):
        return huggingface_tf.h5_shapes(huggingface_tf.tf_file(directory)), \
            huggingface_tf.tf_file(directory)
    tensors, source = _load_tensors(directory)  # remote .bin: read; or the error naming files
    return {k: tuple(v.shape) for k, v in tensors.items()}, source


def safetensors_shapes(path):
    """``{tensor name: shape}`` from a safetensors file's header (8 bytes of length, then a
    JSON object), without reading the tensors."""
    try:
        with storage.open(path, "rb") as f:
            (length,) = struct.unpack("<Q", f.read(8))
            if length > _MAX_HEADER:
                raise ValueError(f"a header of {length} bytes")
            header = json.loads(f.read(length))
        return {name: tuple(entry["shape"]) for name, entry in header.items()
                if name != "__metadata__"}
    except (OSError, ValueError, KeyError, TypeError, AttributeError, struct.error) as e:
        raise CheckpointError(
            f"Cannot read the safetensors file {path}: {type(e).__name__}: {e}") from None


def _torch(path):
    try:
        import torch
    except ImportError:
        raise CheckpointError(
            f"{path} is a PyTorch pickle and torch is not installed; install the [hf] "
            f"extra (pip install 'keras-bert-zoo[hf]', torch's CPU build) or convert it to "
            f"{SAFETENSORS_FILE}."
        ) from None
    return torch


def _load_tensors(directory):
    st_path = os.path.join(directory, SAFETENSORS_FILE)
    pt_path = os.path.join(directory, TORCH_FILE)
    if storage.isfile(st_path):
        from safetensors.numpy import load

        try:
            return load(storage.read_bytes(st_path)), st_path
        except Exception as e:
            raise CheckpointError(
                f"Cannot read the safetensors file {st_path}: {type(e).__name__}: {e}"
            ) from None
    if storage.isfile(pt_path):
        torch = _torch(pt_path)
        try:
            state = torch.load(io.BytesIO(storage.read_bytes(pt_path)), map_location="cpu",
                               weights_only=True)
        except Exception as e:
            raise CheckpointError(
                f"Cannot read the PyTorch weights file {pt_path}: {type(e).__name__}: {e}"
            ) from None
        return {k: v.float().numpy() for k, v in state.items()}, pt_path
    tf_path = huggingface_tf.tf_file(directory)
    if storage.isfile(tf_path):
        return huggingface_tf.h5_tensors(tf_path), tf_path
    raise CheckpointError(
        f"No Hugging Face weights in {directory}: expected {SAFETENSORS_FILE} (or "
        f"{TORCH_FILE}, or transformers' TensorFlow {TF_FILE}) beside {CONFIG_FILE}."
    )


# What Hugging Face's "hidden_act" strings compute ("gelu" is the exact erf form), and back.
ACT_TO_OURS = {
    "gelu": "gelu",
    "gelu_new": "gelu_tanh",
    "gelu_pytorch_tanh": "gelu_tanh",
    "gelu_fast": "gelu_tanh",
    "relu": "relu",
    "tanh": "tanh",
    "silu": "silu",
    "swish": "silu",
    "linear": "linear",
}
OURS_TO_ACT = {"gelu": "gelu", "gelu_tanh": "gelu_new"}


def config_from_json(path_or_dict):
    """`BertConfig` from a Hugging Face ``config.json`` (a path, or its values as a dict);
    any problem is a `CheckpointError` naming the file."""
    if isinstance(path_or_dict, dict):
        values, path = dict(path_or_dict), "<dict>"
    else:
        path = path_or_dict
        require_file(path, "Hugging Face config")
        values = read_json_object(path, "Hugging Face config")
    model_type = values.get("model_type", "bert")
    if model_type != "bert":
        raise CheckpointError(f"{path}: model_type is {model_type!r}, not 'bert'.")
    if values.get("is_decoder") or values.get("add_cross_attention"):
        raise CheckpointError(
            f"{path}: a BERT decoder (is_decoder/add_cross_attention: BertLMHeadModel, an "
            "encoder-decoder's half), whose attention is causal; keras_bert's BertEncoder "
            "attends both ways and would compute something else.")
    position_type = values.get("position_embedding_type", "absolute")
    if position_type != "absolute":
        raise CheckpointError(f"{path}: position_embedding_type {position_type!r} is not "
                              "supported (BERT uses 'absolute').")
    act = values.get("hidden_act", "gelu")
    if act not in ACT_TO_OURS:
        raise CheckpointError(f"{path}: hidden_act {act!r} is not supported "
                              f"({sorted(ACT_TO_OURS)}).")
    values["hidden_act"] = ACT_TO_OURS[act]
    return build_config(path, lambda: BertConfig.from_file_values(path, values))


def config_to_json(config):
    """The ``config.json`` values of ``config`` in Hugging Face's spelling (a `BertModel`)."""
    values = config.to_dict()
    values["hidden_act"] = OURS_TO_ACT.get(config.hidden_act, config.hidden_act)
    values.update({"model_type": "bert", "architectures": ["BertModel"],
                   "position_embedding_type": "absolute", "pad_token_id": 0})
    return values


def read_config(directory):
    """`BertConfig` from ``directory/config.json``."""
    return config_from_json(os.path.join(directory, CONFIG_FILE))


def _placed(names, config, source):
    """Where the (normalised) tensor ``names`` of a checkpoint go: ``([(google name, hf name,
    transpose)], unexplained)``, the second the names inside the encoder with no place.
    Names of transformers' TensorFlow classes are placed by `huggingface_tf.placed`."""
    if huggingface_tf.is_tf(names):
        return huggingface_tf.placed(names, source)
    prefix = "bert." if "bert.embeddings.word_embeddings.weight" in names else ""
    if prefix == "" and "embeddings.word_embeddings.weight" not in names:
        raise CheckpointError(
            f"{source}: no embeddings.word_embeddings.weight (nor bert.-prefixed); this is not a "
            "Hugging Face BERT checkpoint."
        )
    # Missing encoder names are left to check_shapes, which reports them.
    placed = [(google, hf, transpose) for google, hf, transpose
              in name_map(config.num_hidden_layers, prefix) + _HEADS + huggingface_heads.TASK_NAMES
              if hf in names]
    taken = {hf for _, hf, _ in placed}
    return placed, [k for k in names if k not in taken and _in_encoder(k, prefix)]


def list_variables(directory, config):
    """``(shapes, unexplained, source)`` of the weights file without reading its tensors:
    the safetensors header (``pytorch_model.bin``: memory-mapped where it is local, else
    read), shapes in Google's names and layouts."""
    shapes, source = _tensor_shapes(directory)
    shapes = {_normalize_key(k): v for k, v in shapes.items()}
    placed, unexplained = _placed(shapes, config, source)
    return ({google: shapes[hf][::-1] if transpose else shapes[hf]
             for google, hf, transpose in placed}, unexplained, source)


def read_weights(directory, config):
    """Reads a Hugging Face directory's weights into the canonical dict (checked against config)."""
    tensors, source = _load_tensors(directory)
    tensors = {_normalize_key(k): v for k, v in tensors.items()}
    placed, unexplained = _placed(tensors, config, source)
    weights = {}
    for google, hf, transpose in placed:
        value = np.asarray(tensors[hf], dtype=np.float32)
        weights[google] = value.T if transpose else value
    check_shapes({k: v.shape for k, v in weights.items()}, config, source, unexplained)
    return weights


def _in_encoder(key, prefix):
    """Whether ``key`` belongs to the encoder (``BertModel``), not a head or a buffer.

    With the ``bert.`` prefix, the encoder is everything under it; heads (``cls.*``,
    ``classifier.*``, ``qa_outputs.*``, ...) are outside. Without it, the encoder is
    ``embeddings.*``, ``encoder.*`` and ``pooler.*``. The buffers BertEmbeddings registers
    (``position_ids``, ``token_type_ids``) are not weights.
    """
    if not key.startswith(prefix):
        return False
    key = key[len(prefix):]
    if key in _BUFFERS:
        return False
    return bool(prefix) or key.split(".")[0] in ("embeddings", "encoder", "pooler")


def write_directory(directory, config, weights, vocab_path=None, head=None,
                    do_lower_case=None, extra=None):
    """Writes ``config.json``, ``model.safetensors`` and the tokenizer files (``vocab.txt``,
    ``tokenizer.json``, ``tokenizer_config.json``: `huggingface_tokenizer.write_tokenizer`)
    that transformers' ``Auto*`` classes load.

    The names are those of the transformers class of ``head``'s task (a `TaskHead`:
    ``BertForSequenceClassification``, ...; see `huggingface_heads`); without one, those of
    ``BertForPreTraining`` when ``weights`` hold pre-training heads, else ``BertModel``'s.
    ``extra`` (keras_bert's task and preprocessor arguments) goes into ``config.json``.
    """
    from safetensors.numpy import save

    storage.makedirs(directory)
    has_heads = any(name.startswith("cls/") for name in weights)
    name = huggingface_heads.architecture(head, has_heads)
    prefix = "" if name == "BertModel" else "bert."
    names = name_map(config.num_hidden_layers, prefix)
    if name in huggingface_heads.WITHOUT_POOLER:  # transformers builds these without one
        names = [entry for entry in names if not entry[1].endswith(_POOLER_NAMES)]
    if name == "BertForMaskedLM":
        names += [entry for entry in _HEADS if entry[0].startswith("cls/predictions/")]
    elif name in ("BertForPreTraining", "BertForNextSentencePrediction"):
        names += _HEADS
    names += huggingface_heads.head_names(name)
    tensors = {}
    for google, hf, transpose in names:
        if google in weights:
            value = np.asarray(weights[google], dtype=np.float32)
            tensors[hf] = np.ascontiguousarray(value.T if transpose else value)
    storage.write_bytes(os.path.join(directory, SAFETENSORS_FILE),
                        save(tensors, metadata={"format": "pt"}))
    values = config_to_json(config)
    values.update(huggingface_heads.config_values(name, head, config, extra))
    storage.write_json(os.path.join(directory, CONFIG_FILE), values)
    if vocab_path is not None:
        huggingface_tokenizer.write_tokenizer(directory, vocab_path, do_lower_case,
                                              config.max_position_embeddings)
    return directory


_POOLER_NAMES = tuple(hf for _, hf, _ in _POOLER)


# ---- the format interface (`keras_bert.checkpoints.formats.FORMATS`) ----------------------
def detect(directory):
    """True when ``directory`` holds a Hugging Face ``config.json``."""
    return storage.isfile(os.path.join(directory, CONFIG_FILE))


def read_metadata(directory):
    """keras_bert's task and preprocessor arguments that ``config.json`` keeps (see
    `huggingface_heads.recorded_arguments`), or ``{}``."""
    path = os.path.join(directory, CONFIG_FILE)
    return huggingface_heads.recorded_arguments(read_json_object(path, "Hugging Face config"),
                                                path)


def read_head(directory, metadata):
    """The `TaskHead` of the ``BertFor*`` class ``config.json`` names, or None."""
    path = os.path.join(directory, CONFIG_FILE)
    return huggingface_heads.read_head_values(read_json_object(path, "Hugging Face config"),
                                              path)


def check_files(directory, metadata):
    """Hugging Face's layout records nothing to check its files against."""


# The tokenizer files (vocab.txt, tokenizer_config.json, tokenizer.json).
recorded_casing = huggingface_tokenizer.recorded_casing
vocab_file = huggingface_tokenizer.vocab_file
vocabulary = huggingface_tokenizer.vocabulary


def check_weights(directory):
    """Weights are found (safetensors or torch) when read; nothing to check up front."""
