"""Weights written by transformers' TensorFlow classes (``TFBertModel``, ``TFBertFor*``;
transformers 4 and before, since transformers 5 has no TensorFlow), for
`keras_bert.checkpoints.huggingface`: ``tf_model.h5`` (Keras 2's HDF5 weights, what their
``save_pretrained`` writes), or ``model.safetensors`` holding the same names
(``save_pretrained(..., safe_serialization=True)``), beside the same ``config.json``.

Their names are Google's but for a few spellings, and their dense kernels Google's
``[in, out]``: ``bert/embeddings/word_embeddings/weight:0``,
``bert/encoder/layer_._0/attention/self/query/kernel:0``, ``bert/pooler/dense/kernel:0``;
the heads ``classifier/kernel:0`` (``output_weights``, transposed), ``qa_outputs/kernel:0``
(``cls/squad/output_weights``), ``mlm___cls/predictions/...`` and
``nsp___cls/seq_relationship/...``. In ``tf_model.h5`` each name sits under its top layer's
group and the model's name (``bert/tf_bert_for_sequence_classification/bert/...``).

>>> [(google, transpose) for google, _, transpose in placed(
...     ["bert/encoder/layer_._3/output/dense/kernel:0", "classifier/kernel:0",
...      "bert/embeddings/word_embeddings/weight:0"], "tf_model.h5")[0]]
[('bert/encoder/layer_3/output/dense/kernel', False), ('output_weights', True), ('bert/embeddings/word_embeddings', False)]
"""

import os
import re

import numpy as np

from keras_bert import storage
from keras_bert.checkpoints.common import CheckpointError

TF_FILE = "tf_model.h5"

# (TF name without ":0", Google's name, transpose?), the first that matches.
_RULES = [(re.compile(pattern), template, transpose) for pattern, template, transpose in [
    (r"bert/embeddings/word_embeddings/weight", "bert/embeddings/word_embeddings", False),
    (r"bert/embeddings/(position|token_type)_embeddings/embeddings",
     r"bert/embeddings/\1_embeddings", False),
    (r"bert/encoder/layer_\._(\d+)/(.+)", r"bert/encoder/layer_\1/\2", False),
    (r"bert/(embeddings/LayerNorm|pooler/dense)/(.+)", r"bert/\1/\2", False),
    (r"mlm___cls/predictions/bias", "cls/predictions/output_bias", False),
    (r"mlm___cls/predictions/transform/(.+)", r"cls/predictions/transform/\1", False),
    (r"nsp___cls/seq_relationship/kernel", "cls/seq_relationship/output_weights", True),
    (r"nsp___cls/seq_relationship/bias", "cls/seq_relationship/output_bias", False),
    (r"classifier/kernel", "output_weights", True),
    (r"classifier/bias", "output_bias", False),
    (r"qa_outputs/kernel", "cls/squad/output_weights", True),
    (r"qa_outputs/bias", "cls/squad/output_bias", False),
]]


def is_tf(names):
    """Whether tensor ``names`` are those of transformers' TensorFlow classes (``...:0``)."""
    return any(name.endswith(":0") for name in names)


def placed(names, source):
    """``([(Google name, TF name, transpose?)], unexplained)``: where the TF ``names`` go, and
    those under ``bert/`` that have no place (for `keras_bert.checkpoints.common.check_shapes`
    to report). `CheckpointError` naming ``source`` when there are no word embeddings."""
    out, unexplained = [], []
    for name in names:
        key = name[:-2] if name.endswith(":0") else name
        for pattern, template, transpose in _RULES:
            match = pattern.fullmatch(key)
            if match:
                out.append((match.expand(template), name, transpose))
                break
        else:
            if key.startswith("bert/"):
                unexplained.append(name)
    if not any(google == "bert/embeddings/word_embeddings" for google, _, _ in out):
        raise CheckpointError(f"{source}: no bert/embeddings/word_embeddings/weight:0; not a "
                              "BERT of transformers' TensorFlow classes.")
    return out, unexplained


def _h5(path, read):
    """``{name: array or shape}`` of ``tf_model.h5``'s datasets, named without their top
    layer's group and the model's name."""
    import h5py

    found = {}

    def visit(name, item):
        if isinstance(item, h5py.Dataset):
            key = "/".join(name.split("/")[2:])
            found[key] = np.asarray(item, np.float32) if read else tuple(item.shape)

    try:
        with storage.open(path, "rb") as stream, h5py.File(stream, "r") as f:
            f.visititems(visit)
    except OSError as e:
        raise CheckpointError(f"Cannot read the TensorFlow weights file {path}: {e}") from None
    return found


def h5_shapes(path):
    """``{TF name: shape}`` of ``tf_model.h5`` (its datasets' shapes: no tensor is read)."""
    return _h5(path, read=False)


def h5_tensors(path):
    """``{TF name: float32 array}`` of ``tf_model.h5``."""
    return _h5(path, read=True)


def tf_file(directory):
    return os.path.join(directory, TF_FILE)
