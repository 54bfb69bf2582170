import numpy as np
import pytest
import tensorflow as tf

import keras_bert  # noqa: F401  (selects the TensorFlow backend)
import keras
from keras_bert.layers import TransformerBlock

import layer_reference as ref


def _inputs(batch=3, seq=11, hidden=32, seed=1):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(batch, seq, hidden)).astype("float32")
    mask = np.ones((batch, seq), "int32")
    mask[0, 7:] = 0
    if batch > 2:
        mask[2, 2:] = 0
    return x, mask


@pytest.mark.parametrize("act", ["gelu", "gelu_tanh", "relu"])
@pytest.mark.parametrize("jit_compile", [False, True])
@pytest.mark.parametrize("hidden,heads", [(32, 4), (48, 3)])
def test_matches_reference_math(act, jit_compile, hidden, heads):
    block = TransformerBlock(hidden, heads, 2 * hidden, hidden_act=act)
    x, mask = _inputs(hidden=hidden)
    block((x, mask))
    weights = ref.randomize(block)
    fn = tf.function(lambda x, m: block((x, m), training=False), jit_compile=jit_compile)
    got = fn(x, mask).numpy()
    want = ref.transformer_block(weights, x, mask, heads, act=act)
    np.testing.assert_allclose(got, want, atol=1e-5, rtol=0)
    # Eager gives the same numbers.
    np.testing.assert_allclose(block((x, mask)).numpy(), want, atol=1e-5, rtol=0)


def test_padding_gets_no_attention():
    block = TransformerBlock(32, 4, 64)
    x, mask = _inputs()
    out = block((x, mask)).numpy()
    x2 = x.copy()
    x2[0, 7:] = 123.0  # change only padded positions of sequence 0
    out2 = block((x2, mask)).numpy()
    np.testing.assert_allclose(out[0, :7], out2[0, :7], atol=1e-5)


def test_dynamic_shapes_in_tf_function():
    block = TransformerBlock(32, 4, 64)
    fn = tf.function(
        lambda x, m: block((x, m)),
        input_signature=[tf.TensorSpec([None, None, 32]), tf.TensorSpec([None, None], tf.int32)],
    )
    for batch, seq in [(1, 1), (2, 5), (4, 9)]:
        x, mask = _inputs(batch=batch, seq=seq)
        np.testing.assert_allclose(fn(x, mask).numpy(), block((x, mask)).numpy(), atol=1e-6)


def test_dropout_only_in_training():
    block = TransformerBlock(32, 4, 64, dropout=0.5, attention_dropout=0.5)
    x, mask = _inputs()
    a = block((x, mask), training=False).numpy()
    np.testing.assert_array_equal(a, block((x, mask)).numpy())
    assert not np.allclose(a, block((x, mask), training=True).numpy())


def test_canonical_variables_have_google_names_and_shapes():
    block = TransformerBlock(32, 4, 64)
    block.build(None)
    shapes = {k: tuple(v.shape) for k, v in block.canonical_variables().items()}
    assert shapes == {
        "attention/self/query/kernel": (32, 32), "attention/self/query/bias": (32,),
        "attention/self/key/kernel": (32, 32), "attention/self/key/bias": (32,),
        "attention/self/value/kernel": (32, 32), "attention/self/value/bias": (32,),
        "attention/output/dense/kernel": (32, 32), "attention/output/dense/bias": (32,),
        "attention/output/LayerNorm/gamma": (32,), "attention/output/LayerNorm/beta": (32,),
        "intermediate/dense/kernel": (32, 64), "intermediate/dense/bias": (64,),
        "output/dense/kernel": (64, 32), "output/dense/bias": (32,),
        "output/LayerNorm/gamma": (32,), "output/LayerNorm/beta": (32,),
    }
    # Every trainable weight is reachable by a canonical name, exactly once.
    assert len({id(v) for v in block.canonical_variables().values()}) == len(block.weights)


def test_gradients_reach_every_weight():
    block = TransformerBlock(32, 4, 64)
    x, mask = _inputs()
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(block((x, mask), training=True) ** 2)
    grads = tape.gradient(loss, block.trainable_variables)
    assert all(g is not None and np.isfinite(g.numpy()).all() for g in grads)


