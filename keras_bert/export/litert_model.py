"""Running a LiteRT model of keras_bert (`keras_bert.export.export_litert`): `load` gives a
`LiteRTModel`, ai-edge-litert's interpreter with tensorflow-text's kernels registered.

The interpreter comes from the ``ai-edge-litert`` package (the ``[litert]`` extra,
``requirements-litert.txt``), imported only here, when a model is loaded. Writing a LiteRT
model needs only TensorFlow.
"""

import os

import numpy as np

from keras_bert import checks, storage

# TF Serving's name for a LiteRT model inside a SavedModel version directory
# (--prefer_tflite_model).
SERVING_FILE = "model.tflite"
INSTALL = "pip install 'keras-bert-zoo[litert]' (requirements-litert.txt)"
# The custom ops of keras_bert's LiteRT models -> tensorflow-text's function that registers
# its LiteRT kernel (`tensorflow_text.tflite_registrar`).
REGISTRARS = {
    "FastBertNormalize": "AddFastBertNormalize",
    "FastWordpieceTokenizeWithOffsets": "AddFastWordpieceTokenize",
}


def load(model, num_threads=None):
    """The LiteRT model ``model`` (a path, local or ``gs://``, or the file's bytes), ready to
    run: a `LiteRTModel` with ``num_threads`` threads (default: every CPU)."""
    return LiteRTModel(model, num_threads=num_threads)


def interpreter_module():
    """``ai_edge_litert.interpreter``, or ImportError naming the extra to install."""
    try:
        from ai_edge_litert import interpreter
    except ImportError as error:
        raise ImportError(f"Running a LiteRT model needs ai-edge-litert ({error}): "
                          f"{INSTALL}.") from None
    return interpreter


def ops(model):
    """The op names of a LiteRT model (a path or its bytes), sorted: builtins by their
    LiteRT name (``FULLY_CONNECTED``), custom ops by their code (``FastBertNormalize``; a
    TensorFlow op through the Flex delegate is ``Flex<Name>``). Reads the flatbuffer only."""
    from tensorflow.lite.python import schema_py_generated as schema

    data = _bytes(model)
    root = schema.Model.GetRootAsModel(data, 0)
    names = {value: name for name, value in vars(schema.BuiltinOperator).items()
             if not name.startswith("_")}
    found = set()
    for i in range(root.OperatorCodesLength()):
        code = root.OperatorCodes(i)
        builtin = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
        if builtin == schema.BuiltinOperator.CUSTOM:
            found.add(code.CustomCode().decode("utf-8"))
        else:
            found.add(names.get(builtin, str(builtin)))
    return sorted(found)


def custom_ops(model):
    """The custom ops of a LiteRT model (those that need a kernel registered), sorted."""
    from tensorflow.lite.python import schema_py_generated as schema

    builtins = {name for name in vars(schema.BuiltinOperator) if not name.startswith("_")}
    return [op for op in ops(model) if op not in builtins]


