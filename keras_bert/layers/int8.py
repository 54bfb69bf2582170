"""int8 matmuls on TensorFlow's oneDNN kernel: dynamically quantized uint8 activations times
int8 weights, dequantized to float32 inside the kernel.

Keras' int8 `Dense` multiplies int8 by int8 into int32 with TensorFlow's generic `MatMul`,
which runs several times slower than float32 on CPU. TensorFlow's x86 builds also carry
oneDNN's quantized inner product, ``_QuantizedMatMul`` (the op Intel's quantization tools
write into graphs), which uses the CPU's int8 dot-product instructions (AVX-512 VNNI, or AMX
where oneDNN finds it) and fuses the bias, the dequantization and optionally an activation
or a residual sum. It takes uint8 activations with one scale for the whole tensor and int8
weights with one scale per output column: Keras' int8 kernel and ``kernel_scale`` as they
are.

Activations are quantized at each call as ONNX Runtime's ``quantize_dynamic`` does: the range
``[min(x, 0), max(x, 0)]`` of the whole tensor in 255 steps, ``x ~ low + step * q``, in one
pass over ``x``; an activation's known least value (`ACTIVATION_LOW`) may stand for ``min(x)``,
which makes ``low`` a constant. The
kernel computes ``step * sum_k q[i, k] * w[k, j] / kernel_scale[j] + bias'[j]``; the share of
``low``, ``low * sum_k w[k, j] / kernel_scale[j]``, goes into ``bias'`` from the kernel's
column sums (`column_sums`, computed once per kernel). Results match that integer
arithmetic to float32 rounding.

`available` says whether this TensorFlow has the kernel; `quantize` and `matmul` are the two
halves of a layer's call. Both are inference ops: the kernel has no gradient.

>>> import numpy as np
>>> from keras_bert.layers import int8
>>> x = np.random.default_rng(0).normal(size=(4, 16)).astype("float32")
>>> w = np.random.default_rng(1).normal(size=(16, 3)).astype("float32")
>>> w_scale = 127 / np.abs(w).max(axis=0)              # Keras' kernel_scale
>>> w_q = np.round(w * w_scale).astype("int8")
>>> y = int8.matmul(int8.quantize(x), w_q, w_scale, int8.column_sums(w_q, w_scale))
>>> bool(np.abs(y.numpy() - x @ w).max() < 0.1)
True
"""

import contextlib
import functools

import numpy as np
import tensorflow as tf
from tensorflow.python.eager import context, execute
from tensorflow.python.framework import kernels, op_def_library

OP = "_QuantizedMatMul"

# Activations the kernel applies after its bias (oneDNN post-ops), by BertConfig.hidden_act
# names.
ACTIVATIONS = {"gelu": "GeluExact", "gelu_tanh": "GeluApproximate", "relu": "Relu",
               "tanh": "Tanh", "sigmoid": "Sigmoid"}
# The least value of each activation (GELU's, -0.16997 at -0.75, rounded down): a lower
# bound of its output for `quantize`, whose offset then is a constant.
ACTIVATION_LOW = {"gelu": -0.1701, "gelu_tanh": -0.1701, "relu": 0.0, "tanh": -1.0,
                  "sigmoid": 0.0}

# TensorFlow runs the kernel on one thread when its operands fit in the CPU's L2 cache
# (``rows * n + k * (rows + n)`` bytes below it: ``ExecuteSingleThreadedGemm`` in its oneDNN
# integration); x86 server CPUs have 1-2 MiB of L2 per core. Kernels of fewer bytes leave the
# second core idle at a few rows (see `TransformerBlock`'s feed-forward halves).
SINGLE_THREAD_BYTES = 1 << 20

# Read when a call is traced: whether the kernel may keep its reordered copy of the weights
# between calls (see `constant_weights`).
_CONSTANT_WEIGHTS = False


class NoGradientError(LookupError):
    """A gradient was asked of the int8 kernel, which has none (its calls are inference).

    >>> from keras_bert.layers import int8
    >>> issubclass(int8.NoGradientError, LookupError)  # what TensorFlow raises for no gradient
    True
    """


def _no_gradient(op, *grads):
    del op, grads
    raise NoGradientError(
        "The int8 kernel (keras_bert.layers.int8) of an int8 model's inference call has no "
        "gradient. Call the model with training=True to run Keras' int8 path, which has "
        "gradients for the inputs.")