def test_rejects_indivisible_heads():
    with pytest.raises(ValueError, match="divisible"):
        TransformerBlock(30, 4, 64)


def test_keras_round_trip(tmp_path):
    x = keras.Input((None, 32))
    m = keras.Input((None,), dtype="int32")
    model = keras.Model([x, m], TransformerBlock(32, 4, 64, hidden_act="gelu_tanh",
                                                  name="block")((x, m)))
    ref.randomize(model.get_layer("block"))
    xs, mask = _inputs()
    path = tmp_path / "block.keras"
    model.save(path)
    loaded = keras.models.load_model(path)
    assert loaded.get_layer("block").get_config() == model.get_layer("block").get_config()
    np.testing.assert_array_equal(loaded([xs, mask]).numpy(), model([xs, mask]).numpy())


def test_lora_on_the_dense_sublayers_changes_the_output():
    # The block calls its Dense sublayers, so LoRA enabled on them takes part in the forward
    # pass: with B = 0 nothing changes, with B set the output is that of the merged kernels.
    block = TransformerBlock(32, 4, 64)
    x, mask = _inputs()
    block((x, mask))
    ref.randomize(block)
    before = block((x, mask)).numpy()
    dense = [block.query, block.key, block.value, block.attention_output, block.intermediate,
             block.output_dense]
    for layer in dense:
        layer.enable_lora(rank=2)
    np.testing.assert_array_equal(block((x, mask)).numpy(), before)
    rng = np.random.default_rng(3)
    for layer in dense:
        layer.lora_kernel_b.assign(rng.normal(size=layer.lora_kernel_b.shape) * 0.05)
    fn = tf.function(lambda x, m: block((x, m)), jit_compile=False)
    after = fn(x, mask).numpy()
    assert np.abs(after - before).max() > 1e-3
    merged = {name: var.numpy() for name, var in block.canonical_variables().items()}
    for layer, prefix in zip(dense, ["attention/self/query", "attention/self/key",
                                     "attention/self/value", "attention/output/dense",
                                     "intermediate/dense", "output/dense"]):
        merged[f"{prefix}/kernel"] = keras.ops.convert_to_numpy(layer.kernel)  # W + a @ b
    np.testing.assert_allclose(after, ref.transformer_block(merged, x, mask, 4), atol=1e-5)
    # LoRA trains only its own factors.
    trainable = {v.path.split("/")[-1] for v in block.trainable_variables}
    assert trainable == {"lora_kernel_a", "lora_kernel_b", "bias", "gamma", "beta"}
    # The checkpoint names still lead to the base kernels (variables, not the merged tensors).
    for name, var in block.canonical_variables().items():
        assert isinstance(var, keras.Variable), name


def test_int8_quantization_reaches_the_dense_sublayers():
    x_in = keras.Input((None, 32))
    m_in = keras.Input((None,), dtype="int32")
    model = keras.Model([x_in, m_in], TransformerBlock(32, 4, 64, name="block")((x_in, m_in)))
    block = model.get_layer("block")
    ref.randomize(block)
    x, mask = _inputs()
    before = model([x, mask]).numpy()
    model.quantize("int8")
    assert block.query.kernel.dtype == "int8"
    after = model([x, mask]).numpy()
    # int8 weights: close to, but not the same as, the float32 block.
    assert 0 < np.abs(after - before).max() < 0.1


def test_shared_checks():
    from tests.harness import check_layer

    x = np.random.default_rng(0).normal(size=(2, 5, 8)).astype("float32")
    mask = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], "int32")
    check_layer(TransformerBlock(hidden_size=8, num_attention_heads=2, intermediate_size=16),
                {"x": x, "mask": mask}, call=lambda block, i: block((i["x"], i["mask"])))


