"""Similarity, search and ranking: sentence-transformers' util.cos_sim (and its other
similarities), util.semantic_search and CrossEncoder.rank's structure, on the same scores."""

import numpy as np
import pytest

from keras_bert.models import retrieval
from tests.dependencies import require


def _vectors(n, dim=8, seed=0):
    return np.random.default_rng(seed).normal(size=(n, dim)).astype("float32")


def _util():
    require("torch")
    require("sentence_transformers")
    from sentence_transformers import util

    return util


@pytest.mark.parametrize("function, reference", [
    ("cosine", "cos_sim"), ("dot", "dot_score"), ("euclidean", "euclidean_sim"),
    ("manhattan", "manhattan_sim")])
def test_similarity_is_sentence_transformers(function, reference):
    a, b = _vectors(3), _vectors(5, seed=1)
    want = getattr(_util(), reference)(a, b).numpy()
    got = retrieval.similarity(a, b, function)
    assert got.shape == (3, 5)
    np.testing.assert_allclose(got, want, atol=1e-5, rtol=1e-6)
    np.testing.assert_allclose(retrieval.similarity(a[0], b, function), want[:1], atol=1e-5)


@pytest.mark.parametrize("top_k, chunk", [(3, 100_000), (3, 4), (50, 7), (1, 1)])
def test_semantic_search_is_sentence_transformers(top_k, chunk):
    queries, corpus = _vectors(4), _vectors(20, seed=1)
    want = _util().semantic_search(queries, corpus, top_k=top_k)
    got = retrieval.semantic_search(queries, corpus, top_k=top_k, corpus_chunk_size=chunk)
    assert [[hit["corpus_id"] for hit in row] for row in got] == [
        [hit["corpus_id"] for hit in row] for row in want]
    for got_row, want_row in zip(got, want):
        assert len(got_row) == min(top_k, 20)
        np.testing.assert_allclose([h["score"] for h in got_row],
                                   [h["score"] for h in want_row], atol=1e-6)
        assert all(isinstance(h["corpus_id"], int) and isinstance(h["score"], float)
                   for h in got_row)


def test_search_of_every_entry_and_ties_in_corpus_order():
    corpus = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]], "float32")
    hits = retrieval.semantic_search(np.array([1.0, 0.0], "float32"), corpus, top_k=None)
    assert [h["corpus_id"] for h in hits[0]] == [0, 2, 1]
    assert [round(h["score"], 6) for h in hits[0]] == [1.0, 1.0, 0.0]


def test_ranked_is_cross_encoder_rank_structure():
    scores = [0.2, 0.9, 0.2, 0.5]
    assert retrieval.ranked(scores) == [
        {"corpus_id": 1, "score": 0.9}, {"corpus_id": 3, "score": 0.5},
        {"corpus_id": 0, "score": 0.2}, {"corpus_id": 2, "score": 0.2}]
    assert retrieval.ranked(scores, top_k=1, documents=["a", "b", "c", "d"]) == [
        {"corpus_id": 1, "score": 0.9, "text": "b"}]


@pytest.mark.parametrize("call, error", [
    (lambda: retrieval.similarity(_vectors(2), _vectors(2, dim=4)),
     r"The embeddings differ in size: a has 8 values each, b 4"),
    (lambda: retrieval.similarity(_vectors(2), _vectors(2), "jaccard"),
     r"similarity_fn_name must be one of 'cosine', 'dot', 'euclidean', 'manhattan'"),
    (lambda: retrieval.similarity(np.zeros((2, 2, 2)), _vectors(2)),
     r"a must be embeddings \[n, dim\] \(or one \[dim\]\), got shape \(2, 2, 2\)"),
    (lambda: retrieval.semantic_search(_vectors(2), _vectors(2), top_k=0),
     r"top_k must be a positive int \(or None for all\), got 0"),
])
def test_bad_inputs_are_named(call, error):
    with pytest.raises(ValueError, match=error):
        call()
