"""Instances from documents: the original's algorithm, checked against the original's code."""

import random

import numpy as np
import pytest

from keras_bert.data.pretraining import instances as instances_lib
from tests.data.pretraining import google_pretraining


@pytest.fixture(scope="module")
def original(google_bert_path):
    return google_pretraining.functions(google_bert_path)


def test_truncated_lengths_are_the_originals_loop(original):
    rng = random.Random(0)
    for max_num_tokens in (2, 3, 10, 29):
        for la in range(1, 40):
            for lb in range(1, 40):
                a, b = list(range(la)), list(range(lb))
                original.truncate_seq_pair(a, b, max_num_tokens, rng)
                want = (len(a), len(b))
                assert instances_lib.truncated_lengths(la, lb, max_num_tokens) == want
                got = instances_lib._truncated_lengths(np.array([la]), np.array([lb]),
                                                       max_num_tokens)
                assert (int(got[0][0]), int(got[1][0])) == want


def _documents(num_documents, seed, max_sentences=12, max_tokens=20):
    """Random documents (1 to 11 sentences of 1 to 19 tokens) -> (sentence_splits,
    document_splits)."""
    rng = np.random.default_rng(seed)
    per_document = rng.integers(1, max_sentences, num_documents)
    sentences = rng.integers(1, max_tokens, per_document.sum())
    sentence_splits = np.concatenate([[0], np.cumsum(sentences)])
    document_splits = np.concatenate([[0], np.cumsum(per_document)])
    return sentence_splits, document_splits


def _document_of(position, sentence_splits, document_splits):
    sentence = np.searchsorted(sentence_splits, position, side="right") - 1
    return np.searchsorted(document_splits, sentence, side="right") - 1


def test_segments_are_ranges_of_the_right_documents():
    sentence_splits, document_splits = _documents(60, seed=1)
    out = instances_lib.create_instances(sentence_splits, document_splits, 32, 0.1, 3,
                                         random.Random(1), np.random.default_rng(1))
    assert len(out) > 200
    la, lb = out.a_end - out.a_start, out.b_end - out.b_start
    assert (la >= 1).all() and (lb >= 1).all() and (la + lb <= 29).all()
    doc_a = _document_of(out.a_start, sentence_splits, document_splits)
    assert (doc_a == _document_of(out.a_end - 1, sentence_splits, document_splits)).all()
    doc_b = _document_of(out.b_start, sentence_splits, document_splits)
    assert (doc_b == _document_of(out.b_end - 1, sentence_splits, document_splits)).all()
    # Real next: B follows A in its document; random next: B from another document.
    real = ~out.is_random_next
    assert (doc_a[real] == doc_b[real]).all() and (out.b_start[real] >= out.a_end[real]).all()
    assert (doc_a[~real] != doc_b[~real]).all()


def test_a_single_sentence_document_always_takes_a_random_next():
    sentence_splits = np.array([0, 5, 9, 14])
    document_splits = np.array([0, 1, 3])  # a one-sentence document, then two sentences
    out = instances_lib.create_instances(sentence_splits, document_splits, 64, 0.0, 50,
                                         random.Random(0), np.random.default_rng(0))
    first = _document_of(out.a_start, sentence_splits, document_splits) == 0
    assert first.sum() == 50 and out.is_random_next[first].all()


def test_truncation_trims_both_ends_at_random():
    sentence_splits = np.array([0, 200, 400, 600, 800])
    document_splits = np.array([0, 4])
    out = instances_lib.create_instances(sentence_splits, document_splits, 64, 0.0, 400,
                                         random.Random(3), np.random.default_rng(3))
    # Every A was one 200-token sentence cut to <= 61 tokens: how much went from its front?
    front = out.a_start % 200
    cut = 200 - (out.a_end - out.a_start)
    share = front.sum() / cut.sum()
    assert 0.45 < share < 0.55
    assert (front > 0).any() and (front < cut).any()


def test_statistics_match_the_original(original):
    """The same random documents through the original's create_instances_from_document and
    ours: counts, random-next share and segment lengths agree (different random streams)."""
    sentence_splits, document_splits = _documents(200, seed=5)
    lengths = np.diff(sentence_splits)
    documents = []
    for d in range(len(document_splits) - 1):
        documents.append([["w"] * int(lengths[s])
                          for s in range(document_splits[d], document_splits[d + 1])])
    rng = random.Random(5)
    theirs = []
    for _ in range(5):
        for index in range(len(documents)):
            theirs += original.create_instances_from_document(
                documents, index, 48, 0.1, 0.15, 7, ["w"], rng)
    ours = instances_lib.create_instances(sentence_splits, document_splits, 48, 0.1, 5,
                                          random.Random(5), np.random.default_rng(5))
    their_a = np.array([t.segment_ids.count(0) - 2 for t in theirs])
    their_b = np.array([t.segment_ids.count(1) - 1 for t in theirs])
    their_random = np.mean([t.is_random_next for t in theirs])
    ours_a, ours_b = ours.a_end - ours.a_start, ours.b_end - ours.b_start
    assert abs(len(ours) / len(theirs) - 1) < 0.03, (len(ours), len(theirs))
    assert abs(ours.is_random_next.mean() - their_random) < 0.02
    assert abs(ours_a.mean() / their_a.mean() - 1) < 0.03
    assert abs(ours_b.mean() / their_b.mean() - 1) < 0.03
