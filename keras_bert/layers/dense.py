"""`Dense`: Keras' `Dense` whose LoRA factors train cheaply, survive saving and merge."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="keras_bert")
class Dense(keras.layers.Dense):
    """`keras.layers.Dense` (the projections of `TransformerBlock`) with three changes to
    its LoRA (``enable_lora(rank, lora_alpha=None)``, Keras' own: a frozen kernel ``W``
    plus trainable factors ``lora_kernel_a`` [in, rank] and ``lora_kernel_b`` [rank, out],
    ``B`` zero at first, scaled by ``lora_alpha / rank``):

    * ``call`` computes ``x @ W + scale * (x @ A) @ B``, the LoRA paper's form: the gradient
      reaches ``A`` and ``B`` through two thin matmuls, never through a full ``[in, out]``
      kernel gradient (Keras' ``x @ (W + scale * A @ B)`` needs that one);
    * saving (``.keras``, ``.weights.h5``) keeps ``W``, the bias and both factors as they
      are (Keras' `Dense` saves the merged kernel and loads the factors back as zeros, which
      neither train nor reload as LoRA), so a LoRA model loads back as it was saved;
      weights saved without factors (a model saved before ``enable_lora``) load as the
      kernel with ``B`` zero;
    * ``merge_lora()`` folds ``scale * A @ B`` into the kernel and removes the factors.

    Without LoRA it is Keras' `Dense`, in computation and in its saved weights.

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
    """

    def call(self, inputs, training=None):
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

    def quantize(self, mode=None, type_check=True, config=None):
        # Keras quantizes only its own Dense (a subclass could change `call`). A quantized
        # layer runs Keras' `quantized_call`, never the `call` above: quantizing is Keras'.
        del type_check
        return super().quantize(mode, type_check=False, config=config)

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
            return super().load_own_variables(store)
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
