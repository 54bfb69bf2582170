"""How good a text embedder's vectors are: similarity and retrieval scores, as
sentence-transformers' evaluators compute them.

* `evaluate_similarity`: pairs of texts with human scores; the Spearman (and Pearson)
  correlation of the cosine of each pair's embeddings with the scores
  (``EmbeddingSimilarityEvaluator``: ``spearman_cosine``, ``pearson_cosine``).
* `evaluate_retrieval`: queries, a corpus and the relevant corpus entries of each query;
  each query ranks the whole corpus by the model's similarity and `retrieval_metrics` scores
  the ranking (``InformationRetrievalEvaluator``: ``ndcg@10``, ``mrr@10``, ``recall@k``,
  ``accuracy@k``, ``precision@k``, ``map@100``).
* `pair_retrieval`: the retrieval scores of aligned (anchor, positive) pairs, each anchor
  searching all the positives for its own (what ``tools/finetune.py --task=embedding`` reports).

The definitions are sentence-transformers' (binary relevance): for a query with relevant set
``R`` and ranking ``d_1, d_2, ...`` (by decreasing score, ties by increasing corpus id),

* ``accuracy@k``: 1 if some ``d_i`` (i <= k) is in ``R``;
* ``precision@k``: ``|R ∩ {d_1..d_k}| / k``; ``recall@k``: ``|R ∩ {d_1..d_k}| / |R|``;
* ``mrr@k``: ``1 / i`` of the first relevant ``d_i`` with i <= k, else 0;
* ``ndcg@k``: ``sum_{i<=k, d_i in R} 1/log2(i+1)`` over the same sum for ``min(|R|, k)``
  relevant documents at the top;
* ``map@k``: the sum of ``precision@i`` at each relevant ``d_i`` (i <= k) over
  ``min(k, |R|)``;

each averaged over the queries that have at least one relevant document (the others are left
out, as sentence-transformers does). `spearman` and `pearson` are the correlations the
fine-tuning scores of regression use too.

>>> import numpy as np
>>> scores = np.array([[0.9, 0.8, 0.1], [0.2, 0.3, 0.7]])     # 2 queries x 3 documents
>>> m = retrieval_metrics(scores, [{1}, {2}], ks=(1, 2))
>>> m["mrr@10"], m["recall@1"], round(m["ndcg@10"], 4)
(0.75, 0.5, 0.8155)
"""

import numpy as np

MRR_AT_K = (10,)
NDCG_AT_K = (10,)
KS = (1, 3, 5, 10)  # accuracy@k, precision@k and recall@k
MAP_AT_K = (100,)


# ---------------------------------------------------------------------- correlations
def ranks(values):
    """Average ranks (ties share the mean of their positions), as Spearman's rho needs."""
    values = np.asarray(values, np.float64).reshape(-1)
    order = np.argsort(values, kind="stable")
    ranked = np.empty(len(values), np.float64)
    ranked[order] = np.arange(len(values), dtype=np.float64)
    _, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    sums = np.bincount(inverse, weights=ranked)
    return sums[inverse] / counts[inverse]


def pearson(a, b):
    """Pearson's correlation of two sequences of numbers (0.0 when one is constant)."""
    a = np.asarray(a, np.float64).reshape(-1)
    b = np.asarray(b, np.float64).reshape(-1)
    a, b = a - a.mean(), b - b.mean()
    denominator = np.sqrt((a * a).sum() * (b * b).sum())
    return float((a * b).sum() / denominator) if denominator else 0.0


def spearman(a, b):
    """Spearman's rank correlation (ties: average ranks, as ``scipy.stats.spearmanr``).

    >>> spearman([1, 2, 3, 4], [10, 20, 30, 25])
    0.8
    """
    return pearson(ranks(a), ranks(b))


