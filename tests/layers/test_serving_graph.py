"""keras_bert/layers/serving_graph.py: the inference graph a serving export traces computes
the block's math (against the NumPy reference, float32 rounding; int8: the kernel's own
arithmetic), with fewer ops: no oneDNN transposes, query/key/value in one matmul, small
attention products on TensorFlow's own kernels."""

import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

import keras_bert  # noqa: F401  (selects the TensorFlow backend)
from keras_bert.layers import TransformerBlock, int8, serving_graph

import layer_reference as ref

SPECS = (tf.TensorSpec([None, None, 32]), tf.TensorSpec([None, None], tf.int32))


def _inputs(batch=3, seq=11, hidden=32, seed=1):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(batch, seq, hidden)).astype("float32")
    mask = np.ones((batch, seq), "int32")
    mask[0, 7:] = 0
    mask[2, 2:] = 0
    return x, mask


def _block(act="gelu"):
    block = TransformerBlock(32, 4, 64, hidden_act=act)
    x, mask = _inputs()
    block((x, mask))
    return block, ref.randomize(block, scale=0.3)  # outputs that depend on every weight


def _trace(block, constants=True, **kwargs):
    """The block's inference call traced under `building` (or outside it: None)."""
    def call(x, m):
        return block((x, m), training=False, **kwargs)
    if constants is None:
        return tf.function(call).get_concrete_function(*SPECS)
    with serving_graph.building(constants=constants):
        return tf.function(call).get_concrete_function(*SPECS)


def _ops(function):
    """The op types of a traced function's graph, the attention's cond branches included."""
    graph = function.graph.as_graph_def()
    return [node.op for node in graph.node] + [
        node.op for branch in graph.library.function for node in branch.node_def]


def test_heads_move_as_transposes_do():
    x = tf.constant(np.arange(2 * 3 * 4 * 5, dtype="float32").reshape(2, 3, 4, 5))
    np.testing.assert_array_equal(serving_graph.heads_first(x), tf.transpose(x, [0, 2, 1, 3]))
    np.testing.assert_array_equal(serving_graph.heads_last(x), tf.transpose(x, [0, 2, 1, 3]))


@pytest.mark.parametrize("small", [True, False])
def test_attention_on_either_kernels_is_softmax_attention(small, monkeypatch):
    rng = np.random.default_rng(0)
    q, k, v = (rng.normal(size=(2, 3, n, 8)).astype("float32") for n in (5, 7, 7))
    bias = np.zeros((2, 1, 1, 7), "float32")
    bias[0, ..., 4:] = -10000.0  # padding
    monkeypatch.setattr(serving_graph, "SMALL_ATTENTION", 10**9 if small else 0)
    assert bool(serving_graph.small_attention(q, k)) == small
    got = tf.function(serving_graph.attention)(q, k, v, bias, 0.5).numpy()
    want = ref.softmax(q.astype(np.float64) @ k.swapaxes(-1, -2) * 0.5 + bias) @ v
    np.testing.assert_allclose(got, want, atol=1e-5, rtol=0)


def test_small_attention_is_decided_by_the_product_size():
    q = tf.zeros([1, 12, 30, 32])
    assert bool(serving_graph.small_attention(q, tf.zeros([1, 12, 30, 32])))  # 30 tokens
    assert not bool(serving_graph.small_attention(q, tf.zeros([1, 12, 128, 32])))
    assert not bool(serving_graph.small_attention(tf.zeros([32, 12, 64, 32]),
                                                  tf.zeros([32, 12, 64, 32])))


