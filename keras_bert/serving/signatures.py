"""One signature of a loaded SavedModel: what it takes and gives, checks of a request's inputs
against it, and running it.

The inputs' names, dtypes and shapes come from the signature's concrete function, the outputs'
from its ``SignatureDef`` (what TF Serving reports in GetModelMetadata). Every mismatch is an
INVALID_ARGUMENT `ServingError` naming the input and the signature; nothing reaches a
TensorFlow kernel unchecked.
"""

import threading

import numpy as np
import tensorflow as tf

from keras_bert.serving.errors import ServingError, invalid


def dtype_name(dtype):
    """TF Serving's name of a dtype in messages: ``string``, ``int32``, ``float``..."""
    return {tf.string: "string", tf.float32: "float"}.get(dtype, dtype.name)


def shape_text(shape):
    dims = tf.TensorShape(shape).as_list() if tf.TensorShape(shape).rank is not None else None
    if dims is None:
        return "<unknown rank>"
    return "[" + ", ".join("?" if d is None else str(d) for d in dims) + "]"


class Signature:
    """A signature (``serving_default``, ...) of a loaded SavedModel.

    Args:
      name: the signature key.
      function: the loaded concrete function (``loaded.signatures[name]``).
      signature_def: its ``SignatureDef`` proto from ``saved_model.pb``.

    Example:

    >>> import tempfile
    >>> import tensorflow as tf
    >>> class Doubler(tf.Module):
    ...     @tf.function(input_signature=[tf.TensorSpec([None], tf.float32, name="x")])
    ...     def double(self, x):
    ...         return {"y": 2 * x}
    >>> doubler = Doubler()
    >>> import numpy as np
    >>> from keras_bert.serving import ServingError
    >>> from keras_bert.serving.servable import read_signature_defs
    >>> path = tempfile.mkdtemp()
    >>> tf.saved_model.save(doubler, path, signatures={"serving_default": doubler.double})
    >>> function = tf.saved_model.load(path).signatures["serving_default"]
    >>> signature = Signature("serving_default", function,
    ...                       read_signature_defs(path)["serving_default"])
    >>> signature, signature.outputs
    (Signature('serving_default', inputs=['x']), {'y': (tf.float32, TensorShape([None]))})
    >>> try:
    ...     signature.check({"x": np.array([[1.0]], "float32")})
    ... except ServingError as error:
    ...     print(error.code, error.message)
    INVALID_ARGUMENT input 'x' of signature 'serving_default' has shape [1, 1]; the signature
    takes ...
    """

    def __init__(self, name, function, signature_def):
        self.function = function
        _, specs = function.structured_input_signature
        self.setup(name, signature_def, dict(specs))

    def setup(self, name, signature_def, inputs):
        """What every signature holds: its name, its ``SignatureDef``, its inputs (name ->
        tf.TensorSpec) and outputs (name -> (dtype, shape), from the SignatureDef)."""
        self.name = name
        self.signature_def = signature_def
        self.inputs = inputs
        self.outputs = {key: (tf.as_dtype(info.dtype), tf.TensorShape(info.tensor_shape))
                        for key, info in signature_def.outputs.items()}
        self._lock = threading.Lock()
        self.calls = 0  # model calls (a batch is one call)
        self.rows_run = 0  # rows over all calls

    def __repr__(self):
        return f"Signature({self.name!r}, inputs={sorted(self.inputs)})"

    def _where(self, key):
        return f"input {key!r} of signature {self.name!r}"

    def check_names(self, names):
        """INVALID_ARGUMENT unless `names` are exactly the signature's inputs."""
        names = set(names)
        extra = sorted(names - set(self.inputs))
        missing = sorted(set(self.inputs) - names)
        if extra or missing:
            parts = []
            if missing:
                parts.append(f"missing input(s) {missing}")
            if extra:
                parts.append(f"unexpected input(s) {extra}")
            raise invalid(f"Request inputs do not match signature {self.name!r}: "
                          f"{', '.join(parts)}; it takes {sorted(self.inputs)}")

    def check_dtype(self, key, dtype):
        """INVALID_ARGUMENT unless input `key` may be given as `dtype` (a tf.DType)."""
        want = self.inputs[key].dtype
        if dtype != want:
            raise invalid(f"{self._where(key)} expects {dtype_name(want)} values, got "
                          f"{dtype_name(dtype)}")

    def check(self, inputs):
        """Checks a request's inputs (name -> numpy array) against the signature: names,
        dtypes, shapes and a common batch size. Returns the inputs."""
        self.check_names(inputs)
        for key, value in inputs.items():
            spec = self.inputs[key]
            self.check_dtype(key, _dtype_of(value, spec.dtype))
            if not spec.shape.is_compatible_with(np.shape(value)):
                raise invalid(f"{self._where(key)} has shape {list(np.shape(value))}; the "
                              f"signature takes {shape_text(spec.shape)}")
        self.rows(inputs)
        return inputs

    def rows(self, inputs):
        """The batch size of checked inputs, or None when some input has no batch dimension
        (such a request is never batched with others)."""
        sizes = {}
        for key, value in inputs.items():
            spec = self.inputs[key]
            if spec.shape.rank in (None, 0) or np.ndim(value) == 0:
                return None
            sizes[key] = np.shape(value)[0]
        if len(set(sizes.values())) > 1:
            raise invalid(f"the inputs of signature {self.name!r} must share their first "
                          f"(batch) dimension, got {sizes}")
        return next(iter(sizes.values()), None)

    def run(self, inputs):
        """Runs the signature on checked inputs; returns name -> numpy array."""
        outputs = self.call(inputs)
        with self._lock:
            self.calls += 1
            self.rows_run += self.rows_of(inputs)
        return outputs

    def call(self, inputs):
        """The model call of `run` (name -> numpy array in and out); errors as ServingError."""
        return call_function(self.function, self.name, self.inputs, inputs)

    def rows_of(self, inputs):
        value = next(iter(inputs.values()), None)
        return int(np.shape(value)[0]) if value is not None and np.ndim(value) else 1


