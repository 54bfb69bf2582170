"""The layers under 'mixed_bfloat16' and 'mixed_float16': finite, float32 where it matters,
close to float32 results, and usable under a float32 head."""

import numpy as np
import pytest
import tensorflow as tf

import keras_bert  # noqa: F401  (selects the TensorFlow backend)
import keras
from keras_bert.layers import BertEmbeddings, Pooler, TransformerBlock

import layer_reference as ref

POLICIES = ["mixed_bfloat16", "mixed_float16"]
# Max abs error against float32 of one post-LayerNorm block (outputs are O(1)): bfloat16 keeps
# 8 significant bits, float16 11.
TOLERANCE = {"mixed_bfloat16": 0.08, "mixed_float16": 0.01}
HIDDEN, HEADS, INTERMEDIATE, VOCAB, MAX_LEN = 64, 4, 128, 100, 32


def _inputs(batch=4, seq=12):
    rng = np.random.default_rng(0)
    ids = rng.integers(1, VOCAB, size=(batch, seq)).astype("int32")
    mask = np.ones_like(ids)
    mask[1, 5:] = 0
    types = np.zeros_like(ids)
    types[:, seq // 2:] = 1
    x = rng.normal(size=(batch, seq, HIDDEN)).astype("float32")
    return ids, mask, types, x


def _copy_weights(src, dst):
    for name, var in src.canonical_variables().items():
        dst.canonical_variables()[name].assign(var.numpy())


def _pair(make, call):
    """The same layer in float32 and under a policy, sharing weights; returns both outputs."""
    outputs = {}
    base = make("float32")
    call(base)
    ref.randomize(base)
    for policy in ["float32"] + POLICIES:
        layer = base if policy == "float32" else make(policy)
        call(layer)
        if layer is not base:
            _copy_weights(base, layer)
        outputs[policy] = call(layer)
    return outputs


@pytest.mark.parametrize("jit_compile", [False, True])
def test_transformer_block_close_to_float32(jit_compile):
    _, mask, _, x = _inputs()

    def call(layer):
        fn = tf.function(lambda x, m: layer((x, m)), jit_compile=jit_compile)
        return fn(tf.cast(x, layer.compute_dtype), mask)

    out = _pair(lambda p: TransformerBlock(HIDDEN, HEADS, INTERMEDIATE, dtype=p), call)
    want = out["float32"].numpy()
    for policy in POLICIES:
        got = out[policy]
        assert got.dtype == keras.dtype_policies.get(policy).compute_dtype
        got = got.numpy().astype("float32")
        assert np.isfinite(got).all()
        err = np.abs(got - want).max()
        assert err < TOLERANCE[policy], (policy, err)


def test_float16_attention_scores_beyond_float16_range_stay_finite():
    # Query and key projections large enough that the unscaled q.k (16 dims x 64^2 = 65,536)
    # overflows float16 (max 65,504); scaled by 1/sqrt(16) it is 16,384.
    mask = np.ones((1, 3), "int32")
    x = np.ones((1, 3, 32), "float32")
    out = {}
    for policy in ["float32", "mixed_float16"]:
        block = TransformerBlock(32, 2, 64, dtype=policy)
        block((x, mask))
        for var in block.canonical_variables().values():
            var.assign(np.zeros(var.shape, "float32"))
        for name in ("attention/self/query/bias", "attention/self/key/bias"):
            block.canonical_variables()[name].assign(np.full((32,), 64.0, "float32"))
        for name in ("attention/output/LayerNorm/gamma", "output/LayerNorm/gamma"):
            block.canonical_variables()[name].assign(np.ones((32,), "float32"))
        out[policy] = block((x, mask)).numpy().astype("float32")
    assert np.isfinite(out["mixed_float16"]).all()
    np.testing.assert_allclose(out["mixed_float16"], out["float32"], atol=TOLERANCE["mixed_float16"])


def test_embeddings_and_pooler_close_to_float32():
    ids, _, types, x = _inputs()
    emb = _pair(lambda p: BertEmbeddings(VOCAB, HIDDEN, MAX_LEN, dtype=p),
                lambda layer: layer((ids, types)))
    pool = _pair(lambda p: Pooler(HIDDEN, dtype=p), lambda layer: layer(x))
    for out in (emb, pool):
        for policy in POLICIES:
            got = out[policy].numpy().astype("float32")
            assert np.isfinite(got).all()
            assert np.abs(got - out["float32"].numpy()).max() < TOLERANCE[policy]


def _op_dtypes(fn, *args, op_types):
    graph = tf.function(fn).get_concrete_function(*args).graph
    return {(op.type, op.get_attr("T").name) for op in graph.get_operations()
            if op.type in op_types}


@pytest.mark.parametrize("policy", POLICIES)
def test_softmax_and_layer_norm_compute_in_float32(policy):
    ids, mask, types, x = _inputs()
    block = TransformerBlock(HIDDEN, HEADS, INTERMEDIATE, dtype=policy)
    emb = BertEmbeddings(VOCAB, HIDDEN, MAX_LEN, dtype=policy)
    half = keras.dtype_policies.get(policy).compute_dtype
    found = _op_dtypes(lambda x, m: block((x, m)), tf.cast(x, half), mask,
                       op_types={"Softmax", "Rsqrt", "Mean", "MatMul", "BatchMatMulV2"})
    assert ("Softmax", "float32") in found and ("Rsqrt", "float32") in found
    assert all(dtype == "float32" for op, dtype in found if op in ("Softmax", "Rsqrt", "Mean"))
    # The matmuls are where mixed precision pays: they run in the half type.
    assert all(dtype == half for op, dtype in found if op in ("MatMul", "BatchMatMulV2"))
    found = _op_dtypes(lambda i, t: emb((i, t)), ids, types, op_types={"Rsqrt", "Mean"})
    assert found and all(dtype == "float32" for _, dtype in found)


def _classifier(policy):
    """Embeddings -> block -> pooler under ``policy``, then a float32 Dense head."""
    ids = keras.Input((None,), dtype="int32", name="ids")
    mask = keras.Input((None,), dtype="int32", name="mask")
    types = keras.Input((None,), dtype="int32", name="types")
    x = BertEmbeddings(VOCAB, HIDDEN, MAX_LEN, dtype=policy, name="emb")((ids, types))
    x = TransformerBlock(HIDDEN, HEADS, INTERMEDIATE, dtype=policy, name="block")((x, mask))
    pooled = Pooler(HIDDEN, dtype=policy, name="pooler")(x)
    logits = keras.layers.Dense(3, dtype="float32", name="head")(pooled)
    return keras.Model([ids, mask, types], logits)


@pytest.mark.parametrize("policy", POLICIES)
def test_float32_head_on_top_trains(policy, tmp_path):
    ids, mask, types, _ = _inputs()
    model = _classifier(policy)
    logits = model([ids, mask, types])
    assert logits.dtype == "float32" and np.isfinite(logits.numpy()).all()

    optimizer = keras.optimizers.Adam(1e-3)
    if policy == "mixed_float16":
        optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
    model.compile(optimizer=optimizer,
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    labels = np.array([0, 1, 2, 1])
    history = model.fit([ids, mask, types], labels, epochs=3, batch_size=4, verbose=0)
    losses = history.history["loss"]
    assert np.isfinite(losses).all() and losses[-1] < losses[0]
    assert all(v.dtype == "float32" for v in model.trainable_variables)

    model.save(tmp_path / "model.keras")
    loaded = keras.models.load_model(tmp_path / "model.keras")
    assert loaded.get_layer("block").dtype_policy.name == policy
    np.testing.assert_array_equal(loaded([ids, mask, types]).numpy(),
                                  model([ids, mask, types]).numpy())