try:
    tf.RegisterGradient(OP)(_no_gradient)
except KeyError:  # registered already (this module imported twice under another name)
    pass


@functools.lru_cache(maxsize=None)
def available():
    """True when this TensorFlow has the CPU kernel of ``_QuantizedMatMul`` for uint8 x int8
    -> float32 (TensorFlow's x86 builds, which include oneDNN; not the macOS arm64 or Linux
    aarch64 builds)."""
    try:
        registered = kernels.get_registered_kernels_for_op(OP).kernel
    except Exception:  # noqa: BLE001 - an op this TensorFlow does not define
        return False
    want = {"T1": tf.quint8, "T2": tf.qint8, "Tbias": tf.float32, "Tout": tf.float32}
    for kernel in registered:
        allowed = {c.name: set(c.allowed_values.list.type) for c in kernel.constraint}
        if kernel.device_type == "CPU" and all(
                dtype.as_datatype_enum in allowed.get(name, ()) for name, dtype in want.items()):
            return True
    return False


@contextlib.contextmanager
def constant_weights():
    """Calls traced inside the block let the kernel reorder the int8 weights for the CPU once
    and keep that copy (oneDNN's weight cache): for graphs whose weights never change after
    their first call, such as an exported SavedModel. A graph traced this way keeps using the
    first weights it saw if its variables are assigned later."""
    global _CONSTANT_WEIGHTS
    previous, _CONSTANT_WEIGHTS = _CONSTANT_WEIGHTS, True
    try:
        yield
    finally:
        _CONSTANT_WEIGHTS = previous


def activate(name, x):
    """The `ACTIVATIONS` activation ``name`` of ``x``, in plain TensorFlow ops."""
    if name in ("gelu", "gelu_tanh"):
        return tf.nn.gelu(x, approximate=name == "gelu_tanh")
    return {"relu": tf.nn.relu, "tanh": tf.tanh, "sigmoid": tf.sigmoid}[name](x)


class Quantized(tuple):
    """An activation quantized by `quantize`: ``(values, low, width)``, uint8 ``values``
    (as ``quint8``) ``[rows, k]`` and float32 scalars, ``x ~ low + width / 255 * values``.

    >>> from keras_bert.layers import int8
    >>> q = int8.quantize([[-1.0, 0.0, 3.0]])
    >>> float(q.low), float(q.width), q.values.numpy().tolist()
    (-1.0, 4.0, [[0, 64, 255]])
    """

    __slots__ = ()

    def __new__(cls, values, low, width):
        return super().__new__(cls, (values, low, width))

    values = property(lambda self: self[0])
    low = property(lambda self: self[1])
    width = property(lambda self: self[2])


def quantize(x, low=None):
    """`Quantized` uint8 of the float32 ``x`` ``[rows, k]``: one range for the whole tensor,
    ``[min(x, 0), max(x, 0)]``, in 255 equal steps, rounded to nearest. ``low``: a known
    lower bound of ``x`` (a Python float, e.g. an activation's least value: `ACTIVATION_LOW`)
    in place of ``min(x)``; values below it clamp to it."""
    x = tf.convert_to_tensor(x, tf.float32)
    # (With 0 in the range, an empty x's range is [0, 0].)
    low = tf.minimum(tf.reduce_min(x), 0.0) if low is None else min(float(low), 0.0)
    # MIN_COMBINED computes round((x - low) * 255 / (high - low)) in one pass over x (a
    # range narrower than 1e-7 widened). TensorFlow's own kernel: oneDNN's, which TensorFlow
    # substitutes for the other modes, costs more than the work on small tensors.
    values, _, high = tf.raw_ops.QuantizeV2(
        input=x, min_range=low, max_range=tf.maximum(tf.reduce_max(x), 0.0), T=tf.quint8,
        mode="MIN_COMBINED", round_mode="HALF_AWAY_FROM_ZERO", ensure_minimum_range=1e-7)
    return Quantized(values, low, high - low)


def column_sums(kernel, kernel_scale):
    """``sum_k kernel[k, j] / kernel_scale[j]`` for each output column ``j`` (float32
    ``[n]``): the share of an activation's ``low`` in each output, per unit of ``low``.
    ``kernel`` is int8 ``[k, n]``, ``kernel_scale`` Keras' (``kernel ~ w * kernel_scale``)."""
    sums = tf.reduce_sum(tf.cast(kernel, tf.float32), axis=0)
    return sums / tf.cast(kernel_scale, tf.float32)


