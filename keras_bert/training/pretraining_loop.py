"""The pre-training step and loop of `BertPretrainer` on any `tf.distribute` strategy.

A custom loop, not Keras ``fit`` (which crashes under `MultiWorkerMirroredStrategy` in Keras
3.15): each replica runs `PretrainingLoop.replica_step` on its part of the global batch
inside ``strategy.run``; ``steps_per_loop`` steps run inside one `tf.function`.

The loss is the original ``run_pretraining.py``'s, over the GLOBAL batch: the masked-LM
cross-entropy summed over real predictions (``masked_lm_weights``) and divided by their
number in the whole global batch (an all-reduce of the weights), plus the next-sentence
cross-entropy averaged over the global batch. Each replica's loss is its share of that sum,
so the gradients summed over replicas are those of one device on the whole batch. The
gradients are summed by one all-reduce here, before the optimizer: Keras would clip each
replica's gradient before summing (the recipe clips the global gradient's norm, 1.0) and,
with fp16, let replicas disagree on skipping a step.

XLA (``jit_compile``) compiles only the per-replica forward and backward pass
(`loss_and_gradients`); the all-reduce and the optimizer stay outside, as XLA on the whole
step fails under `MirroredStrategy` on CPUs.
"""

import numpy as np
import tensorflow as tf

from keras_bert.config import INPUT_NAMES

# Sums kept per replica (SyncOnRead variables; read = sum over replicas): the step losses,
# then the masked-LM numerator, weight and hits, then next-sentence loss, hits, sequences.
_TRAIN_SUMS = ("loss", "mlm_loss", "mlm_weight", "mlm_correct", "nsp_loss", "nsp_correct",
               "sequences")
MLM_EPSILON = 1e-5  # as run_pretraining.py: sum(loss * weight) / (sum(weight) + 1e-5)


def _sums_variable(size, name):
    return tf.Variable(tf.zeros([size], tf.float32), trainable=False, name=name,
                       synchronization=tf.VariableSynchronization.ON_READ,
                       aggregation=tf.VariableAggregation.SUM)


