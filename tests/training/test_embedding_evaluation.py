"""The embedding evaluators: the same figures as sentence-transformers' InformationRetrieval-
and EmbeddingSimilarityEvaluator (their own code, on a tiny sentence-transformers model and
on score matrices with ties, several relevant documents and queries without any)."""

import numpy as np
import pytest

from keras_bert import BertTextEmbedder
from keras_bert.training import embedding_evaluation as ev
from tests.dependencies import require
from tests.st_models import TEXTS, write_st_model

QUERIES = {"q1": "a great movie", "q2": "the cat sat", "q3": "not good", "q4": "a red dog"}
CORPUS = {"d1": "the actor was very good", "d2": "a dull and boring film", "d3": "what a fun plot",
          "d4": "a red dog ran in paris", "d5": "the cat sat", "d6": "a great movie"}
RELEVANT = {"q1": {"d6", "d3"}, "q2": {"d5"}, "q3": {"d2", "d1", "d9"}}  # q4: none; d9: absent


@pytest.fixture(scope="module")
def st_dir(tmp_path_factory):
    return write_st_model(tmp_path_factory.mktemp("eval") / "st")


def _ir_evaluator(queries, corpus, relevant, **kwargs):
    require("sentence_transformers")
    from sentence_transformers.sentence_transformer.evaluation import (
        InformationRetrievalEvaluator)

    return InformationRetrievalEvaluator(queries, corpus, relevant, write_csv=False, **kwargs)


def _st_metrics(evaluator_metrics, score_function="cosine"):
    """sentence-transformers' ``{"cosine_ndcg@10": ...}`` as ``{"ndcg@10": ...}``."""
    prefix = score_function + "_"
    return {k[len(prefix):]: v for k, v in evaluator_metrics.items() if k.startswith(prefix)}


def test_retrieval_matches_the_information_retrieval_evaluator(st_dir):
    from sentence_transformers import SentenceTransformer

    expected = _st_metrics(_ir_evaluator(QUERIES, CORPUS, RELEVANT, map_at_k=[3])(
        SentenceTransformer(str(st_dir), device="cpu")))
    found = ev.evaluate_retrieval(BertTextEmbedder.from_preset(str(st_dir)), QUERIES, CORPUS,
                                  RELEVANT, map_at_k=3)
    assert found.pop("queries") == 3 and found.pop("corpus") == 6  # q4 has no relevant doc
    assert sorted(found) == sorted(expected)  # accuracy, precision, recall @1,3,5,10, ...
    for key, value in expected.items():
        assert found[key] == pytest.approx(value, abs=1e-6), key
    # q3's relevant d9 is no corpus entry: never found
    assert 0 < found["ndcg@10"] < 1 and found["recall@10"] == pytest.approx(8 / 9)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_metrics_of_scores_with_ties_are_sentence_transformers(seed):
    """retrieval_metrics on a score matrix == the evaluator's compute_metrics on the same
    hits: ties (scores rounded to one decimal) ranked by corpus id, 1 to 4 relevant documents,
    cut-offs below and above the corpus size."""
    rng = np.random.default_rng(seed)
    scores = np.round(rng.uniform(size=(20, 15)), 1)
    corpus_ids = [f"d{i:02d}" for i in rng.permutation(15)]
    relevant = [set(rng.choice(corpus_ids, size=rng.integers(0, 5), replace=False))
                for _ in range(20)]
    queries = {f"q{i}": "" for i in range(20)}
    ks = {"mrr_at_k": [1, 10], "ndcg_at_k": [3, 10, 20], "accuracy_at_k": [1, 5, 20],
          "precision_recall_at_k": [1, 5, 20], "map_at_k": [5, 100]}
    evaluator = _ir_evaluator(queries, dict(zip(corpus_ids, [""] * 15)),
                              {f"q{i}": r for i, r in enumerate(relevant)}, **ks)
    kept = [i for i, r in enumerate(relevant) if r]
    hits = [[{"corpus_id": c, "score": float(s)} for c, s in zip(corpus_ids, scores[i])]
            for i in kept]
    expected = {f"{name.replace('@k', '')}@{k}": value
                for name, values in evaluator.compute_metrics(hits).items()
                for k, value in values.items()}
    found = ev.retrieval_metrics(scores, relevant, corpus_ids, mrr_at_k=ks["mrr_at_k"],
                                 ndcg_at_k=ks["ndcg_at_k"], ks=[1, 5, 20],
                                 map_at_k=ks["map_at_k"])
    assert found.pop("queries") == len(kept)
    assert sorted(found) == sorted(expected)
    for key in found:
        assert found[key] == pytest.approx(expected[key], abs=1e-12), key


