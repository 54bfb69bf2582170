"""Packing and masking against the original's create_masked_lm_predictions."""

import random

import numpy as np
import pytest

from keras_bert.data.pretraining import instances as instances_lib
from keras_bert.data.pretraining import masking
from tests.data.pretraining import google_pretraining

CLS, SEP, MASK, VOCAB = 2, 3, 4, 1000


@pytest.fixture(scope="module")
def original(google_bert_path):
    return google_pretraining.functions(google_bert_path)


def _rows(n, seed, seq=64, continuation_share=0.0):
    """Random instances packed: token ids 5..VOCAB-1, some of them ## pieces."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(5, VOCAB, 20_000).astype(np.int32)
    la = rng.integers(1, (seq - 3) // 2, n)
    lb = rng.integers(1, (seq - 3) // 2, n)
    a_start = rng.integers(0, 10_000, n)
    b_start = rng.integers(0, 10_000, n)
    instances = instances_lib.Instances(a_start, a_start + la, b_start, b_start + lb,
                                        np.zeros(n, bool))
    input_ids, segment_ids, lengths = masking.pack(ids, instances, seq, CLS, SEP)
    continuation = np.zeros(VOCAB, bool)
    continuation[5:] = rng.random(VOCAB - 5) < continuation_share
    return ids, instances, input_ids, segment_ids, lengths, continuation


def test_pack_lays_out_cls_a_sep_b_sep():
    ids, instances, input_ids, segment_ids, lengths, _ = _rows(50, seed=0)
    for i in range(50):
        a = ids[instances.a_start[i]:instances.a_end[i]].tolist()
        b = ids[instances.b_start[i]:instances.b_end[i]].tolist()
        tokens = [CLS] + a + [SEP] + b + [SEP]
        padding = [0] * (64 - len(tokens))
        assert input_ids[i].tolist() == tokens + padding
        assert segment_ids[i].tolist() == [0] * (len(a) + 2) + [1] * (len(b) + 1) + padding
        assert lengths[i] == len(tokens)


def _mask(input_ids, lengths, seed, continuation=None, prob=0.15, preds=10):
    return masking.mask(input_ids, lengths, np.random.default_rng(seed), sep_id=SEP,
                        mask_id=MASK, vocab_size=VOCAB, masked_lm_prob=prob,
                        max_predictions_per_seq=preds, continuation=continuation)


@pytest.mark.parametrize("prob, preds", [(0.15, 10), (0.15, 3), (0.5, 20), (1.0, 61)])
def test_predictions_count_and_place_as_the_original(original, prob, preds):
    ids, _, input_ids, _, lengths, _ = _rows(300, seed=1)
    before = input_ids.copy()
    positions, labels, weights = _mask(input_ids, lengths, 2, prob=prob, preds=preds)
    assert positions.shape == labels.shape == weights.shape == (300, preds)
    rng = random.Random(0)
    for i in range(300):
        tokens = ["[CLS]" if t == CLS else "[SEP]" if t == SEP else str(t)
                  for t in before[i, :lengths[i]]]
        _, their_positions, _ = original.create_masked_lm_predictions(
            tokens, prob, preds, ["w"], rng)
        count = int(weights[i].sum())
        assert count == len(their_positions)  # the same budget, row by row
        chosen = positions[i, :count]
        assert (np.diff(chosen) > 0).all()                      # ascending, distinct
        assert (chosen > 0).all() and (chosen < lengths[i]).all()  # not [CLS], not padding
        assert (before[i, chosen] != SEP).all()
        assert labels[i, :count].tolist() == before[i, chosen].tolist()
        assert not positions[i, count:].any() and not labels[i, count:].any()
        assert not weights[i, count:].any()
        untouched = np.ones(64, bool)
        untouched[chosen] = False
        assert (input_ids[i, untouched] == before[i, untouched]).all()


def test_80_10_10_and_uniform_choice():
    _, _, input_ids, _, lengths, _ = _rows(4000, seed=3)
    before = input_ids.copy()
    positions, labels, weights = _mask(input_ids, lengths, 4)
    rows = np.repeat(np.arange(4000), 10).reshape(4000, 10)
    real = weights > 0
    now = input_ids[rows[real], positions[real]]
    masked = (now == MASK).mean()
    kept = (now == labels[real]).mean()
    assert abs(masked - 0.8) < 0.02 and abs(kept - 0.1) < 0.015
    # Random replacements are spread over the whole vocabulary.
    replaced = now[(now != MASK) & (now != labels[real])]
    assert replaced.min() < 100 and replaced.max() > VOCAB - 100
    # Each allowed position of a row is equally likely: observed picks per position against
    # the expectation (each row's count spread evenly over its allowed positions).
    allowed = masking.candidates(before, lengths, SEP)
    expected = (allowed * (weights.sum(axis=1) / allowed.sum(axis=1))[:, None]).sum(axis=0)
    observed = np.bincount(positions[real], minlength=64)
    enough = expected > 100
    assert enough.sum() > 40
    z = (observed[enough] - expected[enough]) / np.sqrt(expected[enough])
    assert np.abs(z).max() < 5, z


def _words(tokens, continuation):
    """Word spans (start, end) of a packed row: a token and the ## pieces after it, within
    a segment."""
    spans, start = [], None
    for i, token in enumerate(tokens):
        if token in (CLS, SEP, 0):
            if start is not None:
                spans.append((start, i))
            start = None
        elif continuation[token] and start is not None:
            continue
        else:
            if start is not None:
                spans.append((start, i))
            start = i
    if start is not None:
        spans.append((start, len(tokens)))
    return spans


def _master_whole_word_count(tokens, continuation, prob, preds, rng):
    """google-research/bert (master) create_masked_lm_predictions with do_whole_word_mask:
    how many predictions it makes (its candidate words, shuffled, taken while they fit)."""
    cand_indexes = []
    for i, token in enumerate(tokens):
        if token in (CLS, SEP):
            cand_indexes.append(None)  # ends a word, as our words end at [SEP]
            continue
        if cand_indexes and cand_indexes[-1] is not None and continuation[token]:
            cand_indexes[-1].append(i)
        else:
            cand_indexes.append([i])
    cand_indexes = [c for c in cand_indexes if c is not None]
    rng.shuffle(cand_indexes)
    num_to_predict = min(preds, max(1, int(round(len(tokens) * prob))))
    count = 0
    for index_set in cand_indexes:
        if count >= num_to_predict:
            break
        if count + len(index_set) > num_to_predict:
            continue
        count += len(index_set)
    return count


def test_whole_word_masking_never_splits_a_word():
    _, _, input_ids, _, lengths, continuation = _rows(2000, seed=5, continuation_share=0.4)
    before = input_ids.copy()
    positions, _, weights = _mask(input_ids, lengths, 6, continuation=continuation)
    rng = random.Random(7)
    counts, theirs = [], []
    for i in range(2000):
        chosen = set(positions[i, :int(weights[i].sum())].tolist())
        row = before[i, :lengths[i]].tolist()
        for start, end in _words(row, continuation):
            inside = [p in chosen for p in range(start, end)]
            assert all(inside) or not any(inside), (row, start, end, chosen)
        counts.append(len(chosen))
        theirs.append(_master_whole_word_count(row, continuation, 0.15, 10, rng))
        budget = min(10, max(1, round(lengths[i] * 0.15)))
        assert len(chosen) <= budget
    assert abs(np.mean(counts) / np.mean(theirs) - 1) < 0.02
    assert np.mean(counts) > 0.9 * np.mean(np.minimum(10, np.round(lengths * 0.15)))
