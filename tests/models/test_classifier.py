"""BertClassifier.rerank: a cross-encoder's scores and order, as sentence-transformers'
CrossEncoder.rank gives them for the same weights; what it refuses."""

import numpy as np
import pytest

from keras_bert import BertClassifier, BertPreprocessor
from tests.dependencies import require
from tests.models.tiny import VOCAB, tiny_encoder

QUERY = "a good movie"
DOCUMENTS = ["the actor was very good", "a dull and boring film", "what a fun plot",
             "the cat sat", "a good movie", "not good"]


@pytest.fixture(scope="module")
def cross_encoder_dir(tmp_path_factory):
    """A Hugging Face BertForSequenceClassification(num_labels=1) written by transformers."""
    torch = require("torch")
    transformers = require("transformers")
    directory = tmp_path_factory.mktemp("cross") / "model"
    config = transformers.BertConfig(
        vocab_size=len(VOCAB), hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=32, max_position_embeddings=64, initializer_range=0.2, num_labels=1)
    torch.manual_seed(0)
    transformers.BertForSequenceClassification(config).save_pretrained(str(directory))
    (directory / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    transformers.BertTokenizer(str(directory / "vocab.txt"), do_lower_case=True
                               ).save_pretrained(str(directory))
    return directory


def _reranker(directory):
    """The cross-encoder as a BertClassifier: the encoder from the checkpoint and its
    classifier head (Hugging Face's ``classifier.weight`` [1, hidden], ``classifier.bias``)."""
    from safetensors.numpy import load_file

    model = BertClassifier.from_preset(str(directory), num_classes=1, seq_length=32)
    tensors = load_file(str(directory / "model.safetensors"))
    model.logits.kernel.assign(tensors["classifier.weight"].T)
    model.logits.bias.assign(tensors["classifier.bias"])
    return model


def test_rerank_is_cross_encoder_rank(cross_encoder_dir):
    require("sentence_transformers")
    from sentence_transformers import CrossEncoder

    reference = CrossEncoder(str(cross_encoder_dir), device="cpu")
    model = _reranker(cross_encoder_dir)
    for top_k in (None, 3):
        want = reference.rank(QUERY, DOCUMENTS, top_k=top_k, return_documents=True)
        got = model.rerank(QUERY, DOCUMENTS, top_k=top_k, return_documents=True)
        assert [(h["corpus_id"], h["text"]) for h in got] == [
            (h["corpus_id"], h["text"]) for h in want]
        np.testing.assert_allclose([h["score"] for h in got], [h["score"] for h in want],
                                   atol=1e-5)
    scores = [h["score"] for h in model.rerank(QUERY, DOCUMENTS)]
    assert max(scores) - min(scores) > 0.01  # the scores read the documents


def test_scores_are_the_model_s_own_outputs(cross_encoder_dir):
    model = _reranker(cross_encoder_dir)
    logits = model.predict(([QUERY] * len(DOCUMENTS), DOCUMENTS), verbose=0).reshape(-1)
    raw = model.rerank(QUERY, DOCUMENTS, activation=None)
    assert [h["corpus_id"] for h in raw] == list(np.argsort(-logits, kind="stable"))
    np.testing.assert_allclose([h["score"] for h in raw], np.sort(logits)[::-1], atol=1e-6)
    sigmoid = model.rerank(QUERY, DOCUMENTS)  # "auto": CrossEncoder's sigmoid on logits
    np.testing.assert_allclose([h["score"] for h in sigmoid],
                               1 / (1 + np.exp(-np.sort(logits)[::-1])), atol=1e-6)
    assert model.rerank(QUERY, []) == []


def test_only_a_single_score_model_reranks():
    model = BertClassifier(tiny_encoder(), num_classes=2,
                           preprocessor=BertPreprocessor(VOCAB, seq_length=16))
    with pytest.raises(ValueError, match=r"rerank needs a single-score model \(a cross-encoder, "
                                         r"num_classes=1\); this BertClassifier has "
                                         r"num_classes=2"):
        model.rerank(QUERY, DOCUMENTS)
    single = BertClassifier(tiny_encoder(), num_classes=1,
                            preprocessor=BertPreprocessor(VOCAB, seq_length=16))
    with pytest.raises(ValueError, match=r"rerank takes one query \(a string\), got list"):
        single.rerank([QUERY], DOCUMENTS)