class LiteRTModel:
    """A keras_bert LiteRT model in ai-edge-litert's interpreter (XNNPACK on), its
    tensorflow-text kernels registered. Not thread-safe: one call at a time (`copy` makes
    another interpreter of the same model for another thread).

    Args:
      model: a path (local, ``gs://``...) or the model's bytes.
      num_threads: threads the interpreter's kernels use (default: every CPU).

    Calling it runs a signature (``serving_default`` by default) on numpy arrays (strings as
    ``bytes``/``str``, ids as int32) and returns its outputs by name; a batch of any size.

    Raises:
      ImportError: ai-edge-litert is not installed (naming the ``[litert]`` extra).
      ValueError: a model with custom ops that tensorflow-text has no LiteRT kernel for; a
        call with an unknown signature, missing or unexpected inputs (naming them).

    Example:

    >>> import tempfile
    >>> from keras_bert import BertClassifier
    >>> model = BertClassifier.from_preset("tiny_random", num_classes=2, seq_length=8)
    >>> lite = load(model.export(tempfile.mkdtemp() + "/m.tflite", format="litert"))
    >>> sorted(lite.signatures)
    ['serving_default', 'serving_ids']
    >>> lite.signatures["serving_default"]["inputs"]
    {'text': (dtype('O'), (-1,))}
    >>> out = lite(text=["a great movie", "dull movie", "a"])
    >>> out["logits"].shape, out["label_ids"].dtype
    ((3, 2), dtype('int32'))
    """

    def __init__(self, model, num_threads=None):
        self._data = _bytes(model)
        self.num_threads = checks.integer(
            "num_threads", num_threads if num_threads is not None else os.cpu_count() or 1,
            minimum=1)
        lite = interpreter_module()
        import tensorflow_text as tf_text

        needed = custom_ops(self._data)
        unknown = [op for op in needed if op not in REGISTRARS]
        if unknown:
            raise ValueError(f"This LiteRT model needs custom ops {unknown} that keras_bert "
                             f"cannot register (it registers {sorted(REGISTRARS)}).")
        registrars = [getattr(tf_text.tflite_registrar, REGISTRARS[op]) for op in needed]
        self._interpreter = lite.InterpreterWithCustomOps(
            model_content=self._data, custom_op_registerers=registrars,
            num_threads=self.num_threads)
        self._runners = {}
        self.signatures = {}
        for key in self._interpreter.get_signature_list():
            runner = self._interpreter.get_signature_runner(key)
            self._runners[key] = runner
            self.signatures[key] = {
                "inputs": _specs(runner.get_input_details()),
                "outputs": _specs(runner.get_output_details()),
            }

    def __repr__(self):
        return f"LiteRTModel(signatures={sorted(self.signatures)}, " \
               f"num_threads={self.num_threads})"

    @property
    def size(self):
        """The model's size in bytes."""
        return len(self._data)

    def copy(self, num_threads=None):
        """Another interpreter of the same model (for another thread)."""
        return LiteRTModel(self._data, num_threads=num_threads or self.num_threads)

    def __call__(self, signature="serving_default", **inputs):
        """Runs ``signature`` on ``inputs`` (name -> array); returns name -> numpy array."""
        runner = self._runners.get(signature)
        if runner is None:
            raise ValueError(f"This LiteRT model has no signature {signature!r}; it has "
                             f"{sorted(self._runners)}.")
        specs = self.signatures[signature]["inputs"]
        missing, extra = sorted(set(specs) - set(inputs)), sorted(set(inputs) - set(specs))
        if missing or extra:
            raise ValueError(f"Signature {signature!r} takes {sorted(specs)}; got "
                             f"{sorted(inputs)} (missing {missing}, unexpected {extra}).")
        arrays = {name: _array(value, specs[name][0]) for name, value in inputs.items()}
        return runner(**arrays)


def _bytes(model):
    if isinstance(model, (bytes, bytearray, memoryview)):
        return bytes(model)
    if isinstance(model, (str, os.PathLike)):
        return storage.read_bytes(model)
    raise TypeError(f"A LiteRT model is a path or its bytes, got {type(model).__name__}.")


def _specs(details):
    """name -> (numpy dtype, shape with -1 for sizes known only at run time); strings are
    ``object`` (arrays of bytes, as TensorFlow gives them)."""
    specs = {}
    for name, d in details.items():
        dtype = np.dtype(d["dtype"])
        specs[name] = (np.dtype(object) if dtype.kind in "SO" else dtype,
                       tuple(int(s) for s in d["shape_signature"]))
    return specs


def _array(value, dtype):
    if dtype == np.dtype(object):  # strings: bytes, str encoded as UTF-8
        value = np.asarray(value, dtype=object)
        flat = [v.encode("utf-8") if isinstance(v, str) else v for v in value.flat]
        return np.array(flat, dtype=object).reshape(value.shape)
    return np.asarray(value, dtype=dtype)
