"""The fused training kernels (keras_bert/layers/fused.py) against the plain ops."""

import numpy as np
import pytest
import tensorflow as tf

import keras_bert  # noqa: F401  (selects the TensorFlow backend)
import keras
from keras_bert.layers import TransformerBlock, fused


@pytest.fixture
def plain_and_fused():
    """Runs a function with the fused kernels off, then on; restores the switch."""
    def run(fn):
        try:
            fused.ENABLED = False
            plain = fn()
            fused.ENABLED = True
            return plain, fn()
        finally:
            fused.ENABLED = True
    return run


def _inputs(batch=3, seq=9, hidden=32, seed=0):
    rng = np.random.default_rng(seed)
    x = tf.constant(rng.normal(size=(batch, seq, hidden)).astype("float32"))
    mask = np.ones((batch, seq), "int32")
    mask[1, seq * 2 // 3:] = 0
    mask[-1, 2:] = 0
    return x, tf.constant(mask)


def _output_and_gradients(block, x, mask):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.cast(block((x, mask), training=True), tf.float32)
        # A loss that weighs every output unit differently, so no gradient cancels.
        loss = tf.reduce_sum(y * tf.cast(tf.range(y.shape[-1]), tf.float32) / y.shape[-1])
    return [y] + tape.gradient(loss, [x] + block.trainable_variables)


@pytest.mark.parametrize("act", ["gelu", "gelu_tanh", "relu"])
@pytest.mark.parametrize("graph", [False, True])
def test_training_without_dropout_matches_the_plain_ops(plain_and_fused, act, graph):
    keras.utils.set_random_seed(1)
    block = TransformerBlock(32, 4, 64, hidden_act=act, dropout=0.0, attention_dropout=0.0)
    x, mask = _inputs()

    def step():
        run = lambda: _output_and_gradients(block, x, mask)  # noqa: E731
        # A new tf.function each time: a traced graph keeps the path it was traced with.
        return tf.function(run)() if graph else run()

    plain, fused_ = plain_and_fused(step)
    names = ["output", "x"] + [v.path for v in block.trainable_variables]
    for name, want, got in zip(names, plain, fused_):
        scale = max(float(tf.reduce_max(tf.abs(want))), 1.0)
        np.testing.assert_allclose(got.numpy(), want.numpy(), atol=2e-5 * scale, rtol=0,
                                   err_msg=name)


def test_mixed_bfloat16_training_is_close_to_the_plain_ops(plain_and_fused):
    keras.utils.set_random_seed(2)
    block = TransformerBlock(32, 4, 64, dropout=0.0, attention_dropout=0.0,
                             dtype="mixed_bfloat16")
    x, mask = _inputs()
    plain, fused_ = plain_and_fused(lambda: _output_and_gradients(block, x, mask))
    assert fused_[0].dtype == tf.float32  # cast by the helper; the block returns bfloat16
    assert block((x, mask), training=True).dtype == tf.bfloat16
    for want, got in zip(plain, fused_):
        scale = max(float(tf.reduce_max(tf.abs(want))), 1.0)
        np.testing.assert_allclose(got.numpy(), want.numpy(), atol=0.05 * scale, rtol=0)


def test_keep_bits_keep_the_share_the_rate_says():
    dropout = keras.layers.Dropout(0.3, seed=7)
    bits = fused.keep_bits(dropout, tf.constant([500, 301]))  # odd size: one half-word spare
    assert bits.shape == (500, 301) and bits.dtype == tf.uint16
    kept = np.mean(bits.numpy() >= round(0.3 * 65536))
    assert abs(kept - 0.7) < 0.01
    # The layer's seed generator advances: the next draw differs.
    again = fused.keep_bits(dropout, tf.constant([500, 301]))
    assert np.mean(again.numpy() == bits.numpy()) < 0.01


def test_softmax_dropout_drops_and_scales_like_dropout():
    dropout = keras.layers.Dropout(0.25, seed=3)
    scores = tf.constant(np.random.default_rng(0).normal(size=(4, 2, 8, 8)), tf.float32)
    state = dropout.seed_generator.state.numpy()
    with tf.GradientTape() as tape:
        tape.watch(scores)
        out = fused.softmax_dropout(scores, dropout, True, "float32")
        loss = tf.reduce_sum(out * tf.range(8, dtype=tf.float32))
    grad = tape.gradient(loss, scores)
    # The same bits, drawn again from the same seed state, give the mask.
    dropout.seed_generator.state.assign(state)
    keep = fused.keep_bits(dropout, tf.shape(scores)).numpy() >= round(0.25 * 65536)
    probs = tf.nn.softmax(scores).numpy()
    np.testing.assert_allclose(out.numpy(), np.where(keep, probs / 0.75, 0.0), atol=1e-6)
    # The gradient of the same formula written with plain ops.
    with tf.GradientTape() as tape:
        tape.watch(scores)
        want = tf.reduce_sum(tf.where(keep, tf.nn.softmax(scores) / 0.75, 0.0)
                             * tf.range(8, dtype=tf.float32))
    np.testing.assert_allclose(grad.numpy(), tape.gradient(want, scores).numpy(), atol=1e-6)


def test_dropout_add_layer_norm_matches_the_formula():
    dropout = keras.layers.Dropout(0.5, seed=4)
    norm = keras.layers.LayerNormalization(epsilon=1e-12)
    norm.build((None, 16))
    norm.gamma.assign(np.linspace(0.5, 1.5, 16).astype("float32"))
    norm.beta.assign(np.linspace(-1, 1, 16).astype("float32"))
    rng = np.random.default_rng(1)
    branch = tf.constant(rng.normal(size=(6, 16)), tf.float32)
    residual = tf.constant(rng.normal(size=(6, 16)), tf.float32)
    state = dropout.seed_generator.state.numpy()

    def run(fn):
        with tf.GradientTape() as tape:
            tape.watch([branch, residual])
            y = fn()
            loss = tf.reduce_sum(y * tf.range(16, dtype=tf.float32))
        return [y] + tape.gradient(loss, [branch, residual, norm.gamma, norm.beta])

    got = run(lambda: fused.dropout_add_layer_norm(branch, residual, dropout, norm, True))
    dropout.seed_generator.state.assign(state)
    keep = fused.keep_bits(dropout, tf.shape(branch)) >= round(0.5 * 65536)
    assert 0 < np.mean(keep.numpy()) < 1
    want = run(lambda: norm(residual + tf.where(keep, branch * 2.0, 0.0)))
    for w, g in zip(want, got):
        np.testing.assert_allclose(g.numpy(), w.numpy(), atol=2e-5)


def test_training_dropout_is_seeded_by_the_dropout_layers():
    x, mask = _inputs()
    outs = []
    for _ in range(2):
        keras.utils.set_random_seed(5)
        block = TransformerBlock(32, 4, 64, dropout=0.2, attention_dropout=0.2)
        outs.append([block((x, mask), training=True).numpy() for _ in range(2)])
    np.testing.assert_array_equal(outs[0][0], outs[1][0])  # same seeds, same masks
    # The next call draws new masks (the dropped branches are small at this initialisation).
    assert np.abs(outs[0][0] - outs[0][1]).max() > 1e-3


def test_training_graph_uses_the_fused_kernels_and_inference_does_not():
    block = TransformerBlock(32, 4, 64)
    x, mask = _inputs()

    def functions(training):
        fn = tf.function(lambda x, m: block((x, m), training=training))
        graph = fn.get_concrete_function(x, mask).graph
        return " ".join(graph.as_graph_def().library.SerializeToString().decode("latin1")
                        .split())

    train = functions(True)
    for name in ("_add_norm_forward", "_softmax_dropout_forward", "_gelu_forward"):
        assert name in train
    assert "_add_norm_forward" not in functions(False)


def test_training_under_jit_compile_and_new_batch_sizes():
    block = TransformerBlock(32, 4, 64)
    step = tf.function(lambda x, m: block((x, m), training=True), jit_compile=True)
    dynamic = tf.function(lambda x, m: block((x, m), training=True),
                          input_signature=[tf.TensorSpec([None, None, 32]),
                                           tf.TensorSpec([None, None], tf.int32)])
    for batch, seq in ((3, 9), (2, 5)):
        x, mask = _inputs(batch=batch, seq=seq)
        assert step(x, mask).shape == (batch, seq, 32)
        assert dynamic(x, mask).shape == (batch, seq, 32)