@pytest.mark.parametrize("act", ["gelu", "relu"])
@pytest.mark.parametrize("small", [True, False])
def test_the_serving_graph_computes_the_block(act, small, monkeypatch):
    monkeypatch.setattr(serving_graph, "SMALL_ATTENTION", 10**9 if small else 0)
    # Small attention with small LayerNorms, large attention with the fused LayerNorm.
    monkeypatch.setattr(serving_graph, "LARGE_LAYER_NORM", 10**9 if small else 0)
    block, weights = _block(act)
    x, mask = _inputs()
    want = ref.transformer_block(weights, x, mask, 4, act=act)
    serve = _trace(block)
    np.testing.assert_allclose(serve(x, mask), want, atol=1e-5, rtol=0)
    # Some rows only ([CLS], or chosen positions): the queries of those rows, keys and values
    # of all of them.
    first = _trace(block, output_positions=1)
    np.testing.assert_allclose(first(x, mask), want[:, :1], atol=1e-5, rtol=0)
    positions = np.array([[0, 6, 10], [3, 3, 1], [0, 1, 2]], "int32")
    with serving_graph.building():
        chosen = tf.function(lambda x, m, p: block((x, m), training=False, output_positions=p))
        got = chosen(x, mask, positions)
    np.testing.assert_allclose(got, np.take_along_axis(want, positions[..., None], 1),
                               atol=1e-5, rtol=0)


def test_the_serving_graph_has_fewer_ops(monkeypatch):
    monkeypatch.setattr(serving_graph, "onednn", lambda: True)  # the LayerNorms' cond
    block, _ = _block()
    plain, serve, variables = _trace(block, None), _trace(block), _trace(block, False)
    # Outside `building` nothing changes: four transposes (query, key, value, context),
    # six matmuls.
    assert _ops(plain).count("Transpose") == 4 and _ops(plain).count("MatMul") == 6
    assert "Einsum" not in _ops(plain) and "BatchMatMulV3" not in _ops(plain)
    # Inside: the heads move by einsum, query/key/value in one matmul (with constants) and
    # the attention's small products on BatchMatMulV3 (in one branch of a cond).
    for function, matmuls in ((serve, 4), (variables, 6)):
        ops = _ops(function)
        assert "Transpose" not in ops and "Einsum" in ops, ops
        assert ops.count("MatMul") == matmuls and "BatchMatMulV3" in ops
    # With constants every weight is one, as it was when traced (the fused kernel and bias,
    # the other Dense layers', the LayerNorms' scales and offsets): no variable read, where
    # the graph traced without constants reads sixteen (eight kernels and biases, two
    # gammas and betas).
    assert _ops(serve).count("ReadVariableOp") == 0
    assert _ops(variables).count("ReadVariableOp") == 16


def test_conds_take_few_tensors(monkeypatch):
    # Every tensor a cond takes costs nodes on every call: the attention's takes the three
    # projections as one tensor and the mask, each LayerNorm's its input only (its scale and
    # offset are constants inside the branches). The attention's scale is folded into the
    # queries' weights: no multiplication of the scores in either branch.
    monkeypatch.setattr(serving_graph, "onednn", lambda: True)
    block, _ = _block()
    serve = _trace(block)
    conds = [op for op in serve.graph.get_operations() if op.type in ("If", "StatelessIf")]
    assert sorted(len(op.inputs) for op in conds) == [2, 2, 3]  # the predicate and the tensors
    attention = max(conds, key=lambda op: len(op.inputs))
    library = {f.signature.name: f for f in serve.graph.as_graph_def().library.function}
    for branch in ("then_branch", "else_branch"):
        ops = [node.op for node in library[attention.get_attr(branch).name].node_def]
        assert "Mul" not in ops and ops.count("Unpack") == 1, ops


def _norm(epsilon=1e-12, hidden=48, seed=2):
    import keras

    norm = keras.layers.LayerNormalization(epsilon=epsilon)
    norm.build((None, None, hidden))
    rng = np.random.default_rng(seed)
    norm.gamma.assign(rng.normal(size=hidden).astype("float32"))
    norm.beta.assign(rng.normal(size=hidden).astype("float32"))
    return norm


