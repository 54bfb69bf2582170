"""PretrainingLoop: the original run_pretraining.py loss on the global batch, XLA, fp16 loss
scaling, loops and eval metrics. The runs built on it (options, resuming, ram://) are in
test_pretraining_run.py."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_bert
from keras_bert.training import create_optimizer
from keras_bert.training.pretraining_loop import PretrainingLoop

VOCAB = 40


def _model(dtype=None):
    keras.utils.set_random_seed(1)
    config = keras_bert.BertConfig(vocab_size=VOCAB, hidden_size=16, num_hidden_layers=1,
                                   num_attention_heads=2, intermediate_size=32,
                                   hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    return keras_bert.BertPretrainer(keras_bert.BertEncoder(config, dtype=dtype))


def _batch(size=4, seq=10, predictions=3, seed=0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(5, VOCAB, (size, seq)).astype("int32")
    weights = np.ones((size, predictions), "float32")
    weights[0, -1] = 0.0  # a padding prediction
    return {"input_word_ids": ids, "input_mask": np.ones_like(ids),
            "input_type_ids": np.zeros_like(ids),
            "masked_lm_positions": rng.integers(1, seq, (size, predictions)).astype("int32"),
            "masked_lm_ids": rng.integers(5, VOCAB, (size, predictions)).astype("int32"),
            "masked_lm_weights": weights,
            "next_sentence_labels": (np.arange(size) % 2).astype("int32")}


def _reference_loss(model, batch):
    """run_pretraining.py's get_masked_lm_output + get_next_sentence_output, in numpy."""
    out = model.predict({k: batch[k] for k in ("input_word_ids", "input_mask",
                                               "input_type_ids", "masked_lm_positions")},
                        verbose=0)
    log_probs = tf.nn.log_softmax(out["mlm_logits"]).numpy()
    picked = np.take_along_axis(log_probs, batch["masked_lm_ids"][..., None], -1)[..., 0]
    w = batch["masked_lm_weights"]
    mlm = -np.sum(picked * w) / (np.sum(w) + 1e-5)
    nsp_log = tf.nn.log_softmax(out["nsp_logits"]).numpy()
    nsp = -np.mean(nsp_log[np.arange(len(w)), batch["next_sentence_labels"]])
    return mlm + nsp


@pytest.mark.parametrize("jit_compile", [False, True])
def test_step_loss_is_the_original_loss_and_training_lowers_it(jit_compile):
    model = _model()
    batch = _batch()
    expected = _reference_loss(model, batch)
    loop = PretrainingLoop(model, create_optimizer(1e-2, num_train_steps=20),
                           global_batch_size=4, jit_compile=jit_compile)
    loop.train_step(batch)
    first = loop.take_train_metrics()
    assert first["loss"] == pytest.approx(expected, rel=1e-5)
    assert (first["steps"], first["sequences"]) == (1, 4)
    dataset = tf.data.Dataset.from_tensors(batch).repeat()
    loop.train_loop(iter(dataset), 10)
    later = loop.take_train_metrics()
    assert later["steps"] == 10 and later["loss"] < first["loss"]
    assert int(model.optimizer.iterations.numpy()) == 0  # the loop's optimizer, not compile's
    evaluated = loop.evaluate(iter(dataset), 2)
    assert evaluated["sequences"] == 8
    assert evaluated["masked_lm_loss"] + evaluated["next_sentence_loss"] == pytest.approx(
        _reference_loss(model, batch), rel=1e-4)


def test_fp16_with_dynamic_loss_scaling():
    model = _model(dtype="mixed_float16")
    optimizer = keras.optimizers.LossScaleOptimizer(create_optimizer(1e-2, num_train_steps=5))
    loop = PretrainingLoop(model, optimizer, global_batch_size=4)
    loop.train_loop(iter(tf.data.Dataset.from_tensors(_batch()).repeat()), 3)
    metrics = loop.take_train_metrics()
    assert np.isfinite(metrics["loss"]) and optimizer.dynamic_scale.numpy() > 0
    assert model.encoder.dtype_policy.name == "mixed_float16"


def test_loop_arguments_are_checked():
    with pytest.raises(ValueError, match=r"global batch size \(0\) must be a positive"):
        PretrainingLoop(_model(), create_optimizer(1e-3, 5), global_batch_size=0)
    with pytest.raises(TypeError, match="needs a keras_bert optimizer"):
        PretrainingLoop(_model(), keras.optimizers.SGD(), global_batch_size=2)
