"""MaskedLMHead: gathers the masked positions, Google's transform, decoder tied to the word
embeddings, float32 logits; the shared layer checks."""

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.layers import BertEmbeddings, MaskedLMHead
from tests.harness import check_layer

RNG = np.random.default_rng(0)
SEQUENCE = RNG.normal(size=(2, 6, 8)).astype("float32")
POSITIONS = np.array([[1, 4, 0], [5, 2, 2]], "int32")


def _call(head, x):
    return head(x["sequence"], x["positions"])


def test_shared_checks():
    check_layer(MaskedLMHead(vocab_size=11, hidden_size=8),
                {"sequence": SEQUENCE, "positions": POSITIONS}, call=_call)


def test_logits_are_the_reference_at_masked_positions_only():
    embeddings = BertEmbeddings(vocab_size=11, hidden_size=8, max_position_embeddings=16)
    embeddings((np.zeros((1, 3), "int32"), np.zeros((1, 3), "int32")))
    head = MaskedLMHead(vocab_size=11, hidden_size=8, hidden_act="gelu", embeddings=embeddings)
    logits = head(SEQUENCE, POSITIONS).numpy()
    assert logits.shape == (2, 3, 11) and logits.dtype == np.float32
    # The decoder is the embedding table itself, not a copy.
    assert head.embeddings.word_embeddings is embeddings.word_embeddings
    bias = RNG.normal(size=11).astype("float32")
    v = head.canonical_variables()
    v["cls/predictions/output_bias"].assign(bias)
    x = np.take_along_axis(SEQUENCE, POSITIONS[..., None], axis=1)  # gathered first
    kernel = v["cls/predictions/transform/dense/kernel"].numpy()
    h = x @ kernel + v["cls/predictions/transform/dense/bias"].numpy()
    h = 0.5 * h * (1 + tf.math.erf(h / np.sqrt(2)).numpy())  # exact gelu
    mean, var = h.mean(-1, keepdims=True), h.var(-1, keepdims=True)
    h = (h - mean) / np.sqrt(var + 1e-12)
    h = h * v["cls/predictions/transform/LayerNorm/gamma"].numpy() + \
        v["cls/predictions/transform/LayerNorm/beta"].numpy()
    want = h @ embeddings.word_embeddings.numpy().T + bias
    np.testing.assert_allclose(head(SEQUENCE, POSITIONS).numpy(), want, atol=1e-5)


def test_embeddings_of_another_size_are_refused():
    embeddings = BertEmbeddings(vocab_size=12, hidden_size=8)
    with pytest.raises(ValueError, match=r"MaskedLMHead\(11, 8\) cannot tie to embeddings of "
                                         r"vocab_size=12, hidden_size=8"):
        MaskedLMHead(vocab_size=11, hidden_size=8, embeddings=embeddings)


def test_decoding_and_its_gradients_are_two_dimensional_matmuls():
    """A [batch, predictions, hidden] x [vocab, hidden]^T batch matmul broadcasts the table:
    its gradient for the table is a [batch, vocab, hidden] tensor summed over the batch (a
    third of a BERT-small pre-training step on CPU). Every matmul here must be a MatMul."""
    embeddings = BertEmbeddings(vocab_size=11, hidden_size=8, max_position_embeddings=16)
    embeddings((np.zeros((1, 3), "int32"), np.zeros((1, 3), "int32")))
    head = MaskedLMHead(vocab_size=11, hidden_size=8, embeddings=embeddings)
    head(SEQUENCE, POSITIONS)

    @tf.function
    def gradients(sequence, positions):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(head(sequence, positions) ** 2)
        return tape.gradient(loss, head.trainable_variables + embeddings.trainable_variables)

    graph = gradients.get_concrete_function(
        tf.TensorSpec([None, None, 8]), tf.TensorSpec([None, None], tf.int32)).graph
    op_types = {op.type for op in graph.get_operations()}
    for function in graph._functions.values():  # the gradient's own function bodies, if any
        op_types |= {node.op for node in function.definition.node_def}
    assert "MatMul" in op_types
    assert not op_types & {"BatchMatMul", "BatchMatMulV2", "BatchMatMulV3", "Einsum"}
