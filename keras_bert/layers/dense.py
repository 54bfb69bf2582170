"""`Dense`: Keras' `Dense` whose int8 inference runs on oneDNN's int8 kernel."""

import keras
import tensorflow as tf

from keras_bert.layers import int8

# False: int8 layers run Keras' own int8 path everywhere (the tests compare both paths).
# Read when a call is traced: a tf.function traced before keeps the path it was traced with.
INT8_KERNEL = True

# Keras activations the int8 kernel fuses, by int8.ACTIVATIONS' names.
_FUSED_ACTIVATIONS = {keras.activations.gelu: "gelu", keras.activations.relu: "relu",
                      keras.activations.tanh: "tanh", keras.activations.sigmoid: "sigmoid"}


@keras.saving.register_keras_serializable(package="keras_bert")
class Dense(keras.layers.Dense):
    """`keras.layers.Dense`, the same layer in every way (its arguments, variables, `.keras`
    files, ``enable_lora``, ``quantize``), except that once quantized to int8 its inference
    calls run on oneDNN's int8 kernel (`keras_bert.layers.int8`) instead of Keras' int8
    matmul: several times faster on x86 CPUs.

    ``quantize("int8")`` quantizes the kernel as Keras does (int8, one scale per output
    column) and also computes the kernel's column sums (``kernel_column_sums``, a
    non-trainable variable that is derived, never saved: it is computed again when the
    weights are loaded). At inference (``training`` not True, float32 compute dtype, a
    TensorFlow with the kernel: `int8.available`), each call quantizes its input to uint8
    with one scale for the whole tensor and an integer zero point (as ONNX Runtime's dynamic
    quantization does) and calls the kernel, which fuses the bias and the activation (GELU,
    ReLU, tanh, sigmoid). Keras' own int8 path quantizes each row of the input symmetrically,
    so the two round differently; both are within int8's error of the float layer. While
    training (``training=True``, as in ``fit``), with a quantization config other than
    Keras' default int8 one, in another compute dtype or without the kernel, the layer runs
    Keras' int8 path, which has gradients. Set ``keras_bert.layers.dense.INT8_KERNEL =
    False`` to run Keras' path always.

    BERT's layers (`TransformerBlock`, `Pooler`, `MaskedLMHead`) build their projections
    from this class, so ``model.quantize("int8")`` on any keras_bert model reaches it.

    Example:

    >>> import numpy as np
    >>> from keras_bert.layers import Dense
    >>> layer = Dense(4)
    >>> x = np.random.default_rng(0).normal(size=(3, 8)).astype("float32")
    >>> y = layer(x)
    >>> layer.quantize("int8")
    >>> bool(np.abs(layer(x).numpy() - y.numpy()).max() < 0.05)
    True
    """

    def quantize(self, mode=None, type_check=True, config=None):
        # Keras refuses subclasses by default (a subclass may compute something else); this
        # one computes Dense's output in every mode.
        del type_check
        super().quantize(mode, type_check=False, config=config)
        if mode == "int8":
            self._update_column_sums()

    def _int8_build(self, kernel_shape, config=None):
        super()._int8_build(kernel_shape, config)
        self.kernel_column_sums = self.add_weight(
            name="kernel_column_sums", shape=(self.units,), initializer="zeros",
            trainable=False)

    def _update_column_sums(self):
        self.kernel_column_sums.assign(int8.column_sums(self._kernel, self.kernel_scale))

    def _check_load_own_variables(self, store):
        # The saved variables are Keras' (kernel, bias, kernel_scale); the column sums are
        # derived from them after loading.
        sums = getattr(self, "kernel_column_sums", None)
        own = [v for v in self._trainable_variables + self._non_trainable_variables
               if v is not sums]
        if len(store.keys()) != len(own):
            raise ValueError(
                f"Layer '{self.name}' expected {len(own)} variables, but received "
                f"{len(store.keys())} variables during loading. Expected: "
                f"{[v.name for v in own]}")

    def load_own_variables(self, store):
        super().load_own_variables(store)
        if self.quantization_mode == "int8" and self.built:
            self._update_column_sums()

    def int8_kernel_applies(self, training=None):
        """Whether an inference call runs on the int8 kernel (see the class docstring)."""
        return (INT8_KERNEL and self.quantization_mode == "int8" and training is not True
                and self.compute_dtype == "float32" and _default_int8(self.quantization_config)
                and int8.available())

    def int8_matmul(self, x, activation=None, addend=None):
        """The layer's output for a 2-D ``x`` ``[rows, units_in]`` on the int8 kernel:
        ``activation(x @ kernel + bias) + addend``. ``x`` is float32 or already quantized
        (`int8.quantize`, to share one quantization among layers with the same input).
        ``activation`` (an `int8.ACTIVATIONS` name) applies to this call in place of the
        layer's own, which must then be None; ``addend`` (``[rows, units]``, e.g. a
        residual) is summed last, inside the kernel. Only where `int8_kernel_applies`."""
        own = self.activation if self.activation is not keras.activations.linear else None
        if activation is not None and own is not None:
            raise ValueError(f"{self.name} has its own activation; pass activation=None")
        if own is not None:
            activation = _FUSED_ACTIVATIONS.get(own)
        quantized = x if isinstance(x, int8.Quantized) else int8.quantize(x)
        fused = not self.lora_enabled and (own is None or activation is not None)
        if fused and (activation is None or addend is None):
            return int8.matmul(quantized, self._kernel, self.kernel_scale,
                               self.kernel_column_sums, bias=self.bias, activation=activation,
                               addend=addend)
        y = int8.matmul(quantized, self._kernel, self.kernel_scale, self.kernel_column_sums,
                        bias=self.bias)
        if self.lora_enabled:
            if isinstance(x, int8.Quantized):
                raise ValueError(f"{self.name} has LoRA enabled: pass the float input")
            lora = tf.matmul(tf.matmul(x, self.lora_kernel_a), self.lora_kernel_b)
            y = y + (self.lora_alpha / self.lora_rank) * lora
        if own is not None:
            y = own(y)
        elif activation is not None:
            y = int8.activate(activation, y)
        return y if addend is None else y + addend

    def _int8_call(self, inputs, training=None):
        if not self.int8_kernel_applies(training):
            return super()._int8_call(inputs, training=training)
        x = tf.convert_to_tensor(inputs, self.compute_dtype)
        if x.shape.rank == 2:
            return self.int8_matmul(x)
        rows = tf.reshape(x, [-1, x.shape[-1]])
        y = self.int8_matmul(rows)
        return tf.reshape(y, tf.concat([tf.shape(x)[:-1], [self.units]], 0))


def _default_int8(config):
    """Keras' default int8 quantization (or None): per-column weights, dynamic inputs."""
    if config is None:
        return True
    weights = getattr(config, "weight_quantizer", None)
    inputs = getattr(config, "activation_quantizer", None)
    return weights is None and isinstance(inputs, keras.quantizers.AbsMaxQuantizer)