def _trace_layer_norm(norm, constants=True, shape=(None, 48)):
    """`serving_graph.layer_norm` of ``norm`` traced under `building`."""
    with serving_graph.building(constants=constants):
        return tf.function(lambda t: serving_graph.layer_norm(norm, t)).get_concrete_function(
            tf.TensorSpec(shape))


def _layer_norm_reference(norm, x):
    x = x.astype(np.float64)
    mean = x.mean(-1, keepdims=True)
    variance = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(variance + norm.epsilon) * norm.gamma.numpy() + norm.beta.numpy()


@pytest.mark.parametrize("large", [True, False])
@pytest.mark.parametrize("constants", [True, False])
def test_layer_norm_on_either_path_is_the_layers(large, constants, monkeypatch):
    monkeypatch.setattr(serving_graph, "onednn", lambda: True)  # the fused path on any build
    monkeypatch.setattr(serving_graph, "LARGE_LAYER_NORM", 0 if large else 10**9)
    norm = _norm()
    rng = np.random.default_rng(0)
    x = (rng.normal(size=(7, 48)) * 3 + 1).astype("float32")
    # Rows of tiny spread: a fused batch norm with tf.nn.fused_batch_norm's least epsilon
    # (1.001e-5) would compress them; the layer's own 1e-12 keeps them at unit variance.
    x[3] = 1e-3 * rng.normal(size=48)
    function = _trace_layer_norm(norm, constants=constants)
    got = function(tf.constant(x)).numpy()
    np.testing.assert_allclose(got, _layer_norm_reference(norm, x), atol=2e-5, rtol=0)
    np.testing.assert_allclose(got, norm(x).numpy(), atol=2e-5, rtol=0)
    assert "FusedBatchNormV3" in _ops(function)  # in the large branch of the cond


def test_layer_norm_path_is_decided_by_the_numbers(monkeypatch):
    monkeypatch.setattr(serving_graph, "onednn", lambda: True)
    norm = _norm()
    function = _trace_layer_norm(norm)
    rows = serving_graph.LARGE_LAYER_NORM // 48
    for n, large in ((rows - 1, False), (rows + 1, True)):
        ops = _session_ops(function, np.ones((n, 48), "float32"))
        assert ("FusedBatchNormV3" in ops or "_MklLayerNorm" in ops) == large, (n, ops)
        assert ("Rsqrt" in ops) == (not large), (n, ops)


def _session_ops(function, x):
    """The op types a TF1 session (as TF Serving runs a SavedModel) executes for ``function``
    on ``x``: after TensorFlow's graph rewrites (on x86, oneDNN's)."""
    graph = tf.Graph()
    with graph.as_default():
        feed = tf.compat.v1.placeholder(tf.float32, [None, x.shape[-1]])
        out, = tf.graph_util.import_graph_def(
            function.graph.as_graph_def(), input_map={function.inputs[0].name: feed},
            return_elements=[function.outputs[0].name])
    with tf.compat.v1.Session(graph=graph) as session:
        metadata = tf.compat.v1.RunMetadata()
        session.run(out, {feed: x}, run_metadata=metadata, options=tf.compat.v1.RunOptions(
            trace_level=tf.compat.v1.RunOptions.FULL_TRACE))
    return {node.timeline_label.split(" = ")[1].split("(")[0]
            for device in metadata.step_stats.dev_stats for node in device.node_stats
            if " = " in node.timeline_label}


@pytest.mark.skipif(not serving_graph.onednn(),
                    reason="oneDNN's graph rewrites: TensorFlow's x86 builds")
def test_a_large_layer_norm_runs_as_one_onednn_kernel(monkeypatch):
    monkeypatch.setattr(serving_graph, "LARGE_LAYER_NORM", 0)
    norm = _norm()
    function = _trace_layer_norm(norm)
    ops = _session_ops(function, np.ones((300, 48), "float32"))
    assert "_MklLayerNorm" in ops and "FusedBatchNormV3" not in ops, ops


