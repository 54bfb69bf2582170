"""Similarity, search and ranking on scores: what `BertTextEmbedder.similarity` and ``.search``
and `BertClassifier.rerank` return, in sentence-transformers' structures.

* `similarity`: the score matrix ``[len(a), len(b)]`` of two sets of embeddings under
  ``"cosine"`` (``util.cos_sim``), ``"dot"``, ``"euclidean"`` or ``"manhattan"`` (the negative
  distances, as sentence-transformers' ``similarity`` gives them);
* `semantic_search`: per query, the ``top_k`` corpus entries as ``{"corpus_id", "score"}``
  sorted by decreasing score (``util.semantic_search``);
* `ranked`: scores of documents as ``CrossEncoder.rank`` returns them.

Ties keep the corpus order. Everything is numpy: a search over a corpus too large for one
matrix of scores goes in chunks of ``corpus_chunk_size`` rows.

>>> import numpy as np
>>> corpus = np.array([[1., 0.], [0., 1.], [1., 1.]], "float32")
>>> semantic_search(np.array([[1., 0.1]], "float32"), corpus, top_k=2)
[[{'corpus_id': 0, 'score': 0.995...}, {'corpus_id': 2, 'score': 0.773...}]]
"""

import numpy as np

SIMILARITY_FUNCTIONS = ("cosine", "dot", "euclidean", "manhattan")


def _matrix(x, what):
    array = np.asarray(x, dtype=np.float32)
    if array.ndim == 1:
        array = array[None, :]
    if array.ndim != 2:
        raise ValueError(f"{what} must be embeddings [n, dim] (or one [dim]), got shape "
                         f"{array.shape}.")
    return array


def _normalized(x):
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)


def check_function(name):
    """``name`` if it is one of `SIMILARITY_FUNCTIONS`, else a ValueError listing them."""
    if name not in SIMILARITY_FUNCTIONS:
        raise ValueError(f"similarity_fn_name must be one of "
                         f"{', '.join(map(repr, SIMILARITY_FUNCTIONS))}, got {name!r}.")
    return name


def similarity(a, b, function="cosine"):
    """The scores ``[len(a), len(b)]`` (float32) of embeddings ``a`` ``[n, dim]`` against
    ``b`` ``[m, dim]`` (a single ``[dim]`` is one row)."""
    check_function(function)
    a, b = _matrix(a, "a"), _matrix(b, "b")
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"The embeddings differ in size: a has {a.shape[1]} values each, b "
                         f"{b.shape[1]}.")
    if function == "cosine":
        return _normalized(a) @ _normalized(b).T
    if function == "dot":
        return a @ b.T
    difference = a[:, None, :] - b[None, :, :]
    if function == "euclidean":
        return -np.sqrt(np.sum(difference * difference, axis=-1))
    return -np.sum(np.abs(difference), axis=-1)


def _top(scores, top_k):
    """The indices of the ``top_k`` largest ``scores`` (1-D), best first; ties in order."""
    order = np.argsort(-scores, kind="stable")
    return order if top_k is None else order[:top_k]


def semantic_search(query_embeddings, corpus_embeddings, top_k=10, function="cosine",
                    corpus_chunk_size=100_000):
    """For each query, the ``top_k`` best corpus entries (None: all): ``[[{"corpus_id": int,
    "score": float}, ...], ...]``, one list per query, sorted by decreasing score."""
    top_k = None if top_k is None else _top_k(top_k)
    queries = _matrix(query_embeddings, "query_embeddings")
    corpus = _matrix(corpus_embeddings, "corpus_embeddings")
    best = [(np.zeros([0], np.float32), np.zeros([0], np.int64))] * len(queries)
    for start in range(0, len(corpus), corpus_chunk_size):
        scores = similarity(queries, corpus[start:start + corpus_chunk_size], function)
        for i, row in enumerate(scores):
            kept_scores = np.concatenate([best[i][0], row])
            kept_ids = np.concatenate([best[i][1], np.arange(start, start + len(row))])
            keep = _top(kept_scores, top_k)
            best[i] = (kept_scores[keep], kept_ids[keep])
    return [[{"corpus_id": int(c), "score": float(s)} for s, c in zip(*row)] for row in best]


def ranked(scores, top_k=None, documents=None):
    """Documents' ``scores`` as ``CrossEncoder.rank`` returns them: ``[{"corpus_id",
    "score"}, ...]`` (with ``"text"`` from ``documents`` when given) sorted by decreasing
    score, the first ``top_k`` (None: all).

    >>> ranked([0.1, 0.9, 0.5], top_k=2)
    [{'corpus_id': 1, 'score': 0.9}, {'corpus_id': 2, 'score': 0.5}]
    """
    scores = np.asarray(scores, dtype=np.float64).reshape(-1)
    rows = []
    for i in _top(scores, None if top_k is None else _top_k(top_k)):
        row = {"corpus_id": int(i), "score": float(scores[i])}
        if documents is not None:
            row["text"] = documents[i]
        rows.append(row)
    return rows


def _top_k(top_k):
    if isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer)) or top_k < 1:
        raise ValueError(f"top_k must be a positive int (or None for all), got {top_k!r}.")
    return int(top_k)
