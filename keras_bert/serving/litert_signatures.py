"""Serving a LiteRT model (``model.tflite`` in a version directory, TF Serving's
``--prefer_tflite_model``): its signatures behind the same interface as a SavedModel's
(`keras_bert.serving.signatures.Signature`), run by a pool of interpreters.

Each signature's ``SignatureDef`` (what GetModelMetadata reports) is derived from the
LiteRT signature: inputs and outputs keyed by their names, each with its dtype, its shape
(-1 where the size is known only at run time) and its LiteRT tensor name, method
``tensorflow/serving/predict``, as TF Serving's TfLiteSession reports one.
"""

import contextlib
import os
import queue

import numpy as np
import tensorflow as tf

from keras_bert.export import litert_model
from keras_bert.serving.errors import ServingError, invalid
from keras_bert.serving.signatures import Signature, first_line

PREDICT_METHOD = "tensorflow/serving/predict"


class InterpreterPool:
    """``size`` interpreters of one LiteRT model (bytes), each used by one call at a time;
    the CPUs are shared among them (``num_threads`` each, default: CPUs // size).

    Example:

    >>> import tempfile
    >>> from keras_bert import BertClassifier
    >>> model = BertClassifier.from_preset("tiny_random", num_classes=2, seq_length=8)
    >>> path = model.export(tempfile.mkdtemp() + "/1/model.tflite", format="litert")
    >>> pool = InterpreterPool(open(path, "rb").read(), size=2)
    >>> with pool.interpreter() as lite:
    ...     lite(text=["a great movie"])["logits"].shape
    (1, 2)
    """

    def __init__(self, data, size=1, num_threads=None):
        self.size = max(1, int(size))
        threads = num_threads or max(1, (os.cpu_count() or 1) // self.size)
        first = litert_model.load(data, num_threads=threads)
        self.signatures = first.signatures
        self._free = queue.Queue()
        self._free.put(first)
        for _ in range(self.size - 1):
            self._free.put(first.copy())

    @contextlib.contextmanager
    def interpreter(self):
        lite = self._free.get()
        try:
            yield lite
        finally:
            self._free.put(lite)


def signature_def(name, spec):
    """The ``SignatureDef`` of LiteRT signature ``name`` (``spec``: a
    `LiteRTModel.signatures` entry)."""
    from tensorflow.core.protobuf import meta_graph_pb2

    proto = meta_graph_pb2.SignatureDef(method_name=PREDICT_METHOD)
    for field, items in (("inputs", spec["inputs"]), ("outputs", spec["outputs"])):
        for key, (dtype, shape) in items.items():
            info = getattr(proto, field)[key]
            info.name = f"{name}_{key}:0"
            info.dtype = (tf.string if dtype == np.dtype(object)
                          else tf.as_dtype(dtype)).as_datatype_enum
            for size in shape:
                info.tensor_shape.dim.add().size = size
    return proto


class LiteRTSignature(Signature):
    """A signature of a LiteRT model, run on an `InterpreterPool`; checks requests as a
    SavedModel's `Signature` does (names, dtypes, shapes, batch size).

    Example (the model of `InterpreterPool`'s example):

    >>> import tempfile
    >>> from keras_bert import BertClassifier
    >>> model = BertClassifier.from_preset("tiny_random", num_classes=2, seq_length=8)
    >>> path = model.export(tempfile.mkdtemp() + "/1/model.tflite", format="litert")
    >>> pool = InterpreterPool(open(path, "rb").read())
    >>> signature = LiteRTSignature("serving_default", pool)
    >>> signature, sorted(signature.outputs)
    (LiteRTSignature('serving_default', inputs=['text']), ['label_ids', 'logits', 'probabilities'])
    >>> out = signature.run(signature.check({"text": np.array([b"a great movie"], object)}))
    >>> out["label_ids"].shape
    (1,)
    """

    def __init__(self, name, pool):
        spec = pool.signatures[name]
        self.pool = pool
        self.setup(name, signature_def(name, spec), {
            key: tf.TensorSpec([None if s < 0 else s for s in shape],
                               tf.string if dtype == np.dtype(object) else tf.as_dtype(dtype),
                               name=key)
            for key, (dtype, shape) in spec["inputs"].items()})

    def __repr__(self):
        return f"LiteRTSignature({self.name!r}, inputs={sorted(self.inputs)})"

    def call(self, inputs):
        with self.pool.interpreter() as lite:
            try:
                return lite(self.name, **inputs)
            except (RuntimeError, ValueError) as error:  # what Invoke reports: the inputs
                raise invalid(f"signature {self.name!r} refused the inputs: "
                              f"{first_line(error)}") from None
            except Exception as error:  # noqa: BLE001 - the interpreter's own failure
                raise ServingError("INTERNAL", f"signature {self.name!r} failed: "
                                   f"{first_line(error)}") from None