def test_without_onednn_layer_norm_is_the_layers_call(monkeypatch):
    # TensorFlow's own FusedBatchNormV3 over rows is slower than the separate ops: no cond.
    monkeypatch.setattr(serving_graph, "onednn", lambda: False)
    monkeypatch.setattr(serving_graph, "LARGE_LAYER_NORM", 0)
    norm = _norm()
    function = _trace_layer_norm(norm)
    assert "FusedBatchNormV3" not in _ops(function) and "If" not in _ops(function)


def test_onednn_is_what_this_tensorflow_runs():
    code = "from keras_bert.layers import serving_graph; print(serving_graph.onednn())"
    for flag, want in (("0", "False"), ("1", str(int8.available()))):
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                env={**os.environ, "TF_ENABLE_ONEDNN_OPTS": flag},
                                timeout=300)
        assert result.stdout.strip().splitlines()[-1] == want, (flag, result.stderr[-2000:])


def test_layer_norm_of_other_inputs_is_the_layers_call():
    # Not [rows, hidden] float32 (here 3-D): the layer's own call, no cond.
    norm = _norm()
    function = _trace_layer_norm(norm, shape=[None, None, 48])
    assert "FusedBatchNormV3" not in _ops(function) and "If" not in _ops(function)


def _int8_block():
    block, _ = _block()
    for layer in (block.query, block.key, block.value, block.attention_output,
                  block.intermediate, block.output_dense):
        layer.quantize("int8")
    return block


def test_an_int8_block_runs_its_three_projections_in_one_kernel_call(monkeypatch):
    # (The feed-forward layers as the layers' calls: never in halves.)
    monkeypatch.setattr(int8, "SINGLE_THREAD_BYTES", 0)
    block = _int8_block()
    x, mask = _inputs()
    want = block((x, mask), training=False).numpy()
    # The attention on oneDNN's kernels, as the inference call outside runs it: query, key and
    # value in one kernel call are the three calls' arithmetic, column by column.
    monkeypatch.setattr(serving_graph, "SMALL_ATTENTION", 0)
    serve = _trace(block)
    np.testing.assert_allclose(serve(x, mask), want, atol=1e-6, rtol=0)
    # 6 kernel calls, not 8: one for query, key and value (one quantization of their input),
    # the attention output, the feed-forward layers twice (the first position apart).
    ops = _ops(serve)
    assert ops.count(int8.OP) == 6 and ops.count("QuantizeV2") == 6
    # On TensorFlow's own attention kernels: float32 rounding apart before the context is
    # quantized, so now and then an activation one int8 step away.
    monkeypatch.setattr(serving_graph, "SMALL_ATTENTION", 10**9)
    np.testing.assert_allclose(_trace(block)(x, mask), want, atol=0.02, rtol=0)


def test_the_feed_forward_layers_split_where_the_kernel_runs_on_one_thread():
    block = _int8_block()
    # kernel 32 x 64: while rows * 64 + 32 * (rows + 64) < 1 MiB, and the LayerNorms'
    # separate ops take the rows (hidden 32: up to 2,047)
    assert (2**20 - 32 * 64) // 96 > 2047
    assert block._int8_split_rows() == 2047
    big = TransformerBlock(64, 4, 2**14, hidden_act="gelu")  # a 1 MiB int8 kernel
    x, mask = _inputs(hidden=64)
    big((x, mask))
    for layer in (big.intermediate, big.output_dense):
        layer.quantize("int8")
    assert big._int8_split_rows() == 0
    silu, _ = _block(act="silu")  # an activation the kernel does not fuse
    for layer in (silu.intermediate, silu.output_dense):
        layer.quantize("int8")
    assert silu._int8_split_rows() == 0
    block.intermediate.enable_lora(2)
    assert block._int8_split_rows() == 0