@pytest.mark.parametrize("training", [False, True])
def test_output_positions_are_those_rows_of_the_full_output(training):
    # No dropout, so training=True runs the fused kernels with the same math.
    block = TransformerBlock(32, 4, 64, dropout=0.0, attention_dropout=0.0)
    x, mask = _inputs(batch=3, seq=11)
    positions = np.array([[0, 6, 10, 6], [3, 3, 1, 9], [0, 1, 2, 8]], "int32")
    x_var = tf.Variable(x)
    with tf.GradientTape(persistent=True) as tape:
        full = block((x_var, mask), training=training)
        rows = block((x_var, mask), training=training, output_positions=positions)
        first = block((x_var, mask), training=training, output_positions=2)
        weights = tf.constant(np.random.default_rng(3).normal(size=rows.shape), tf.float32)
        want_loss = tf.reduce_sum(tf.gather(full, positions, batch_dims=1) * weights)
        got_loss = tf.reduce_sum(rows * weights)
    assert rows.shape == (3, 4, 32) and first.shape == (3, 2, 32)
    np.testing.assert_allclose(rows, np.take_along_axis(full.numpy(), positions[..., None], 1),
                               atol=1e-5)
    np.testing.assert_allclose(first, full[:, :2], atol=1e-5)
    # Keys and values still come from every row: the gradients are the full path's.
    sources = [x_var] + block.trainable_variables
    for want, got, var in zip(tape.gradient(want_loss, sources), tape.gradient(got_loss, sources),
                              ["x"] + [v.path for v in block.trainable_variables]):
        if "key/bias" in str(var):  # zero up to rounding: softmax ignores a per-row shift
            continue
        np.testing.assert_allclose(got, want, atol=1e-4, rtol=1e-4, err_msg=str(var))


def test_output_positions_in_a_graph_and_symbolically():
    block = TransformerBlock(32, 4, 64)
    fn = tf.function(
        lambda x, m, p: block((x, m), output_positions=p),
        input_signature=[tf.TensorSpec([None, None, 32]), tf.TensorSpec([None, None], tf.int32),
                         tf.TensorSpec([None, None], tf.int32)],
    )
    x, mask = _inputs(batch=2, seq=6)
    positions = np.array([[5], [2]], "int32")
    np.testing.assert_allclose(fn(x, mask, positions),
                               np.take_along_axis(block((x, mask)).numpy(), positions[..., None],
                                                  1), atol=1e-5)
    inputs = (keras.Input((None, 32)), keras.Input((None,), dtype="int32"))
    assert block(inputs, output_positions=keras.Input((3,), dtype="int32")).shape == (None, 3, 32)
    assert block(inputs, output_positions=1).shape == (None, 1, 32)
    assert block(inputs).shape == (None, None, 32)


def _int8_block(hidden=32, heads=4, intermediate=64, hidden_act="gelu"):
    block = TransformerBlock(hidden, heads, intermediate, hidden_act=hidden_act, dropout=0.0,
                             attention_dropout=0.0)
    x, mask = _inputs(hidden=hidden)
    block((x, mask))
    ref.randomize(block)
    return block


@pytest.mark.parametrize("hidden_act", ["gelu", "silu"])
def test_an_int8_block_runs_on_the_int8_kernel(hidden_act, monkeypatch):
    from keras_bert.layers import dense, int8

    block = _int8_block(hidden_act=hidden_act)
    x, mask = _inputs()
    want = block((x, mask)).numpy()
    for layer in (block.query, block.key, block.value, block.attention_output,
                  block.intermediate, block.output_dense):
        layer.quantize("int8")
    fn = tf.function(lambda x, m: block((x, m)))
    graph = fn.get_concrete_function(x, mask).graph.as_graph_def()
    ops = [n.op for n in graph.node] + [
        n.op for function in graph.library.function for n in function.node_def]
    # One quantization of the input for query, key and value; the first position apart
    # through the feed-forward layers: 8 kernel calls, 6 quantizations. GELU on the kernel
    # (a small block): a cond, its other branch the feed-forward layers in halves (4 calls,
    # 3 quantizations).
    halves = hidden_act == "gelu"
    assert ops.count(int8.OP) == 8 + 4 * halves
    assert ops.count("QuantizeV2") == 6 + 3 * halves
    got = fn(x, mask).numpy()
    monkeypatch.setattr(dense, "INT8_KERNEL", False)
    keras_fn = tf.function(lambda x, m: block((x, m)))
    keras_ops = [n.op for n in keras_fn.get_concrete_function(x, mask).graph.as_graph_def().node]
    assert int8.OP not in keras_ops and "QuantizeV2" not in keras_ops  # the switch took
    keras_int8 = keras_fn(x, mask).numpy()
    # Both int8 paths are within int8's error of the float block (LayerNorm outputs, ~1), and
    # apart from each other (each quantizes the activations its own way: ~4e-3)
    assert np.abs(got - want).max() < 0.1 and np.abs(keras_int8 - want).max() < 0.1
    assert np.abs(keras_int8 - got).max() > 1e-3
    # training=True is Keras' int8 path (with the fused training kernels: float rounding
    # differences, now and then one activation step apart)
    np.testing.assert_allclose(block((x, mask), training=True), keras_int8, atol=2e-3)


