"""The optimizers of the BERT recipes: AdamW with warm-up and linear decay, and LAMB.

The original BERT fine-tuning and pre-training recipe (google-research/bert
``optimization.py``, kept by TF Model Garden and Hugging Face):

* the learning rate rises linearly from 0 to its peak over the warm-up steps, then decays
  linearly to ``end_learning_rate`` (0) at ``num_train_steps``. As in the original, the decay
  is measured from step 0 and the warm-up overrides it while it lasts, so the rate right after
  warm-up is ``peak * (1 - num_warmup_steps / num_train_steps)``;
* Adam with decoupled weight decay 0.01 (``epsilon=1e-6``), no weight decay for LayerNorm
  weights and biases;
* gradients clipped to a global norm of 1.0.

LAMB (You et al., 2019, as ``tfa.optimizers.LAMB`` that Model Garden pre-trains with) puts the
weight decay inside the update and scales each variable's update by its trust ratio
``||w|| / ||update||``; LayerNorm weights and biases get neither decay nor the ratio.

Every class here is registered for Keras serialization, so a compiled model saved to
``.keras`` keeps its optimizer, schedule and weight-decay exclusions.
"""


import keras
from keras import ops

from keras_bert import checks

# Substrings of variable names (Keras `variable.path`) that get no weight decay: LayerNorm
# weights (gamma, beta) and every bias, as the original BERT recipe excludes them.
NO_DECAY = ("LayerNorm", "layer_norm", "gamma", "beta", "bias")

OPTIMIZERS = ("adamw", "lamb")




@keras.saving.register_keras_serializable(package="keras_bert")
class LinearWarmupDecay(keras.optimizers.schedules.LearningRateSchedule):
    """Linear warm-up to ``peak_learning_rate``, then linear decay to ``end_learning_rate``.

    ``lr(step) = peak * step / num_warmup_steps`` while ``step < num_warmup_steps``, else
    ``(peak - end) * (1 - min(step, num_train_steps) / num_train_steps) + end`` (the original
    BERT schedule: the decay counts from step 0).

    Example:

    >>> schedule = LinearWarmupDecay(1e-4, num_train_steps=100, num_warmup_steps=10)
    >>> [round(float(schedule(step)), 7) for step in (0, 5, 10, 55, 100, 150)]
    [0.0, 5e-05, 9e-05, 4.5e-05, 0.0, 0.0]
    """

    def __init__(self, peak_learning_rate, num_train_steps, num_warmup_steps=0,
                 end_learning_rate=0.0):
        self.peak_learning_rate = checks.hyperparameter("peak_learning_rate", peak_learning_rate, low=0,
                                          low_inclusive=False)
        self.num_train_steps = checks.hyperparameter("num_train_steps", num_train_steps, low=1, integer=True)
        self.num_warmup_steps = checks.hyperparameter("num_warmup_steps", num_warmup_steps, low=0,
                                        high=self.num_train_steps, integer=True)
        self.end_learning_rate = checks.hyperparameter("end_learning_rate", end_learning_rate, low=0,
                                         high=self.peak_learning_rate)

    def __call__(self, step):
        step = ops.cast(step, "float32")
        total = float(self.num_train_steps)
        progress = ops.minimum(step, total) / total
        decayed = (self.peak_learning_rate - self.end_learning_rate) * (1.0 - progress)
        decayed = decayed + self.end_learning_rate
        if self.num_warmup_steps == 0:
            return decayed
        warmup = self.peak_learning_rate * step / float(self.num_warmup_steps)
        return ops.where(step < float(self.num_warmup_steps), warmup, decayed)

    def get_config(self):
        return {
            "peak_learning_rate": self.peak_learning_rate,
            "num_train_steps": self.num_train_steps,
            "num_warmup_steps": self.num_warmup_steps,
            "end_learning_rate": self.end_learning_rate,
        }


class _NoDecayMixin:
    """Keeps the names excluded from weight decay in the config, so they survive saving."""

    # False when the caller gives gradients already summed over the replicas of a
    # tf.distribute strategy (keras_bert.training.pretraining_loop does, so that clipping sees the
    # global gradient: Keras clips each replica's gradient before summing them).
    aggregate_gradients = True

    def _all_reduce_sum_gradients(self, grads_and_vars):
        if not self.aggregate_gradients:
            return list(grads_and_vars)
        return super()._all_reduce_sum_gradients(grads_and_vars)

    def _set_no_decay(self, exclude_from_weight_decay):
        if isinstance(exclude_from_weight_decay, str):
            exclude_from_weight_decay = [exclude_from_weight_decay]
        self.no_decay = tuple(exclude_from_weight_decay or ())
        if self.no_decay:
            self.exclude_from_weight_decay(var_names=list(self.no_decay))

    def _use_weight_decay(self, variable):
        # Keras matches the patterns against the short name ("bias"); match the full path
        # too ("encoder/transformer_block_0/attention_layer_norm/gamma").
        if any(name in getattr(variable, "path", "") for name in self.no_decay):
            return False
        return super()._use_weight_decay(variable)

    @property
    def learning_rate_schedule(self):
        """The `LearningRateSchedule` this optimizer follows, or None for a constant rate."""
        schedule = self._learning_rate
        return schedule if isinstance(schedule, keras.optimizers.schedules.LearningRateSchedule) \
            else None

    def load_own_variables(self, store):
        # A model saved without its optimizer state (Task.save(include_optimizer=False))
        # has none to load: the optimizer starts afresh, which is no cause for Keras' warning
        # that the variable counts differ. Nor is one saved before its optimizer was built
        # (compiled, not trained yet; quantized: Task.quantize gives a fresh optimizer): it
        # holds the variables an optimizer has before it is built (the step, a constant
        # learning rate), and those are loaded.
        if not len(store.keys()):
            return
        unbuilt = [self.iterations] + (
            [self._learning_rate] if isinstance(self._learning_rate, keras.Variable) else [])
        if len(store.keys()) == len(unbuilt) < len(self.variables):
            for i, variable in enumerate(unbuilt):
                variable.assign(store[str(i)])
            return
        super().load_own_variables(store)

    def _no_decay_config(self, config):
        config["exclude_from_weight_decay"] = list(self.no_decay)
        return config