def test_the_feed_forward_layers_in_halves():
    block = _int8_block()
    x = tf.constant(np.random.default_rng(3).normal(size=(20, 32)).astype("float32"))
    w1 = block.intermediate._kernel.numpy() / block.intermediate.kernel_scale.numpy()
    w2 = block.output_dense._kernel.numpy() / block.output_dense.kernel_scale.numpy()
    hidden = tf.nn.gelu(x.numpy() @ w1 + block.intermediate.bias.numpy()).numpy()
    want = x.numpy() + hidden @ w2 + block.output_dense.bias.numpy()

    def parts(n):
        weights = block._int8_feed_forward_weights(block._int8_feed_forward_arrays(), n)
        return block._int8_feed_forward_parts(x, weights).numpy()

    whole, halves = parts(1), parts(2)
    # One part: the layers' own calls on the kernel, exactly.
    np.testing.assert_allclose(whole, block._int8_feed_forward_rows(x), atol=1e-6, rtol=0)
    # Two: each half of the activations quantized with its own range; within int8's error
    # of the float layers, and not the one-part arithmetic.
    assert np.abs(halves - want).max() < 0.02 * np.abs(want).max()
    assert np.abs(halves - whole).max() > 1e-4
    # The weights read as constants (a serving export's graph): the same arithmetic.
    with serving_graph.building():
        constant = tf.function(lambda t: block._int8_feed_forward_parts(
            t, block._int8_feed_forward_weights(block._int8_feed_forward_arrays(), 2))
        ).get_concrete_function(tf.TensorSpec([None, 32]))
    assert "ReadVariableOp" not in _ops(constant)
    np.testing.assert_allclose(constant(x), halves, atol=1e-6, rtol=0)


def test_a_small_int8_block_takes_the_halves_at_few_rows(monkeypatch):
    block = _int8_block()
    x, mask = _inputs()  # 33 rows
    want = block((x, mask), training=False).numpy()  # the halves, as the export's
    serve = _trace(block)
    ops = _ops(serve)
    # Both branches in the graph: 2 + 4 (halves) + 4 (first position apart) kernel calls.
    assert ops.count(int8.OP) == 10 and ops.count("QuantizeV2") == 2 + 3 + 4
    np.testing.assert_allclose(serve(x, mask), want, atol=2e-5, rtol=0)
    # Without the halves (a large kernel): the first position apart, other numbers.
    monkeypatch.setattr(int8, "SINGLE_THREAD_BYTES", 0)
    apart = block((x, mask), training=False).numpy()
    assert np.abs(apart - want).max() > 1e-4 and np.abs(apart - want).max() < 0.1
    monkeypatch.undo()
    # More rows than the LayerNorms' separate ops take (hidden 32: 1,056 numbers from 33
    # rows): the first position apart, in the Keras call and the export alike.
    monkeypatch.setattr(serving_graph, "LARGE_LAYER_NORM", 33 * 32)
    np.testing.assert_allclose(block((x, mask), training=False), apart, atol=1e-6, rtol=0)
    np.testing.assert_allclose(_trace(block)(x, mask), apart, atol=2e-5, rtol=0)


def _conds(function):
    return sum(op in ("If", "StatelessIf") for op in _ops(function))


@pytest.mark.parametrize("quantized", [False, True])
def test_a_call_of_few_tokens_is_traced_without_conds(quantized, monkeypatch):
    monkeypatch.setattr(serving_graph, "onednn", lambda: True)  # the LayerNorms' conds
    block = _int8_block() if quantized else _block()[0]
    # hidden 32: the attention's products of n tokens are small up to n = isqrt(2**20 // 32)
    # = 181, the LayerNorms' separate ops take (2**16 - 1) // 32 = 2,047 rows, as many as
    # the int8 halves (test_the_feed_forward_layers_split_where_the_kernel_runs_on_one_thread)
    assert serving_graph.small_width_tokens(32) == 181
    # (a float32 block: no graph of its own, which would not pay; the bound still applies)
    assert block.small_serving_tokens() == (181 if quantized else None)
    x, mask = _inputs()  # 33 tokens: the small side of every choice
    want = _trace(block)(x, mask)
    assert _conds(_trace(block)) == (2 if quantized else 3)  # attention, LayerNorms / halves

    def bounded(tokens):
        with serving_graph.building(), serving_graph.bounded(tokens):
            return tf.function(lambda x, m: block((x, m), training=False)).get_concrete_function(
                *SPECS)

    serve = bounded(181)
    assert _conds(serve) == 0
    np.testing.assert_allclose(serve(x, mask), want, atol=1e-6, rtol=0)
    # A bound that decides only some choices keeps the others' conds: 182 tokens, the
    # attention's.
    assert _conds(bounded(182)) == 1
    # Outside `building` the bound is not read.
    with serving_graph.bounded(10):
        assert serving_graph.bound() is None