class PretrainingLoop:
    """Trains a `keras_bert.BertPretrainer` under a `tf.distribute` strategy.

    Args:
        model: a `BertPretrainer` built in ``strategy.scope()``.
        optimizer: from `keras_bert.training.create_optimizer` (optionally wrapped in
            `keras.optimizers.LossScaleOptimizer` for fp16), made in ``strategy.scope()``.
        strategy: the `tf.distribute.Strategy` (default: the current one).
        global_batch_size: sequences per step over all replicas.
        jit_compile: XLA for the per-replica forward and backward pass.

    Batches are dicts of ``input_word_ids``, ``input_mask``, ``input_type_ids``,
    ``masked_lm_positions``, ``masked_lm_ids``, ``masked_lm_weights`` and
    ``next_sentence_labels`` (`keras_bert.data.pretraining.record_input`).

    ``train_loop(iterator, steps)`` runs ``steps`` steps in one `tf.function`;
    ``train_step(batch)`` one step on a given batch (a distributed batch, or with a
    single-replica strategy a plain one: what a benchmark times); ``take_train_metrics()``
    returns the loss, accuracies and counts since the last call; ``evaluate(iterator,
    steps)`` the original's eval metrics.

    Example:

    >>> import numpy as np
    >>> import keras_bert
    >>> from keras_bert.training import create_optimizer
    >>> model = keras_bert.BertPretrainer.from_preset("tiny_random", preprocessor=None)
    >>> loop = PretrainingLoop(model, create_optimizer(1e-3, num_train_steps=10),
    ...                        global_batch_size=2)
    >>> ids = np.array([[2, 7, 4, 3, 9, 3], [2, 5, 6, 3, 8, 3]], "int32")
    >>> batch = {"input_word_ids": ids, "input_mask": np.ones_like(ids),
    ...          "input_type_ids": np.array([[0, 0, 0, 0, 1, 1]] * 2),
    ...          "masked_lm_positions": np.array([[1, 4]] * 2),
    ...          "masked_lm_ids": np.array([[7, 9], [5, 8]]),
    ...          "masked_lm_weights": np.array([[1.0, 1.0], [1.0, 0.0]], "float32"),
    ...          "next_sentence_labels": np.array([0, 1])}
    >>> loop.train_step(batch)
    >>> metrics = loop.take_train_metrics()
    >>> metrics["steps"], metrics["sequences"], metrics["loss"] > 0
    (1, 2, True)
    """

    def __init__(self, model, optimizer, strategy=None, global_batch_size=None,
                 jit_compile=False):
        self.strategy = strategy or tf.distribute.get_strategy()
        self.model = model
        self.optimizer = optimizer
        replicas = self.strategy.num_replicas_in_sync
        if not global_batch_size or global_batch_size % replicas:
            raise ValueError(f"The global batch size ({global_batch_size}) must be a positive "
                             f"multiple of the {replicas} replicas in sync.")
        self.global_batch_size = int(global_batch_size)
        self.jit_compile = bool(jit_compile)
        self.loss_scaling = hasattr(optimizer, "scale_loss") and hasattr(optimizer,
                                                                         "inner_optimizer")
        inner = optimizer.inner_optimizer if self.loss_scaling else optimizer
        if not hasattr(inner, "aggregate_gradients"):
            raise TypeError("PretrainingLoop needs a keras_bert optimizer "
                            "(keras_bert.training.create_optimizer), got "
                            f"{type(inner).__name__}")
        inner.aggregate_gradients = False  # replica_step sums the gradients itself
        with self.strategy.scope():
            self.optimizer.build(self.model.trainable_variables)
            self._train_sums = _sums_variable(len(_TRAIN_SUMS), "train_sums")
            self._eval_sums = _sums_variable(6, "eval_sums")
        self._steps_taken = 0
        gradients = self._loss_and_gradients
        self.loss_and_gradients = (tf.function(gradients, jit_compile=True)
                                   if self.jit_compile else gradients)
        self._train_loop = tf.function(self._loop)
        self._train_step = tf.function(self._one_step)
        self._eval_loop = tf.function(self._eval)

    # ---------------------------------------------------------------- the math
    def _losses(self, batch, outputs, mlm_weight_total, batch_total):
        """Per replica: (loss share, sums). Losses in float32 whatever the policy."""
        ids = tf.cast(batch["masked_lm_ids"], tf.int32)
        weights = tf.cast(batch["masked_lm_weights"], tf.float32)
        labels = tf.cast(tf.reshape(batch["next_sentence_labels"], [-1]), tf.int32)
        mlm_logits = tf.cast(outputs["mlm_logits"], tf.float32)  # [batch, predictions, vocab]
        nsp_logits = tf.cast(outputs["nsp_logits"], tf.float32)  # [batch, 2]
        mlm_ce = tf.nn.sparse_softmax_cross_entropy_with_logits(ids, mlm_logits)
        nsp_ce = tf.nn.sparse_softmax_cross_entropy_with_logits(labels, nsp_logits)
        mlm_sum = tf.reduce_sum(mlm_ce * weights)
        loss = mlm_sum / (mlm_weight_total + MLM_EPSILON) + tf.reduce_sum(nsp_ce) / batch_total
        mlm_hit = tf.cast(tf.equal(tf.argmax(mlm_logits, -1, output_type=tf.int32), ids),
                          tf.float32)
        nsp_hit = tf.cast(tf.equal(tf.argmax(nsp_logits, -1, output_type=tf.int32), labels),
                          tf.float32)
        sums = tf.stack([mlm_sum, tf.reduce_sum(weights), tf.reduce_sum(mlm_hit * weights),
                         tf.reduce_sum(nsp_ce), tf.reduce_sum(nsp_hit),
                         tf.cast(tf.size(labels), tf.float32)])
        return loss, sums

    @staticmethod
    def _features(batch):
        return {k: batch[k] for k in INPUT_NAMES + ("masked_lm_positions",)}

    def _loss_and_gradients(self, batch, mlm_weight_total, batch_total):
        """Per replica: forward and backward pass -> (loss share, sums, gradients)."""
        variables = self.model.trainable_variables
        with tf.GradientTape() as tape:
            outputs = self.model(self._features(batch), training=True)
            loss, sums = self._losses(batch, outputs, mlm_weight_total, batch_total)
            scaled = self.optimizer.scale_loss(loss) if self.loss_scaling else loss
        gradients = tape.gradient(scaled, variables)
        return loss, sums, gradients

    def replica_step(self, batch):
        """One training step on this replica's part of the batch (inside ``strategy.run``)."""
        context = tf.distribute.get_replica_context()
        weight = tf.reduce_sum(tf.cast(batch["masked_lm_weights"], tf.float32))
        weight_total = context.all_reduce(tf.distribute.ReduceOp.SUM, weight)
        loss, sums, gradients = self.loss_and_gradients(
            batch, weight_total, tf.constant(self.global_batch_size, tf.float32))
        if context.num_replicas_in_sync > 1:
            gradients = context.all_reduce(tf.distribute.ReduceOp.SUM, gradients)
        self.optimizer.apply(gradients, self.model.trainable_variables)
        self._train_sums.assign_add(tf.concat([[loss], sums], 0))

    def _one_step(self, batch):
        self.strategy.run(self.replica_step, args=(batch,))

    def _loop(self, iterator, steps):
        for _ in tf.range(steps):
            self.strategy.run(self.replica_step, args=(next(iterator),))

    # ---------------------------------------------------------------- public
    def train_step(self, batch):
        """One step on ``batch`` (see the class docstring)."""
        self._train_step(batch)
        self._steps_taken += 1

    def train_loop(self, iterator, steps):
        """``steps`` steps on batches from ``iterator`` (a distributed iterator), in one
        `tf.function` (no retracing for another ``steps``)."""
        self._train_loop(iterator, tf.constant(steps, tf.int64))
        self._steps_taken += int(steps)

    def take_train_metrics(self):
        """The training metrics since the last call (then reset): ``loss`` (mean step
        loss), ``masked_lm_loss``, ``masked_lm_accuracy``, ``next_sentence_loss``,
        ``next_sentence_accuracy``, ``steps``, ``sequences``."""
        sums = dict(zip(_TRAIN_SUMS, self._train_sums.read_value().numpy().tolist()))
        steps = self._steps_taken
        self._train_sums.assign(tf.zeros_like(self._train_sums))
        self._steps_taken = 0
        return _metrics(sums, steps, loss=sums["loss"] / max(steps, 1))

    def _eval_replica(self, batch):
        outputs = self.model(self._features(batch), training=False)
        _, sums = self._losses(batch, outputs, tf.constant(1.0), tf.constant(1.0))
        self._eval_sums.assign_add(sums)

    def _eval(self, iterator, steps):
        for _ in tf.range(steps):
            self.strategy.run(self._eval_replica, args=(next(iterator),))

    def evaluate(self, iterator, steps):
        """The original's eval metrics over ``steps`` batches of ``iterator``:
        ``masked_lm_accuracy``, ``masked_lm_loss``, ``next_sentence_accuracy``,
        ``next_sentence_loss`` (and ``sequences``)."""
        self._eval_sums.assign(tf.zeros_like(self._eval_sums))
        self._eval_loop(iterator, tf.constant(steps, tf.int64))
        sums = dict(zip(_TRAIN_SUMS[1:], self._eval_sums.read_value().numpy().tolist()))
        metrics = _metrics(sums, steps)
        metrics.pop("steps")
        return metrics