# ---------------------------------------------------------------------- similarity
def evaluate_similarity(model, sentences1, sentences2, scores, batch_size=32):
    """``{"pearson_cosine", "spearman_cosine"}``: how the cosine of each pair's embeddings
    (``model.encode``, so with its default prompt if it has one) follows the human
    ``scores``, as sentence-transformers' ``EmbeddingSimilarityEvaluator``."""
    sentences1, sentences2 = _texts(sentences1, "sentences1"), _texts(sentences2, "sentences2")
    scores = np.asarray(scores, np.float64).reshape(-1)
    if not len(sentences1) == len(sentences2) == len(scores) or len(scores) < 2:
        raise ValueError(f"evaluate_similarity needs as many sentences1, sentences2 and scores "
                         f"(at least 2), got {len(sentences1)}, {len(sentences2)} and "
                         f"{len(scores)}.")
    a = _unit(model.encode(sentences1, batch_size=batch_size))
    b = _unit(model.encode(sentences2, batch_size=batch_size))
    cosines = np.sum(a.astype(np.float64) * b, axis=-1)
    return {"pearson_cosine": pearson(scores, cosines),
            "spearman_cosine": spearman(scores, cosines)}


def _unit(x):
    x = np.asarray(x, np.float32)
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)


# ---------------------------------------------------------------------- retrieval
def retrieval_metrics(scores, relevant, corpus_ids=None, mrr_at_k=MRR_AT_K, ndcg_at_k=NDCG_AT_K,
                      ks=KS, map_at_k=MAP_AT_K):
    """sentence-transformers' ``InformationRetrievalEvaluator`` metrics of a score matrix.

    Args:
        scores: ``[queries, corpus]`` similarities (higher is better).
        relevant: per query (one per row), the collection of its relevant corpus ids; a query
            with none is left out of the averages.
        corpus_ids: the id of each column (default ``0..n-1``); ties in score rank the
            smaller id first, as sentence-transformers does.
        mrr_at_k, ndcg_at_k, ks, map_at_k: the cut-offs (``ks``: of ``accuracy@k``,
            ``precision@k`` and ``recall@k``).

    Returns ``{"accuracy@1": ..., "precision@1": ..., "recall@1": ..., "mrr@10": ...,
    "ndcg@10": ..., "map@100": ..., "queries": n}`` (floats; ``queries``: how many counted).
    """
    scores = np.asarray(scores, np.float64)
    if scores.ndim != 2:
        raise ValueError(f"scores must be a [queries, corpus] matrix, got shape {scores.shape}.")
    relevant = list(relevant)
    if len(relevant) != scores.shape[0]:
        raise ValueError(f"relevant has {len(relevant)} entries for {scores.shape[0]} queries.")
    corpus_ids = list(range(scores.shape[1])) if corpus_ids is None else list(corpus_ids)
    if len(corpus_ids) != scores.shape[1]:
        raise ValueError(f"corpus_ids has {len(corpus_ids)} ids for {scores.shape[1]} corpus "
                         f"entries.")
    cutoffs = {name: _cutoffs(name, k) for name, k in
               (("mrr_at_k", mrr_at_k), ("ndcg_at_k", ndcg_at_k), ("ks", ks),
                ("map_at_k", map_at_k))}
    max_k = max(max(k) for k in cutoffs.values())
    id_rank = np.empty(len(corpus_ids), np.int64)  # each column's place in sorted id order
    id_rank[sorted(range(len(corpus_ids)), key=corpus_ids.__getitem__)] = np.arange(
        len(corpus_ids))
    sums = {}

    def add(key, value):
        sums[key] = sums.get(key, 0.0) + value

    counted = 0
    for row, wanted in zip(scores, relevant):
        wanted = set(wanted)
        if not wanted:
            continue
        counted += 1
        order = np.lexsort((id_rank, -row))[:max_k]  # by -score, then id
        hit = [corpus_ids[c] in wanted for c in order]
        for k in cutoffs["ks"]:
            found = sum(hit[:k])
            add(f"accuracy@{k}", float(found > 0))
            add(f"precision@{k}", found / k)
            add(f"recall@{k}", found / len(wanted))
        for k in cutoffs["mrr_at_k"]:
            first = next((i for i, h in enumerate(hit[:k]) if h), None)
            add(f"mrr@{k}", 0.0 if first is None else 1.0 / (first + 1))
        for k in cutoffs["ndcg_at_k"]:
            dcg = sum(1.0 / np.log2(i + 2) for i, h in enumerate(hit[:k]) if h)
            ideal = sum(1.0 / np.log2(i + 2) for i in range(min(len(wanted), k)))
            add(f"ndcg@{k}", dcg / ideal)
        for k in cutoffs["map_at_k"]:
            found, precisions = 0, 0.0
            for i, h in enumerate(hit[:k]):
                if h:
                    found += 1
                    precisions += found / (i + 1)
            add(f"map@{k}", precisions / min(k, len(wanted)))
    if not counted:
        raise ValueError("No query has a relevant corpus entry: there is nothing to score.")
    metrics = {key: float(value / counted) for key, value in sums.items()}
    metrics["queries"] = counted
    return metrics


