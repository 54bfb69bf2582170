"""Packing and static masked-LM masking of pre-training instances, for a whole batch at once.

`pack` lays instances out as the original does: ``[CLS] A [SEP] B [SEP]``, segment ids 0 for
``[CLS] A [SEP]`` and 1 for ``B [SEP]``, zero padding to ``max_seq_length``. `mask` is the
original's `create_masked_lm_predictions` in numpy over a batch: ``min(max_predictions_per_seq,
max(1, round(len(tokens) * masked_lm_prob)))`` predictions per sequence (``len`` counts
``[CLS]`` and the ``[SEP]``s, as the original does), chosen uniformly among the tokens other
than ``[CLS]``/``[SEP]``; each one becomes ``[MASK]`` 80% of the time, stays 10% and becomes a
random vocabulary id 10%. With whole-word masking, a word (a token and the ``##`` pieces after
it) is chosen or skipped as one: words are visited in random order and taken while they fit
in the budget, as the original does (a word never spans a ``[SEP]``). Positions come out
ascending, zero-padded, with weight 1.0 for real predictions.

(`keras_bert.text.MaskedLMMasker` masks in the graph for dynamic masking; it counts the budget
over the maskable tokens only. The records here follow the original script exactly.)
"""

import numpy as np


def pack(ids, instances, max_seq_length, cls_id, sep_id):
    """``[CLS] A [SEP] B [SEP]`` rows of the chunk's flat ``ids``.

    Returns (input_ids int32 [n, max_seq_length], segment_ids int8 [n, max_seq_length],
    lengths int64 [n]); the input mask is ``positions < lengths``.

    >>> import numpy as np
    >>> from keras_bert.data.pretraining.instances import Instances
    >>> ids = np.array([7, 8, 9, 10])
    >>> one = Instances(np.array([0]), np.array([2]), np.array([2]), np.array([4]),
    ...                 np.array([False]))
    >>> input_ids, segment_ids, lengths = pack(ids, one, 8, cls_id=2, sep_id=3)
    >>> input_ids.tolist(), segment_ids.tolist(), lengths.tolist()
    ([[2, 7, 8, 3, 9, 10, 3, 0]], [[0, 0, 0, 0, 1, 1, 1, 0]], [7])
    """
    la = (instances.a_end - instances.a_start).astype(np.int32)
    lb = (instances.b_end - instances.b_start).astype(np.int32)
    lengths = la + lb + 3
    n = len(lengths)
    position = np.arange(max_seq_length, dtype=np.int32)[None, :]
    # Where each position's token comes from in the flat ids: A at 1..la, B at la+2..la+1+lb.
    in_b = position >= (la + 2)[:, None]
    source = np.where(in_b, (instances.b_start - la - 2).astype(np.int32)[:, None],
                      (instances.a_start - 1).astype(np.int32)[:, None]) + position
    real = position < (lengths - 1)[:, None]                  # up to the last [SEP]
    real[:, 0] = False
    real[np.arange(n), la + 1] = False                         # the middle [SEP]
    ids = np.asarray(ids)
    input_ids = np.zeros((n, max_seq_length), dtype=np.int32)
    input_ids[real] = ids[source[real]]
    input_ids[:, 0] = cls_id
    input_ids[np.arange(n), la + 1] = sep_id
    input_ids[np.arange(n), lengths - 1] = sep_id
    segment_ids = (in_b & (position < lengths[:, None])).astype(np.int8)
    return input_ids, segment_ids, lengths.astype(np.int64)


def candidates(input_ids, lengths, sep_id):
    """Where predictions may go: inside the sequence, not [CLS] (position 0) or a [SEP]."""
    position = np.arange(input_ids.shape[1])[None, :]
    return (position > 0) & (position < lengths[:, None]) & (input_ids != sep_id)