def _metrics(sums, steps, **extra):
    weight, sequences = max(sums["mlm_weight"], 1e-9), max(sums["sequences"], 1e-9)
    out = {
        "masked_lm_loss": sums["mlm_loss"] / weight,
        "masked_lm_accuracy": sums["mlm_correct"] / weight,
        "next_sentence_loss": sums["nsp_loss"] / sequences,
        "next_sentence_accuracy": sums["nsp_correct"] / sequences,
        "steps": int(steps),
        "sequences": int(round(sums["sequences"])),
    }
    out.update(extra)
    return out


def most_frequent_token_baseline(batches):
    """The masked-LM accuracy of always predicting the most frequent masked token, on
    ``batches`` (dicts with ``masked_lm_ids`` and ``masked_lm_weights``, e.g. an eval
    pipeline): what a model must beat to have learned more than token frequencies.

    Returns ``(accuracy, token_id)``.

    >>> import numpy as np
    >>> most_frequent_token_baseline([{"masked_lm_ids": np.array([[7, 7, 9, 0]]),
    ...                                "masked_lm_weights": np.array([[1, 1, 1, 0.0]])}])
    (0.6666666666666666, 7)
    """
    counts = {}
    total = 0.0
    for batch in batches:
        ids = np.asarray(batch["masked_lm_ids"]).reshape(-1)
        weights = np.asarray(batch["masked_lm_weights"]).reshape(-1)
        for token, weight in zip(ids[weights > 0].tolist(), weights[weights > 0].tolist()):
            counts[token] = counts.get(token, 0.0) + weight
            total += weight
    if not counts:
        raise ValueError("most_frequent_token_baseline: the batches hold no real predictions")
    token = max(counts, key=counts.get)
    return counts[token] / total, int(token)