def test_a_model_s_small_tokens_are_its_blocks_least(monkeypatch):
    from tests.models.tiny import tiny_encoder

    encoder = tiny_encoder()
    classifier = keras_bert.BertClassifier(encoder, 2)
    assert serving_graph.small_tokens(classifier) is None  # float32

    def quantize(block):
        for layer in (block.query, block.key, block.value, block.attention_output,
                      block.intermediate, block.output_dense):
            layer.quantize("int8")

    quantize(encoder.get_layer("transformer_block_0"))
    assert serving_graph.small_tokens(classifier) is None  # one block of two int8
    quantize(encoder.get_layer("transformer_block_1"))
    # hidden 16: isqrt(2**20 // 16) = 256 tokens
    assert serving_graph.small_tokens(encoder) == serving_graph.small_tokens(classifier) == 256
    assert serving_graph.small_tokens(tf.keras.layers.Dense(2)) is None
    # all-MiniLM-L6-v2's sizes, int8: 52 tokens (the attention; the halves take 170 rows)
    block = TransformerBlock(384, 12, 1536)
    block((np.zeros((1, 2, 384), "float32"), np.ones((1, 2), "int32")))
    quantize(block)
    assert block._int8_split_rows() == 170 and block.small_serving_tokens() == 52
    monkeypatch.setattr(serving_graph, "SMALL_ATTENTION", 1 << 30)
    assert block.small_serving_tokens() == 170
    # Feed-forward layers not in halves (an int8 kernel of 1 MiB or more: BERT-base's):
    # no graph of its own
    monkeypatch.setattr(int8, "SINGLE_THREAD_BYTES", 0)
    assert block.small_serving_tokens() is None


def test_constants_are_made_once_per_graph():
    variable = tf.Variable(np.arange(6, dtype="float32").reshape(2, 3))

    def consts(graph):
        return [op for op in graph.get_operations() if op.type == "Const"
                and op.get_attr("value").tensor_shape.dim and
                [d.size for d in op.get_attr("value").tensor_shape.dim] == [2, 3]]

    def call(x):
        once = serving_graph.constant(variable) + serving_graph.constant(variable)
        branch = tf.cond(x > 0, lambda: serving_graph.constant(variable) * 2.0,
                         lambda: serving_graph.constant(variable) * 3.0)
        return once + branch

    with serving_graph.building():
        traced = tf.function(call).get_concrete_function(tf.TensorSpec([]))
    # one in the function's graph, one in each branch's; the cond takes only the predicate
    assert len(consts(traced.graph)) == 1
    (cond,) = [op for op in traced.graph.get_operations() if op.type in ("If", "StatelessIf")]
    assert len(cond.inputs) == 1
    np.testing.assert_array_equal(traced(tf.constant(1.0)), variable.numpy() * 4)
    variable.assign(variable * 0)  # the graph keeps the values it saw
    np.testing.assert_array_equal(traced(tf.constant(-1.0)), np.arange(6).reshape(2, 3) * 5)