def mask(input_ids, lengths, rng, *, sep_id, mask_id, vocab_size, masked_lm_prob,
         max_predictions_per_seq, continuation=None):
    """Masks packed rows in place (`input_ids`) and returns their predictions.

    Args:
      input_ids: int [n, seq] from `pack` (modified: chosen tokens masked).
      lengths: int [n], the real length of each row.
      rng: a `numpy.random.Generator`.
      sep_id, mask_id, vocab_size: the vocabulary's [SEP] and [MASK] ids and its size (random
        replacements are drawn from all of it, as the original draws from all its tokens).
      masked_lm_prob, max_predictions_per_seq: the budget, as in the original.
      continuation: for whole-word masking, a bool array [vocab_size], True for `##` pieces.

    Returns:
      (masked_lm_positions int32 [n, P], masked_lm_ids int32 [n, P], masked_lm_weights
      float32 [n, P]) with P = max_predictions_per_seq.
    """
    n, seq = input_ids.shape
    allowed = candidates(input_ids, lengths, sep_id)
    budget = np.minimum(max_predictions_per_seq,
                        np.maximum(1, np.round(lengths * masked_lm_prob))).astype(np.int64)
    if continuation is None:
        chosen = _choose_tokens(allowed, budget, max_predictions_per_seq, rng)
    else:
        chosen = _choose_words(input_ids, allowed, budget, rng, continuation)
    # Chosen positions in ascending order, left-aligned: row-major nonzero is sorted by row,
    # then by column.
    rows, columns = np.nonzero(chosen)
    count = np.bincount(rows, minlength=n)
    first = np.zeros(n, dtype=np.int64)
    np.cumsum(count[:-1], out=first[1:])
    slot = np.arange(len(rows)) - first[rows]
    width = max_predictions_per_seq
    positions = np.zeros((n, width), dtype=np.int32)
    positions[rows, slot] = columns
    labels = np.zeros((n, width), dtype=np.int32)
    labels[rows, slot] = input_ids[rows, columns]
    weights = np.zeros((n, width), dtype=np.float32)
    weights[rows, slot] = 1.0
    # 80% [MASK], 10% unchanged, 10% a random id of the vocabulary.
    draw = rng.random(len(rows))
    replacement = np.where(draw < 0.8, mask_id, input_ids[rows, columns])
    random_ids = rng.integers(0, vocab_size, size=len(rows), dtype=np.int32)
    input_ids[rows, columns] = np.where(draw >= 0.9, random_ids, replacement)
    return positions, labels, weights


def _choose_tokens(allowed, budget, max_budget, rng):
    """A uniformly random subset of ``min(budget, allowed)`` allowed positions per row (the
    first ones of a random permutation, as the original takes them)."""
    n, seq = allowed.shape
    # Distinct random keys per row (40 random bits, then the position): a row takes the
    # positions of its `budget` smallest allowed keys.
    shift = int(seq).bit_length()
    keys = (rng.integers(0, 1 << 40, size=(n, seq), dtype=np.int64) << shift) \
        | np.arange(seq, dtype=np.int64)[None, :]
    keys = np.where(allowed, keys, np.iinfo(np.int64).max)
    kth = min(max_budget, seq) - 1
    smallest = np.sort(np.partition(keys, kth, axis=1)[:, :kth + 1], axis=1)
    take = np.minimum(budget, allowed.sum(axis=1))
    threshold = np.take_along_axis(smallest, np.maximum(take - 1, 0)[:, None], axis=1)
    return allowed & (keys <= threshold) & (take > 0)[:, None]


def _choose_words(input_ids, allowed, budget, rng, continuation):
    """Whole words in a random order, each taken if it still fits in the row's budget."""
    n, seq = allowed.shape
    piece = continuation[input_ids] & allowed
    # A word starts at an allowed token that is not a ## piece, or follows a non-allowed one.
    previous_allowed = np.zeros_like(allowed)
    previous_allowed[:, 1:] = allowed[:, :-1]
    starts = allowed & ~(piece & previous_allowed)
    word = np.cumsum(starts, axis=1) - 1                      # word index within the row
    words = int(starts.sum(axis=1).max()) if n else 0
    if words == 0:
        return np.zeros_like(allowed)
    flat_word = np.where(allowed, word + np.arange(n)[:, None] * words, n * words)
    size = np.bincount(flat_word.reshape(-1), minlength=n * words + 1)[:-1].reshape(n, words)
    exists = np.arange(words)[None, :] < starts.sum(axis=1)[:, None]
    order = np.argsort(np.where(exists, rng.random((n, words)), 2.0), axis=1)
    sizes = np.take_along_axis(size, order, axis=1)
    taken_sorted = np.zeros((n, words), dtype=bool)
    used = np.zeros(n, dtype=np.int64)
    for t in range(words):  # greedy over each row's random word order, all rows at once
        fits = (sizes[:, t] > 0) & (used + sizes[:, t] <= budget)
        taken_sorted[:, t] = fits
        used += np.where(fits, sizes[:, t], 0)
    taken = np.zeros((n, words + 1), dtype=bool)
    np.put_along_axis(taken, order, taken_sorted, axis=1)
    return allowed & np.take_along_axis(taken, np.where(allowed, word, words), axis=1)
