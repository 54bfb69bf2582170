"""Documents -> next-sentence-prediction instances, as google-research/bert's
`create_pretraining_data.py` makes them (`create_instances_from_document`).

The documents of a chunk are token ids held as one flat array: sentence ``s`` is
``ids[sentence_splits[s]:sentence_splits[s + 1]]`` and document ``d`` the sentences
``document_splits[d]`` to ``document_splits[d + 1]``. Consecutive sentences are consecutive in
the flat array, so every segment (A, B) is one range of it, and an instance is four numbers
(`Instances`); the token matrix is only made when the instances are packed (see
`keras_bert.data.pretraining.masking`).

The algorithm is the original's, step for step: a target length (``max_seq_length - 3``, or
with ``short_seq_prob`` a random one in [2, that]); sentences gathered into a chunk until it
reaches the target or the document ends; A = the first ``a_end`` sentences of the chunk
(random in [1, len - 1]); B = the rest of the chunk (real next), or, half of the time and
always when the chunk holds a single sentence, sentences of another document from a random
start until B reaches its target (random next), the unused sentences of the chunk "put back";
the pair truncated to ``max_seq_length - 3`` by trimming the longer segment one token at a
time from the front or the back at random. The one difference: "another document" is drawn
from the chunk's documents (a bounded pool), not the whole corpus.
"""

import dataclasses

import numpy as np


@dataclasses.dataclass
class Instances:
    """Instances as ranges of the chunk's flat token ids: segment A is
    ``ids[a_start:a_end]``, segment B ``ids[b_start:b_end]``; ``is_random_next`` is the
    next-sentence label (1: B comes from another document). All int64/bool arrays [n].

    >>> import numpy as np
    >>> pair = Instances(np.array([0]), np.array([3]), np.array([3]), np.array([5]),
    ...                  np.array([False]))
    >>> len(pair), pair.take([0, 0]).a_end.tolist()
    (1, [3, 3])
    """

    a_start: np.ndarray
    a_end: np.ndarray
    b_start: np.ndarray
    b_end: np.ndarray
    is_random_next: np.ndarray

    def __len__(self):
        return len(self.a_start)

    def take(self, order):
        """The instances in the order (or the subset) ``order``."""
        return Instances(*(getattr(self, f.name)[order] for f in dataclasses.fields(self)))


def truncated_lengths(length_a, length_b, max_num_tokens):
    """How many tokens of A and of B the original's `truncate_seq_pair` keeps.

    It trims the longer segment (B when they are equal) one token at a time until the pair
    fits; this is that loop in closed form. Which end each token comes from is a fair coin
    per token, drawn by the caller.

    >>> truncated_lengths(100, 40, 125), truncated_lengths(70, 70, 125)
    ((85, 40), (63, 62))
    """
    excess = length_a + length_b - max_num_tokens
    if excess <= 0:
        return length_a, length_b
    if length_a > length_b:
        gap = length_a - length_b            # A alone is trimmed until they are equal,
        if excess <= gap:
            return length_a - excess, length_b
        rest = excess - gap                  # then B, A, B, ... (B on ties)
        return length_b - rest // 2, length_b - (rest + 1) // 2
    gap = length_b - length_a + 1            # B alone until it is one shorter than A,
    if excess <= gap:
        return length_a, length_b - excess
    rest = excess - gap                      # then A, B, A, ...
    return length_a - (rest + 1) // 2, length_a - 1 - rest // 2