def kernel_range(kernel_scale):
    """Each column's float range of an int8 kernel, ``127 / kernel_scale``: what `matmul`
    gives the kernel. A NumPy array in, one out (computed at trace time); else a float32
    tensor."""
    if isinstance(kernel_scale, np.ndarray):
        return np.float32(127.0) / kernel_scale.astype(np.float32)
    return 127.0 / tf.cast(kernel_scale, tf.float32)


_range_of = kernel_range  # (for `matmul`, whose argument of that name hides it)


def matmul(x, kernel, kernel_scale, sums, bias=None, activation=None, addend=None,
           kernel_range=None):
    """``activation(dequantized(x) @ (kernel / kernel_scale) + bias)``, or that ``+ addend``
    without an activation: float32 ``[rows, n]``, one oneDNN kernel.

    Args:
        x: a `Quantized` activation ``[rows, k]`` (`quantize`).
        kernel: the int8 kernel ``[k, n]``.
        kernel_scale: float32 ``[n]``, Keras' (``kernel ~ w * kernel_scale``).
        sums: `column_sums` of the kernel, float32 ``[n]``.
        bias: float32 ``[n]`` or None.
        activation: None or an `ACTIVATIONS` name.
        addend: None or float32 ``[rows, n]`` (a residual), added last.
        kernel_range: `kernel_range` of ``kernel_scale``, made once (then ``kernel_scale``
            is not read): the kernel keys its cache of oneDNN primitives on the address of
            this tensor, so a range computed in each call builds a new primitive in each
            call (a graph whose weights are variables; a frozen graph folds it).
    """
    values, low, width = x
    offset = low * tf.convert_to_tensor(sums, tf.float32)
    bias = offset if bias is None else tf.cast(bias, tf.float32) + offset
    kernel = tf.bitcast(tf.convert_to_tensor(kernel, tf.int8), tf.qint8)
    # Each column's float range: the kernel's weight scale is max(|min_b|, |max_b|) / 127.
    w_range = tf.convert_to_tensor(
        kernel_range if kernel_range is not None else _range_of(kernel_scale), tf.float32)
    fused, extra = ["BiasAdd"], []
    if activation is not None:
        if addend is not None:
            raise ValueError("matmul fuses an activation or an addend, not both")
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation {activation!r} is not one of {sorted(ACTIVATIONS)}")
        fused.append(ACTIVATIONS[activation])
    elif addend is not None:
        fused.append("Add")
        extra.append(tf.convert_to_tensor(addend, tf.float32))
    fused.append("Dequantize")
    # The kernel's activation scale is max(|min_a|, |max_a|) / 255 in SCALED mode.
    inputs = [values, kernel, bias] + extra + [tf.constant(0.0), width, w_range, w_range]
    return _quantized_matmul(inputs, fused)


def _quantized_matmul(inputs, fused_ops):
    """``_QuantizedMatMul`` (no Python wrapper in TensorFlow): quint8 x qint8 -> float32."""
    attrs = dict(T1=tf.quint8, T2=tf.qint8, Tbias=tf.float32, Tout=tf.float32, U=tf.float32,
                 transpose_a=False, transpose_b=False, is_weight_const=_CONSTANT_WEIGHTS,
                 is_bias_const=False, fused_ops=list(fused_ops), input_quant_mode="SCALED",
                 output_quant_mode="SCALED", leakyrelu_alpha=0.2,
                 Tdevice_outputs=[tf.float32], Thost_outputs=[])
    if context.executing_eagerly():
        flat = []
        for name, value in attrs.items():
            if isinstance(value, tf.DType):
                value = value.as_datatype_enum
            elif name.startswith("T"):  # a list of types
                value = [t.as_datatype_enum for t in value]
            flat += [name, value]
        flat += ["Tdevice_inputs", [t.dtype.as_datatype_enum for t in inputs],
                 "Thost_inputs", []]
        outputs = execute.execute(OP.encode(), 1, inputs=inputs, attrs=tuple(flat),
                                  ctx=context.context())
        if execute.must_record_gradient():  # as TensorFlow's generated op wrappers do
            execute.record_gradient(OP, inputs, tuple(flat), outputs)
        return outputs[0]
    _, _, op, _ = op_def_library._apply_op_helper(
        OP, name="QuantizedMatMul", device_inputs=inputs, host_inputs=[], **attrs)
    return op.outputs[0]