def test_pair_retrieval_makes_a_shared_positive_one_corpus_entry(st_dir):
    model = BertTextEmbedder.from_preset(str(st_dir))
    anchors, positives = TEXTS[:4], [TEXTS[4], TEXTS[5], TEXTS[4], TEXTS[6]]
    found = ev.pair_retrieval(model, anchors, positives)
    assert found["corpus"] == 3 and found["queries"] == 4
    assert found == ev.evaluate_retrieval(model, anchors, [TEXTS[4], TEXTS[5], TEXTS[6]],
                                          [{0}, {1}, {0}, {2}])
    assert found["recall@3"] == 1.0  # every anchor finds its positive among 3


def test_similarity_matches_the_embedding_similarity_evaluator(st_dir):
    require("sentence_transformers")
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.evaluation import (
        EmbeddingSimilarityEvaluator)

    a, b = TEXTS, TEXTS[1:] + TEXTS[:1]
    human = [0.1, 0.5, 0.5, 0.9, 0.2, 0.7, 0.3]  # a tie: Spearman's average ranks
    expected = EmbeddingSimilarityEvaluator(a, b, human, write_csv=False)(
        SentenceTransformer(str(st_dir), device="cpu"))
    found = ev.evaluate_similarity(BertTextEmbedder.from_preset(str(st_dir)), a, b, human)
    assert found == pytest.approx({"pearson_cosine": expected["pearson_cosine"],
                                   "spearman_cosine": expected["spearman_cosine"]}, abs=1e-6)


def test_spearman_and_pearson_are_scipy():
    stats = require("scipy.stats")
    rng = np.random.default_rng(0)
    a, b = rng.integers(0, 5, 50), rng.normal(size=50)  # many ties in a
    assert ev.spearman(a, b) == pytest.approx(stats.spearmanr(a, b).statistic, abs=1e-12)
    assert ev.pearson(a, b) == pytest.approx(stats.pearsonr(a, b).statistic, abs=1e-12)
    assert ev.pearson([1, 1, 1], [1, 2, 3]) == 0.0


@pytest.mark.parametrize("call, message", [
    (lambda: ev.retrieval_metrics(np.zeros([2, 3]), [{0}]), "relevant has 1 entries for 2"),
    (lambda: ev.retrieval_metrics(np.zeros(3), [{0}]), r"a \[queries, corpus\] matrix"),
    (lambda: ev.retrieval_metrics(np.zeros([1, 3]), [set()]), "No query has a relevant"),
    (lambda: ev.retrieval_metrics(np.zeros([1, 3]), [{0}], ks=[0]), "ks must be positive"),
    (lambda: ev.retrieval_metrics(np.zeros([1, 3]), [{0}], corpus_ids=["a"]),
     "corpus_ids has 1 ids for 3"),
    (lambda: ev.evaluate_retrieval(None, {"q": "a"}, {"d": "b"}, {"x": {"d"}}),
     "relevant_docs names queries that are not among the queries: 'x'"),
    (lambda: ev.evaluate_retrieval(None, "a query", ["b"], [{0}]), "queries must be a dict"),
    (lambda: ev.evaluate_retrieval(None, ["a"], [], [{0}]), "The corpus is empty"),
    (lambda: ev.pair_retrieval(None, ["a", "b"], ["x"]), "one positive per anchor"),
    (lambda: ev.pair_retrieval(None, ["a"], [3]), r"positives must be texts \(str\), got a int"),
    (lambda: ev.evaluate_similarity(None, ["a"], ["b"], [1.0]), "at least 2"),
])
def test_bad_input_is_named_before_any_embedding(call, message):
    with pytest.raises(ValueError, match=message):
        call()