@keras.saving.register_keras_serializable(package="keras_bert")
class AdamW(_NoDecayMixin, keras.optimizers.AdamW):
    """Keras' AdamW with BERT's defaults: ``weight_decay=0.01``, ``epsilon=1e-6``, gradients
    clipped to a global norm of 1.0, and no weight decay for LayerNorm weights and biases.

    Args:
        exclude_from_weight_decay: substrings of variable paths that get no weight decay
            (default `NO_DECAY`); saved with the optimizer.
        Other arguments are those of `keras.optimizers.AdamW`.

    Example:

    >>> optimizer = AdamW(learning_rate=2e-5)
    >>> optimizer.weight_decay, optimizer.epsilon, optimizer.global_clipnorm
    (0.01, 1e-06, 1.0)
    """

    def __init__(self, learning_rate=2e-5, weight_decay=0.01, beta_1=0.9, beta_2=0.999,
                 epsilon=1e-6, global_clipnorm=1.0, exclude_from_weight_decay=NO_DECAY,
                 **kwargs):
        super().__init__(learning_rate=learning_rate, weight_decay=weight_decay, beta_1=beta_1,
                         beta_2=beta_2, epsilon=epsilon, global_clipnorm=global_clipnorm,
                         **kwargs)
        self._set_no_decay(exclude_from_weight_decay)

    def update_step(self, gradient, variable, learning_rate):
        """Keras' Adam step as one fused TensorFlow kernel (``ResourceApplyAdam``: the same
        bias-corrected formula), instead of a chain of element-wise ops over every variable:
        the optimizer step of a BERT fine-tune takes about half the time."""
        if self.amsgrad:
            return super().update_step(gradient, variable, learning_rate)
        import tensorflow as tf

        dtype = variable.dtype
        m = self._momentums[self._get_variable_index(variable)]
        v = self._velocities[self._get_variable_index(variable)]
        step = ops.cast(self.iterations + 1, dtype)
        tf.raw_ops.ResourceApplyAdam(
            var=_handle(variable), m=_handle(m), v=_handle(v),
            beta1_power=ops.power(ops.cast(self.beta_1, dtype), step),
            beta2_power=ops.power(ops.cast(self.beta_2, dtype), step),
            lr=ops.cast(learning_rate, dtype), beta1=ops.cast(self.beta_1, dtype),
            beta2=ops.cast(self.beta_2, dtype), epsilon=ops.cast(self.epsilon, dtype),
            grad=ops.cast(tf.convert_to_tensor(gradient), dtype))

    def get_config(self):
        return self._no_decay_config(super().get_config())


def _handle(variable):
    """The resource handle of a Keras or TensorFlow variable."""
    return variable.handle if hasattr(variable, "handle") else variable.value.handle