def create_instances(sentence_splits, document_splits, max_seq_length, short_seq_prob,
                     dupe_factor, rng, np_rng):
    """The instances of a chunk of documents, ``dupe_factor`` passes over it.

    Args:
      sentence_splits: int array [sentences + 1], where each sentence's ids start and end in
        the flat ids; every sentence has at least one token.
      document_splits: int array [documents + 1] of sentence indices; every document has at
        least one sentence.
      max_seq_length: the packed length (A, B and [CLS] [SEP] [SEP] fit in it).
      short_seq_prob: how often a document's instances aim at a random shorter length.
      dupe_factor: passes over the documents (each with its own random choices).
      rng: a `random.Random` for the scalar draws; np_rng: a `numpy.random.Generator` for the
        truncation coin flips.

    Returns:
      `Instances`, in the order made (documents in a random order, pass after pass).

    >>> import random
    >>> import numpy as np
    >>> sentences = np.array([0, 3, 5, 9, 12])  # 4 sentences: 3, 2, 4 and 3 tokens
    >>> documents = np.array([0, 2, 4])          # 2 documents of 2 sentences
    >>> out = create_instances(sentences, documents, 16, 0.0, 1, random.Random(1),
    ...                        np.random.default_rng(1))
    >>> len(out), out.a_start.tolist(), out.a_end.tolist(), out.is_random_next.tolist()
    (3, [5, 9, 0], [9, 12, 3], [True, True, False])
    """
    max_num_tokens = max_seq_length - 3
    starts = np.asarray(sentence_splits[:-1]).tolist()
    ends = np.asarray(sentence_splits[1:]).tolist()
    doc_first = np.asarray(document_splits[:-1]).tolist()
    doc_last = (np.asarray(document_splits[1:]) - 1).tolist()
    lengths = [end - start for start, end in zip(starts, ends)]
    num_documents = len(doc_first)
    order = list(range(num_documents))
    rng.shuffle(order)  # as the original shuffles all_documents once, before its passes
    a_start, a_end, b_start, b_end, random_next = [], [], [], [], []
    random = rng.random

    def randint(low, high):  # rng.randint(low, high), without its argument checks
        return low + int(random() * (high - low + 1))

    for _ in range(dupe_factor):
        for document in order:
            first, last = doc_first[document], doc_last[document]
            target = max_num_tokens
            if random() < short_seq_prob:
                target = randint(2, max_num_tokens)
            chunk_first, length = first, 0
            i = first
            while i <= last:
                length += lengths[i]
                if i == last or length >= target:
                    size = i - chunk_first + 1
                    a_sentences = randint(1, size - 1) if size >= 2 else 1
                    a0 = starts[chunk_first]
                    a1 = ends[chunk_first + a_sentences - 1]
                    if size == 1 or random() < 0.5:
                        target_b = target - (a1 - a0)
                        for _ in range(10):
                            other = randint(0, num_documents - 1)
                            if other != document:
                                break
                        o_first, o_last = doc_first[other], doc_last[other]
                        j = o_first + randint(0, o_last - o_first)
                        b0 = starts[j]
                        while j < o_last and ends[j] - b0 < target_b:
                            j += 1
                        b1 = ends[j]
                        i -= size - a_sentences  # the unused sentences go back
                        random_next.append(True)
                    else:
                        b0, b1 = ends[chunk_first + a_sentences - 1], ends[i]
                        random_next.append(False)
                    a_start.append(a0)
                    a_end.append(a1)
                    b_start.append(b0)
                    b_end.append(b1)
                    chunk_first, length = i + 1, 0
                i += 1
    out = Instances(*(np.array(x, dtype=np.int64) for x in (a_start, a_end, b_start, b_end)),
                    np.array(random_next, dtype=bool))
    return _truncate(out, max_num_tokens, np_rng)


def _truncate(instances, max_num_tokens, np_rng):
    """`truncate_seq_pair` for all instances: lengths in closed form, each trimmed token from
    the front or the back with probability 1/2 (a binomial count per segment)."""
    la = instances.a_end - instances.a_start
    lb = instances.b_end - instances.b_start
    keep_a, keep_b = _truncated_lengths(la, lb, max_num_tokens)
    front_a = np_rng.binomial(la - keep_a, 0.5)
    front_b = np_rng.binomial(lb - keep_b, 0.5)
    a_start = instances.a_start + front_a
    b_start = instances.b_start + front_b
    return Instances(a_start, a_start + keep_a, b_start, b_start + keep_b,
                     instances.is_random_next)


def _truncated_lengths(la, lb, max_num_tokens):
    """`truncated_lengths` over arrays."""
    excess = la + lb - max_num_tokens
    a_longer = la > lb
    gap = np.where(a_longer, la - lb, lb - la + 1)
    rest = np.maximum(excess - gap, 0)
    keep_a = np.where(a_longer, np.where(excess <= gap, la - excess, lb - rest // 2),
                      np.where(excess <= gap, la, la - (rest + 1) // 2))
    keep_b = np.where(a_longer, np.where(excess <= gap, lb, lb - (rest + 1) // 2),
                      np.where(excess <= gap, lb - excess, la - 1 - rest // 2))
    fits = excess <= 0
    return np.where(fits, la, keep_a), np.where(fits, lb, keep_b)