def test_with_variables_large_weights_are_read_and_computed_ones_stored(monkeypatch):
    """``building(variables=[...])``: a weight of more than SMALL_WEIGHT_BYTES is read from
    its variable, an array computed at trace time becomes one new variable per distinct
    value (appended to the list, read in every graph that uses it); small ones stay
    constants."""
    monkeypatch.setattr(serving_graph, "SMALL_WEIGHT_BYTES", 8)
    variable = tf.Variable(np.arange(6, dtype="float32").reshape(2, 3))
    small = tf.Variable(np.float32([1.0, 2.0]))  # 8 bytes
    computed = np.arange(6, dtype="float32").reshape(2, 3) + 10

    def call(x):
        branch = tf.cond(x > 0, lambda: serving_graph.tensor(computed) * 2.0,
                         lambda: serving_graph.tensor(computed.copy()) * 3.0)
        return (serving_graph.constant(variable) + serving_graph.tensor(computed) + branch
                + tf.reduce_sum(serving_graph.constant(small))
                + serving_graph.tensor(np.float32([5.0])))

    made = []
    with serving_graph.building(variables=made):
        traced = tf.function(call).get_concrete_function(tf.TensorSpec([]))
    assert len(made) == 1 and not made[0].trainable  # the computed array, once
    np.testing.assert_array_equal(made[0].numpy(), computed)
    captured = {id(t) for t in traced.captured_inputs}
    assert {id(variable.handle), id(made[0].handle)} <= captured
    assert id(small.handle) not in captured  # a constant
    np.testing.assert_array_equal(traced(tf.constant(1.0)), variable.numpy() + computed * 3 + 8)
    variable.assign(variable * 0)  # read in each call
    np.testing.assert_array_equal(traced(tf.constant(-1.0)), computed * 4 + 8)
    with pytest.raises(ValueError, match="constants=True"):
        with serving_graph.building(constants=False, variables=[]):
            pass


@pytest.mark.parametrize("small", [True, False])
def test_a_mixed_precision_dense_casts_its_weights_at_trace_time(small, monkeypatch):
    """A mixed_bfloat16 Dense in the serving graph: Keras' computation on its weights cast to
    bfloat16 once (a bfloat16 constant, or a new bfloat16 variable when large), never a cast
    of a weight per call; the outputs equal the layer's own within bfloat16 rounding (one
    step of 2^-7 and less: oneDNN's fused matmul, bias and GELU round once, and on constant
    weights it picks another kernel)."""
    from keras_bert.layers.dense import Dense

    if not small:
        monkeypatch.setattr(serving_graph, "SMALL_WEIGHT_BYTES", 0)
    layer = Dense(8, activation="gelu", dtype="mixed_bfloat16")
    x = np.random.default_rng(0).normal(size=(3, 5)).astype("float32")
    want = layer(x).numpy()
    made = []
    with serving_graph.building(variables=made):
        serve = tf.function(lambda t: layer(t, training=False)).get_concrete_function(
            tf.TensorSpec([None, 5]))
    casts = [op for op in serve.graph.get_operations() if op.type == "Cast"]
    assert "Placeholder" in [op.inputs[0].op.type for op in casts]  # the input's
    assert not [op for op in casts if op.inputs[0].op.type == "ReadVariableOp"
                or op.outputs[0].shape.as_list() in ([5, 8], [8])]  # no weight's
    assert [(v.dtype, tuple(v.shape)) for v in made] == (
        [] if small else [(tf.bfloat16, (5, 8)), (tf.bfloat16, (8,))])
    got = serve(tf.constant(x)).numpy()
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got.astype("float32"), want.astype("float32"), rtol=2 ** -7,
                               atol=2 ** -10)


def test_layers_with_lora_are_not_fused():
    block, _ = _block()
    block.query.enable_lora(2)
    block.query.lora_kernel_b.assign(np.full(block.query.lora_kernel_b.shape, 0.1, "float32"))
    x, mask = _inputs()
    want = block((x, mask), training=False).numpy()
    serve = _trace(block)
    assert _ops(serve).count("MatMul") > 4  # query on its own, with its LoRA factors
    np.testing.assert_allclose(serve(x, mask), want, atol=1e-5, rtol=0)
