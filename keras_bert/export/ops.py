"""`required_ops`: the ops an export needs beyond core TensorFlow's, read from its graph.

A serving binary must have every op of a SavedModel's graph registered before it loads it:
core TensorFlow's are always there; tensorflow-text's (for an export that tokenizes) are only
in binaries built with them (official TF Serving builds link tensorflow-text) or, in Python,
once ``import tensorflow_text`` has run. Without them loading fails with ``Op type not
registered``.
"""

import os

import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2

from keras_bert import storage
from keras_bert.export.export_dirs import ExportError


def required_ops(path):
    """The sorted names of the ops in the SavedModel at ``path`` that core TensorFlow does
    not define (its graph and function library, every meta graph), e.g.
    ``["FastWordpieceTokenizeWithOffsets", "NormalizeUTF8"]`` for a preprocessing or serving
    export of an uncased model; ``[]`` for an encoder export.

    An op counts as core when TensorFlow's own op wrappers (`tf.raw_ops`) define it; the
    saved graph is read as a protocol buffer, nothing is loaded or run.

    Raises:
        ExportError: ``path`` holds no ``saved_model.pb``, or one that does not parse.

    Example:

    >>> import tempfile, tensorflow as tf
    >>> from keras_bert.export import required_ops
    >>> module = tf.Module()
    >>> module.f = tf.function(lambda x: x * 2, input_signature=[tf.TensorSpec([], tf.float32)])
    >>> path = tempfile.mkdtemp()
    >>> tf.saved_model.save(module, path)
    >>> required_ops(path)
    []
    """
    return sorted(op for op in saved_ops(path) if not _is_core(op))


def saved_ops(path):
    """Every op type used in the SavedModel at ``path`` (a set; calls of the graph's own
    functions by name are not ops)."""
    proto = _read(path)
    ops, functions = set(), set()
    for meta_graph in proto.meta_graphs:
        ops.update(node.op for node in meta_graph.graph_def.node)
        for function in meta_graph.graph_def.library.function:
            functions.add(function.signature.name)
            ops.update(node.op for node in function.node_def)
    return ops - functions


def _is_core(op):
    # Internal ops (`_Arg`, ...) have no wrapper but are core.
    return op.startswith("_") or hasattr(tf.raw_ops, op)


def _read(path):
    path = os.fspath(path)
    pb = os.path.join(path, "saved_model.pb")
    if not storage.isfile(pb):
        raise ExportError(f"{path} is not a SavedModel: it has no saved_model.pb.")
    proto = saved_model_pb2.SavedModel()
    try:
        proto.ParseFromString(storage.read_bytes(pb))
    except Exception as e:  # noqa: BLE001 - protobuf raises DecodeError and others
        raise ExportError(f"{pb} is not a readable SavedModel: {e}") from None
    return proto