def _cutoffs(name, ks):
    ks = (ks,) if isinstance(ks, (int, np.integer)) else tuple(ks)
    if not ks or any(isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1
                     for k in ks):
        raise ValueError(f"{name} must be positive ints, got {ks!r}.")
    return tuple(int(k) for k in ks)


def evaluate_retrieval(model, queries, corpus, relevant_docs, batch_size=32, **cutoffs):
    """The retrieval metrics (`retrieval_metrics`) of ``model``, a `BertTextEmbedder`, as
    sentence-transformers' ``InformationRetrievalEvaluator`` computes them: queries embedded
    with ``encode_query``, the corpus with ``encode_document``, scored with the model's
    similarity function.

    Args:
        queries: ``{query_id: text}`` (or a list: ids 0, 1, ...).
        corpus: ``{corpus_id: text}`` (or a list: ids 0, 1, ...).
        relevant_docs: ``{query_id: {corpus_id, ...}}`` (or a list, one collection per query);
            queries without relevant documents are left out.
        batch_size: texts per batch when embedding.
        cutoffs: ``mrr_at_k``, ``ndcg_at_k``, ``ks``, ``map_at_k`` (see `retrieval_metrics`).

    Returns the metrics, with ``queries`` and ``corpus`` (how many of each).
    """
    queries, corpus = _by_id(queries, "queries"), _by_id(corpus, "corpus")
    relevant_docs = _by_id(relevant_docs, "relevant_docs")
    unknown = sorted(map(repr, set(relevant_docs) - set(queries)))
    if unknown:
        raise ValueError(f"relevant_docs names queries that are not among the queries: "
                         f"{', '.join(unknown[:5])}.")
    query_ids = [q for q in queries if relevant_docs.get(q)]
    if not query_ids:
        raise ValueError("No query has a relevant corpus entry: there is nothing to score.")
    if not corpus:
        raise ValueError("The corpus is empty.")
    corpus_ids = list(corpus)
    query_vectors = model.encode_query(_texts([queries[q] for q in query_ids], "queries"),
                                       batch_size=batch_size)
    corpus_vectors = model.encode_document(_texts(list(corpus.values()), "corpus"),
                                           batch_size=batch_size)
    scores = model.similarity(query_vectors, corpus_vectors)
    metrics = retrieval_metrics(scores, [relevant_docs[q] for q in query_ids], corpus_ids,
                                **cutoffs)
    metrics["corpus"] = len(corpus_ids)
    return metrics


def pair_retrieval(model, anchors, positives, batch_size=32, **cutoffs):
    """`evaluate_retrieval` of aligned pairs: anchor ``i`` searches all the positives, and its
    relevant documents are the positives equal to its own (a text that is the positive of
    several anchors is one corpus entry)."""
    anchors, positives = _texts(anchors, "anchors"), _texts(positives, "positives")
    if len(anchors) != len(positives):
        raise ValueError(f"pair_retrieval needs one positive per anchor, got {len(anchors)} "
                         f"anchors and {len(positives)} positives.")
    corpus = {}
    for text in positives:
        corpus.setdefault(text, len(corpus))
    return evaluate_retrieval(model, anchors, list(corpus),
                              [{corpus[text]} for text in positives], batch_size, **cutoffs)


def _by_id(items, what):
    if isinstance(items, dict):
        return items
    if isinstance(items, (str, bytes)) or not hasattr(items, "__len__"):
        raise ValueError(f"{what} must be a dict by id or a list, got {type(items).__name__}.")
    return dict(enumerate(items))


def _texts(texts, what):
    if isinstance(texts, (str, bytes)):
        raise ValueError(f"{what} must be a list of texts, not one string.")
    texts = [t.decode("utf-8") if isinstance(t, bytes) else t for t in texts]
    bad = next((t for t in texts if not isinstance(t, str)), None)
    if bad is not None:
        raise ValueError(f"{what} must be texts (str), got a {type(bad).__name__}: {bad!r:.80}.")
    return texts