@keras.saving.register_keras_serializable(package="keras_bert")
class Lamb(_NoDecayMixin, keras.optimizers.Optimizer):
    """LAMB as BERT pre-training uses it (``tfa.optimizers.LAMB``, Model Garden).

    Per variable: Adam's bias-corrected update ``m_hat / (sqrt(v_hat) + epsilon)``, plus
    ``weight_decay * w`` unless the variable is excluded, scaled by the trust ratio
    ``||w|| / ||update||`` (1 when either norm is 0, and for excluded variables), then
    ``w -= learning_rate * ratio * update``.

    Example:

    >>> import numpy as np
    >>> w = keras.Variable(np.ones((2, 2), "float32"), name="kernel")
    >>> optimizer = Lamb(learning_rate=0.1)
    >>> _ = optimizer.apply_gradients([(np.full((2, 2), 0.5, "float32"), w)])
    >>> w.numpy().round(4)  # update 1 + 0.01 * w = 1.01, times the trust ratio 2 / 2.02
    array([[0.9, 0.9],
           [0.9, 0.9]], dtype=float32)
    """

    def __init__(self, learning_rate=1e-3, weight_decay=0.01, beta_1=0.9, beta_2=0.999,
                 epsilon=1e-6, global_clipnorm=1.0, exclude_from_weight_decay=NO_DECAY,
                 name="lamb", **kwargs):
        # Weight decay is part of the update here, not Keras' decoupled step.
        super().__init__(learning_rate=learning_rate, global_clipnorm=global_clipnorm,
                         name=name, **kwargs)
        self.lamb_weight_decay = checks.hyperparameter("weight_decay", weight_decay, low=0)
        self.beta_1 = checks.hyperparameter("beta_1", beta_1, low=0, high=1)
        self.beta_2 = checks.hyperparameter("beta_2", beta_2, low=0, high=1)
        self.epsilon = checks.hyperparameter("epsilon", epsilon, low=0)
        self._set_no_decay(exclude_from_weight_decay)

    def build(self, var_list):
        if self.built:
            return
        super().build(var_list)
        self._momentums, self._velocities = self.add_optimizer_variables(
            var_list, ["momentum", "velocity"]
        )

    def update_step(self, gradient, variable, learning_rate):
        lr = ops.cast(learning_rate, variable.dtype)
        gradient = ops.cast(gradient, variable.dtype)
        step = ops.cast(self.iterations + 1, variable.dtype)
        m = self._momentums[self._get_variable_index(variable)]
        v = self._velocities[self._get_variable_index(variable)]
        self.assign(m, self.beta_1 * m + (1.0 - self.beta_1) * gradient)
        self.assign(v, self.beta_2 * v + (1.0 - self.beta_2) * ops.square(gradient))
        m_hat = m / (1.0 - ops.power(ops.cast(self.beta_1, variable.dtype), step))
        v_hat = v / (1.0 - ops.power(ops.cast(self.beta_2, variable.dtype), step))
        update = m_hat / (ops.sqrt(v_hat) + self.epsilon)
        if self._use_weight_decay(variable):
            update = update + self.lamb_weight_decay * variable
            w_norm = ops.sqrt(ops.sum(ops.square(variable)))
            u_norm = ops.sqrt(ops.sum(ops.square(update)))
            ratio = ops.where(
                ops.logical_and(w_norm > 0, u_norm > 0), w_norm / ops.maximum(u_norm, 1e-30), 1.0
            )
            update = update * ratio
        self.assign_sub(variable, lr * update)

    def _use_weight_decay(self, variable):
        # Decay and trust ratio follow the same exclusions (Keras' own weight_decay is None).
        if any(name in getattr(variable, "path", "") for name in self.no_decay):
            return False
        pattern = getattr(self, "_exclude_from_weight_decay_pattern", None)
        return not (pattern is not None and pattern.search(variable.name))

    def get_config(self):
        config = super().get_config()
        config.update({"weight_decay": self.lamb_weight_decay, "beta_1": self.beta_1,
                       "beta_2": self.beta_2, "epsilon": self.epsilon})
        return self._no_decay_config(config)


def create_optimizer(learning_rate, num_train_steps, num_warmup_steps=None, warmup_ratio=None,
                     optimizer="adamw", weight_decay=0.01, end_learning_rate=0.0,
                     beta_1=0.9, beta_2=0.999, epsilon=1e-6, global_clipnorm=1.0,
                     exclude_from_weight_decay=NO_DECAY):
    """The BERT optimizer: AdamW (fine-tuning, original pre-training) or LAMB, on the
    `LinearWarmupDecay` schedule.

    Args:
        learning_rate: the peak learning rate (reached at the end of warm-up).
        num_train_steps: total optimizer steps; the rate is ``end_learning_rate`` from there.
        num_warmup_steps: linear warm-up steps; or give ``warmup_ratio`` (share of
            ``num_train_steps``) instead. Default: no warm-up.
        optimizer: ``"adamw"`` or ``"lamb"``.
        weight_decay: decoupled weight decay rate (not applied to `NO_DECAY` variables).
        global_clipnorm: clip gradients to this global norm (None: no clipping).

    Example:

    >>> optimizer = create_optimizer(5e-5, num_train_steps=1000, warmup_ratio=0.1)
    >>> type(optimizer).__name__, optimizer.learning_rate_schedule.num_warmup_steps
    ('AdamW', 100)
    """
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {optimizer!r}.")
    num_train_steps = checks.hyperparameter("num_train_steps", num_train_steps, low=1, integer=True)
    if num_warmup_steps is not None and warmup_ratio is not None:
        raise ValueError("Give num_warmup_steps or warmup_ratio, not both.")
    if warmup_ratio is not None:
        warmup_ratio = checks.hyperparameter("warmup_ratio", warmup_ratio, low=0, high=1)
        num_warmup_steps = int(round(warmup_ratio * num_train_steps))
    schedule = LinearWarmupDecay(learning_rate, num_train_steps, num_warmup_steps or 0,
                                 end_learning_rate)
    cls = AdamW if optimizer == "adamw" else Lamb
    return cls(learning_rate=schedule, weight_decay=weight_decay, beta_1=beta_1, beta_2=beta_2,
               epsilon=epsilon, global_clipnorm=global_clipnorm,
               exclude_from_weight_decay=exclude_from_weight_decay)