def call_function(function, name, specs, inputs):
    """Calls a loaded signature function `name` on numpy `inputs` (converted to the dtypes of
    `specs`, name -> tf.TensorSpec); returns name -> numpy array. TensorFlow's errors become
    `ServingError`s: INVALID_ARGUMENT for inputs the graph refused, INTERNAL otherwise."""
    tensors = {key: tf.constant(value, dtype=specs[key].dtype) for key, value in inputs.items()}
    try:
        outputs = function(**tensors)
    except tf.errors.InvalidArgumentError as error:
        raise invalid(f"signature {name!r} refused the inputs: "
                      f"{first_line(error.message)}") from None
    except tf.errors.OpError as error:
        raise ServingError("INTERNAL", f"signature {name!r} failed: "
                           f"{first_line(error.message)}") from None
    return {key: value.numpy() for key, value in outputs.items()}


def _dtype_of(value, want):
    """The tf.DType of a numpy array; string data (bytes or object arrays of bytes) is string."""
    value = np.asarray(value)
    if value.dtype.kind in "SO":
        if value.dtype.kind == "O" and not all(isinstance(v, bytes) for v in value.flat):
            bad = next(v for v in value.flat if not isinstance(v, bytes))
            return tf.string if want != tf.string else _not_bytes(bad)
        return tf.string
    if value.dtype.kind == "U":
        return tf.string
    return tf.as_dtype(value.dtype)


def _not_bytes(value):
    raise invalid(f"string inputs must be bytes, got {type(value).__name__}")


def first_line(message):
    """The line of a TensorFlow error message that says what went wrong (not "Graph execution
    error:", the node or the stack)."""
    lines = [line.strip() for line in str(message).splitlines()]
    useful = [line for line in lines if line and not line.startswith(("[[", "File ", "<stack"))
              and line not in ("Graph execution error:",)
              and not line.startswith("Detected at node")]
    return (useful or lines or [""])[0]
