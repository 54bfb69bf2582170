"""`Dense`: Keras' `Dense` whose LoRA factors train cheaply, survive saving and merge, and
whose int8 inference runs on oneDNN's int8 kernel."""

import keras
import tensorflow as tf
from keras import ops

from keras_bert.checks import check_layer_kwargs, keyword_parameters
from keras_bert.layers import int8, serving_graph

# False: int8 layers run Keras' own int8 path everywhere (the tests compare both paths).
# Read when a call is traced: a tf.function traced before keeps the path it was traced with.
INT8_KERNEL = True

# Keras activations the int8 kernel fuses, by int8.ACTIVATIONS' names.
_FUSED_ACTIVATIONS = {keras.activations.gelu: "gelu", keras.activations.relu: "relu",
                      keras.activations.tanh: "tanh", keras.activations.sigmoid: "sigmoid"}


@keras.saving.register_keras_serializable(package="keras_bert")
class Dense(keras.layers.Dense):
    """`keras.layers.Dense` (the projections of `TransformerBlock`, `Pooler` and
    `MaskedLMHead`) with three changes to its LoRA (``enable_lora(rank, lora_alpha=None)``,
    Keras' own: a frozen kernel ``W`` plus trainable factors ``lora_kernel_a`` [in, rank]
    and ``lora_kernel_b`` [rank, out], ``B`` zero at first, scaled by ``lora_alpha /
    rank``):

    * ``call`` computes ``x @ W + scale * (x @ A) @ B``, the LoRA paper's form: the gradient
      reaches ``A`` and ``B`` through two thin matmuls, never through a full ``[in, out]``
      kernel gradient (Keras' ``x @ (W + scale * A @ B)`` needs that one);
    * saving (``.keras``, ``.weights.h5``) keeps ``W``, the bias and both factors as they
      are (Keras' `Dense` saves the merged kernel and loads the factors back as zeros, which
      neither train nor reload as LoRA), so a LoRA model loads back as it was saved;
      weights saved without factors (a model saved before ``enable_lora``) load as the
      kernel with ``B`` zero;
    * ``merge_lora()`` folds ``scale * A @ B`` into the kernel and removes the factors.

    Without LoRA it is Keras' `Dense`, in computation and in its saved weights, except that
    once quantized to int8 (``quantize("int8")``, e.g. from ``model.quantize("int8")``) its
    inference calls run on oneDNN's int8 kernel (`keras_bert.layers.int8`) instead of Keras'
    int8 matmul, several times faster on x86 CPUs:

    * ``quantize("int8")`` quantizes the kernel as Keras does (int8, one scale per output
      column) and also computes the kernel's column sums (``kernel_column_sums``, a
      non-trainable variable derived from the kernel, never saved: loading weights computes
      it again, so `.keras` files hold Keras' int8 variables and load either way);
    * an inference call (``training`` not True, float32 compute dtype, Keras' default int8
      config, a TensorFlow with the kernel: `int8.available`) quantizes its input to uint8
      with one range for the whole tensor (as ONNX Runtime's dynamic quantization does) and
      runs the kernel, which fuses the bias and the activation (GELU, ReLU, tanh, sigmoid).
      Keras' own int8 path quantizes each row of the input symmetrically, so the two round
      differently; both are within int8's error of the float layer;
    * training (``training=True``, as in ``fit``) runs Keras' int8 path, which has gradients
      for the inputs (an inference call has none: `int8.NoGradientError`). Set
      ``keras_bert.layers.dense.INT8_KERNEL = False`` to run Keras' path always.

    Example:

    >>> import numpy as np
    >>> from keras_bert.layers.dense import Dense
    >>> layer = Dense(3)
    >>> x = np.random.default_rng(0).normal(size=(2, 4)).astype("float32")
    >>> plain = layer(x).numpy()
    >>> layer.enable_lora(rank=2)
    >>> _ = layer.lora_kernel_b.assign(np.full((2, 3), 0.1, "float32"))
    >>> with_lora = layer(x).numpy()
    >>> layer.merge_lora()
    >>> layer.lora_enabled, [v.name for v in layer.weights]
    (False, ['kernel', 'bias'])
    >>> bool(np.allclose(layer(x).numpy(), with_lora, atol=1e-6))
    True
    >>> layer.quantize("int8")                      # its inference calls: the int8 kernel
    >>> bool(np.abs(layer(x).numpy() - with_lora).max() < 0.05)
    True
    """

    def __init__(self, units, **kwargs):
        check_layer_kwargs("Dense", kwargs,
                           keyword_parameters(keras.layers.Dense.__init__, skip=("units",)))
        super().__init__(units, **kwargs)

    def call(self, inputs, training=None):
        if (serving_graph.inference(training) and serving_graph.constants()
                and not self.lora_enabled and self.quantization_mode is None):
            # A serving export's graph: Keras' computation, the weights read at trace time
            # in the compute dtype (`serving_graph.weight`: a mixed-precision layer casts
            # no weight per call).
            x = ops.matmul(inputs, serving_graph.weight(self._kernel, self.compute_dtype))
            if self.bias is not None:
                x = ops.add(x, serving_graph.weight(self.bias, self.compute_dtype))
            return self.activation(x) if self.activation is not None else x
        if not self.lora_enabled or self.quantization_mode is not None:
            return super().call(inputs, training=training)
        x = ops.matmul(inputs, self._kernel)
        if self.bias is not None:
            x = ops.add(x, self.bias)
        # [..., in] @ [in, rank] @ [rank, out]: the low-rank update, never a full kernel.
        low_rank = ops.matmul(ops.matmul(inputs, ops.cast(self.lora_kernel_a, inputs.dtype)),
                              ops.cast(self.lora_kernel_b, inputs.dtype))
        x = ops.add(x, ops.multiply(ops.cast(self.lora_scale, x.dtype), low_rank))
        if self.activation is not None:
            x = self.activation(x)
        return x

    def __delattr__(self, name):
        # Keras' Layer.__delattr__ untracks a variable and then runs gc.collect(), a scan of
        # the whole heap (0.2-0.6 s once TensorFlow is imported), for every Dense that
        # `quantize` makes int8 (it deletes the float kernel). Here the variable is untracked
        # and deleted alike, without the scan: the model's `quantize` collects once at the
        # end (`keras_bert.models.quantization.quantizing`).
        value = getattr(self, name, None)
        if isinstance(value, keras.Variable):
            self._untrack_variable(value)
            super(keras.layers.Layer, self).__delattr__(name)
            return
        super().__delattr__(name)

    def quantize(self, mode=None, type_check=True, config=None):
        # Keras quantizes only its own Dense (a subclass could change `call`). A quantized
        # layer runs Keras' `quantized_call`, never the `call` above: quantizing is Keras',
        # and int8's calls go to `_int8_call` below.
        del type_check
        super().quantize(mode, type_check=False, config=config)
        if mode == "int8":
            self._update_column_sums()

    @property
    def lora_scale(self):
        """``lora_alpha / rank``, what the factors' product is multiplied by."""
        return self.lora_alpha / self.lora_rank

    def merged_kernel(self):
        """The kernel with the LoRA update folded in, ``W + scale * A @ B`` (float32, in the
        kernel's dtype), as a tensor; the kernel itself without LoRA."""
        if not self.lora_enabled:
            return ops.convert_to_tensor(self._kernel)
        delta = ops.matmul(self.lora_kernel_a.value, self.lora_kernel_b.value)
        merged = ops.add(ops.cast(self._kernel.value, "float32"),
                         ops.multiply(self.lora_scale, delta))
        return ops.cast(merged, self._kernel.dtype)

    def merge_lora(self):
        """Folds the LoRA update into the kernel (``W <- W + scale * A @ B``) and removes the
        factors: the same outputs from one plain matmul. The kernel keeps its ``trainable``
        flag (frozen, as LoRA left it). ValueError when LoRA is not enabled or the layer is
        quantized."""
        if not self.lora_enabled:
            raise ValueError(f"Dense '{self.name}': LoRA is not enabled, nothing to merge.")
        if self.quantization_mode is not None:
            raise ValueError(f"Dense '{self.name}': merging LoRA into a "
                             f"{self.quantization_mode}-quantized kernel is not supported.")
        self._kernel.assign(self.merged_kernel())
        del self.lora_kernel_a  # Layer.__delattr__ untracks the variables
        del self.lora_kernel_b
        self.lora_enabled = False
        self.lora_rank = None
        self.lora_alpha = None

    # ------------------------------------------------------------ saving
    def _lora_variables(self):
        variables = [self._kernel] + ([self.bias] if self.bias is not None else [])
        return variables, [self.lora_kernel_a, self.lora_kernel_b]

    def save_own_variables(self, store):
        if not self.lora_enabled or self.quantization_mode is not None:
            return super().save_own_variables(store)
        base, factors = self._lora_variables()
        for i, variable in enumerate(base + factors):
            store[str(i)] = variable

    def load_own_variables(self, store):
        if not self.lora_enabled or self.quantization_mode is not None:
            super().load_own_variables(store)
            if self.quantization_mode == "int8" and self.built:
                self._update_column_sums()
            return
        base, factors = self._lora_variables()
        count = len(store.keys())
        if count not in (len(base), len(base) + len(factors)):
            raise ValueError(
                f"Dense '{self.name}' with LoRA takes {len(base)} saved variables (kernel"
                f"{', bias' if self.bias is not None else ''}) or {len(base) + 2} (with the "
                f"LoRA factors), but the file holds {count}.")
        variables = (base + factors)[:count]
        for i, variable in enumerate(variables):
            value = store[str(i)]
            if tuple(value.shape) != tuple(variable.shape):
                raise ValueError(
                    f"Dense '{self.name}': the saved {variable.name} has shape "
                    f"{tuple(value.shape)}, the layer's is {tuple(variable.shape)} (a LoRA "
                    "file of another rank?).")
            variable.assign(value)
        if count == len(base):  # a kernel saved without LoRA: no update on top of it yet
            self.lora_kernel_b.assign(ops.zeros(self.lora_kernel_b.shape))

    # ------------------------------------------------------------ int8
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

    def int8_kernel_applies(self, training=None):
        """Whether a call with this ``training`` runs on the int8 kernel (see the class
        docstring): None or False (a tensor, whose value is not known when tracing: no)."""
        inference = training is None or (isinstance(training, bool) and not training)
        return (INT8_KERNEL and self.quantization_mode == "int8" and inference
                and self.compute_dtype == "float32" and _default_int8(self.quantization_config)
                and int8.available())

    def int8_matmul(self, x, activation=None, addend=None, low=None):
        """The layer's output for a 2-D ``x`` ``[rows, units_in]`` on the int8 kernel:
        ``activation(x @ kernel + bias) + addend``. ``x`` is float32 or already quantized
        (`int8.quantize`, to share one quantization among layers with the same input).
        ``activation`` (an `int8.ACTIVATIONS` name) applies to this call in place of the
        layer's own, which must then be None; ``addend`` (``[rows, units]``, e.g. a
        residual) is summed last, inside the kernel; ``low``, a known lower bound of a float
        ``x`` (a Python float, e.g. `int8.ACTIVATION_LOW`), for its quantization
        (`int8.quantize`). Only where `int8_kernel_applies`."""
        own = self.activation if self.activation is not keras.activations.linear else None
        if activation is not None and own is not None:
            raise ValueError(f"{self.name} has its own activation; pass activation=None")
        if own is not None:
            activation = _FUSED_ACTIVATIONS.get(own)
        quantized = x if isinstance(x, int8.Quantized) else int8.quantize(x, low=low)
        fused = not self.lora_enabled and (own is None or activation is not None)
        if fused and (activation is None or addend is None):
            weights = self._kernel, self.kernel_scale, self.kernel_column_sums, self.bias
            kernel_range = None
            if serving_graph.constants():
                # A serving export's graph: the weights as constants of the graph where the
                # call is traced (a cond around the call then takes no tensor for them), the
                # kernel's range in place of its scale, computed once
                kernel_range = serving_graph.tensor(
                    int8.kernel_range(serving_graph.value(self.kernel_scale)))
                weights = [None if w is None or w is self.kernel_scale
                           else serving_graph.constant(w) for w in weights]
            kernel, scale, sums, bias = weights
            return int8.matmul(quantized, kernel, scale, sums, bias=bias,
                               activation=activation, addend=addend, kernel_range=kernel_range)
        y = int8.matmul(quantized, self._kernel, self.kernel_scale, self.kernel_column_sums,
                        bias=self.bias)
        if self.lora_enabled:
            if isinstance(x, int8.Quantized):
                raise ValueError(f"{self.name} has LoRA enabled: pass the float input")
            lora = tf.matmul(tf.matmul(x, self.lora_kernel_a), self.lora_kernel_b)
            y = y + self.lora_scale * lora
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