def test_int8_keeps_the_first_position_apart_in_the_feed_forward_layers():
    # A first row ([CLS]) with activations far larger than the others' would set the
    # quantization range of every row; apart, the other rows keep their resolution.
    block = _int8_block()
    batch, seq, hidden = 3, 11, 32
    x = np.random.default_rng(5).normal(size=(batch, seq, hidden)).astype("float32")
    x[:, 0] *= 10.0
    x = tf.reshape(tf.constant(x), [-1, hidden])
    want = (x + block.output_dense(tf.nn.gelu(block.intermediate(x)))).numpy()
    for layer in (block.intermediate, block.output_dense):
        layer.quantize("int8")
    rows = block._int8_feed_forward_rows
    apart = block._int8_feed_forward(x, batch, seq, True, rows).numpy()
    together = block._int8_feed_forward(x, batch, seq, False, rows).numpy()
    rest = np.tile(np.arange(seq) > 0, batch)
    error_apart = np.abs(apart - want)[rest].max()
    error_together = np.abs(together - want)[rest].max()
    assert error_apart < error_together / 3, (error_apart, error_together)
    # the first rows, apart, within int8's error of their (large) values
    assert np.abs(apart - want)[~rest].max() < 0.01 * np.abs(want[~rest]).max()


def test_int8_output_positions_and_lora():
    block = _int8_block()
    x, mask = _inputs()
    for layer in (block.query, block.key, block.value, block.attention_output,
                  block.intermediate, block.output_dense):
        layer.quantize("int8")
    full = block((x, mask)).numpy()
    positions = np.array([[0, 6, 10], [3, 3, 1], [0, 1, 2]], "int32")
    rows = block((x, mask), output_positions=positions).numpy()
    first = block((x, mask), output_positions=1).numpy()
    # The rows computed alone are quantized with their own ranges: close to the full output
    np.testing.assert_allclose(rows, np.take_along_axis(full, positions[..., None], 1),
                               atol=0.1)
    np.testing.assert_allclose(first, full[:, :1], atol=0.1)
    # LoRA on the int8 kernel computes what Keras' int8 path (training=True) computes with the
    # same factors, within the two paths' difference without LoRA (~0.004); the factors change
    # the output by far more, so LoRA left out, or its scale (lora_alpha / rank = 2), fails.
    # The query (its input quantized apart from key's and value's), then the feed-forward
    # output (not fused with its residual when LoRA is on).
    rng = np.random.default_rng(2)
    before = full
    for layer, size in ((block.query, 0.5), (block.output_dense, 0.2)):
        layer.enable_lora(2, lora_alpha=4)
        layer.lora_kernel_a.assign(rng.normal(size=layer.lora_kernel_a.shape) * size)
        layer.lora_kernel_b.assign(rng.normal(size=layer.lora_kernel_b.shape) * size)
        with_lora = block((x, mask)).numpy()
        np.testing.assert_allclose(with_lora, block((x, mask), training=True), atol=0.02,
                                   err_msg=layer.name)
        assert np.abs(with_lora - before).max() > 0.1, layer.name
        before = with_lora
