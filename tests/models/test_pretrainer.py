"""BertPretrainer: masked LM and next sentence, losses, the last block at the masked positions
only, and the task contract (tests/task_harness.py)."""

import keras
import numpy as np
import tensorflow as tf

from keras_bert import BertPretrainer, BertPretrainerPreprocessor
from keras_bert.presets import tiny_random
from keras_bert.training import AdamW
from tests.task_harness import check_task
from tiny import VOCAB, feed_forward_rows, tiny_encoder  # tests/models/tiny.py

TEXTS = ["the cat sat", "the dog ran", "paris is red", "london is blue"] * 4


def test_pretrainer_outputs_and_losses():
    keras.utils.set_random_seed(0)
    preprocessor = BertPretrainerPreprocessor(VOCAB, seq_length=12, max_predictions_per_seq=3,
                                              seed=2)
    model = BertPretrainer(tiny_encoder(), preprocessor=preprocessor)
    model.compile(optimizer=AdamW(learning_rate=3e-3))
    a, b = TEXTS[:8], TEXTS[1:9]
    nsp = np.array([0, 1] * 4)
    history = model.fit((a, b), nsp, epochs=10, batch_size=4, verbose=0)
    assert {"loss", "mlm_logits_loss", "nsp_logits_loss"} <= set(history.history)
    out = model.predict((a, b), verbose=0)
    assert out["mlm_logits"].shape == (8, 3, len(VOCAB)) and out["nsp_logits"].shape == (8, 2)
    names = set(model.head_variables())
    assert {"cls/predictions/output_bias", "cls/seq_relationship/output_weights"} <= names


def test_task_contract_with_the_preset_s_heads(tmp_path):
    """Raw pairs are masked at random, so outputs are compared on inputs masked once. The
    preset's cls/ heads are the ones loaded (tiny_random has them, as Google's do).
    fit=False: test_pretrainer_outputs_and_losses fits on raw pairs."""
    a, b = TEXTS[:4], TEXTS[1:5]
    check_task(BertPretrainer, (a, b), np.array([0, 1, 0, 1]), tmp_path=tmp_path, fit=False,
               raw_predict=False, output_shape={"mlm_logits": (4, 3, 92), "nsp_logits": (4, 2)},
               seq_length=12, max_predictions_per_seq=3)
    heads = BertPretrainer.from_preset("tiny_random", preprocessor=None).head_variables()
    want = tiny_random.weights()
    for name in ("cls/predictions/output_bias", "cls/seq_relationship/output_bias"):
        np.testing.assert_array_equal(heads[name][0].numpy(), want[name], err_msg=name)


def test_last_block_runs_at_the_masked_positions_only_with_the_full_gradients():
    """The pretrainer's last block computes [CLS] and the masked rows only; the losses and
    every gradient are those of the full encoder output gathered at the positions."""
    model = BertPretrainer(tiny_encoder(num_hidden_layers=3, hidden_dropout_prob=0.0,
                                        attention_probs_dropout_prob=0.0))
    rng = np.random.default_rng(0)
    ids = rng.integers(5, len(VOCAB), size=(4, 12)).astype("int32")
    mask = np.ones_like(ids)
    mask[1, 8:] = 0
    x = {"input_word_ids": ids, "input_mask": mask, "input_type_ids": np.zeros_like(ids),
         "masked_lm_positions": rng.integers(0, 8, size=(4, 3)).astype("int32")}
    assert feed_forward_rows(model, x) == [48, 48, 4 * (1 + 3)]
    packed = {k: v for k, v in x.items() if k != "masked_lm_positions"}
    targets = tf.constant(rng.normal(size=(4, 3, len(VOCAB))), tf.float32)

    def loss(fast):
        if fast:
            out = model(x, training=True)
            mlm, nsp = out["mlm_logits"], out["nsp_logits"]
        else:
            out = model.encoder(packed, training=True)
            mlm = model.mlm_head(out["sequence_output"], x["masked_lm_positions"])
            nsp = model.nsp_head(out["pooled_output"])
        return tf.reduce_sum(mlm * targets) + tf.reduce_sum(nsp * nsp)

    grads = []
    for fast in (True, False):
        with tf.GradientTape() as tape:
            value = loss(fast)
        grads.append((value, tape.gradient(value, model.trainable_variables)))
    np.testing.assert_allclose(grads[0][0], grads[1][0], rtol=1e-5)
    for var, got, want in zip(model.trainable_variables, grads[0][1], grads[1][1]):
        if "key/bias" in var.path:  # zero up to rounding: softmax ignores a per-row shift
            continue
        np.testing.assert_allclose(tf.convert_to_tensor(got), tf.convert_to_tensor(want),
                                   atol=1e-4, rtol=1e-4, err_msg=var.path)
