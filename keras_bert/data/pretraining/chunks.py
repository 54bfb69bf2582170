"""One chunk of documents -> its pre-training records: tokenize, make instances, pack, mask.

`ChunkEncoder.tokenize` turns a chunk of documents (lists of lines) into token ids with one
batched call of our in-graph `BertTokenizer` (tensorflow-text ops; the same ids as the
original's `FullTokenizer`). `RecordMaker` does the rest in numpy over the whole chunk
(instances, packing, masking, serialization), without TensorFlow: it is what the worker
processes of `keras_bert.data.pretraining.create` run.

Randomness: chunk ``k`` draws from generators seeded by ``(random_seed, k)`` alone, so what
a chunk makes does not depend on which process makes it, or on how many there are.
"""

import concurrent.futures
import dataclasses
import os
import random

import numpy as np
import tensorflow as tf

from keras_bert.data.pretraining import instances as pretraining_instances
from keras_bert.data.pretraining import masking as pretraining_masking
from keras_bert.data.pretraining import records as pretraining_records
from keras_bert.data.pretraining.text_files import PretrainingDataError
from keras_bert.data.pretraining.data_options import PretrainingDataOptions
from keras_bert import vocab as vocab_lib

BATCH = 2048  # instances packed, masked and serialized at once (bounds scratch memory)
TOKENIZE_BATCH = 2048  # lines per tokenizer call (several run at once, on threads)


@dataclasses.dataclass
class TokenizedChunk:
    """A chunk of documents as token ids: sentence ``s`` is ``ids[sentence_splits[s]:
    sentence_splits[s + 1]]``, document ``d`` the sentences ``document_splits[d]`` to
    ``document_splits[d + 1]``; sentences without tokens and empty documents are left out.

    >>> import numpy as np
    >>> chunk = TokenizedChunk(np.array([7, 8, 9]), np.array([0, 2, 3]), np.array([0, 2]))
    >>> chunk.ids[chunk.sentence_splits[1]:chunk.sentence_splits[2]].tolist()
    [9]
    """

    ids: np.ndarray
    sentence_splits: np.ndarray
    document_splits: np.ndarray


class RecordMaker:
    """Token ids of a chunk -> its instances, packed, masked and serialized: numpy only (no
    TensorFlow), so that worker processes forked from a TensorFlow process can run it.

    Args:
      options: `PretrainingDataOptions`.
      cls_id, sep_id, mask_id: the vocabulary's special tokens.
      continuation: bool [vocabulary size], True for `##` pieces (whole-word masking; its
        length is the vocabulary size random replacements are drawn from).

    Example (ids 0-4 are [PAD] [UNK] [CLS] [SEP] [MASK]):

    >>> import numpy as np
    >>> maker = RecordMaker(PretrainingDataOptions(max_seq_length=8, max_predictions_per_seq=2,
    ...                                        dupe_factor=1), 2, 3, 4, [False] * 20)
    >>> chunk = TokenizedChunk(ids=np.arange(5, 15), sentence_splits=np.array([0, 3, 6, 10]),
    ...                        document_splits=np.array([0, 2, 3]))
    >>> features = maker.features(chunk, chunk_index=0)
    >>> features["input_ids"][:, 0].tolist() == [2] * len(features["input_ids"])
    True
    >>> data, offsets = maker.encode(chunk, chunk_index=0)  # the same, serialized
    >>> len(offsets) - 1 == len(features["input_ids"])
    True
    """

    def __init__(self, options, cls_id, sep_id, mask_id, continuation):
        options.check()
        self.options = options
        self.cls_id, self.sep_id, self.mask_id = cls_id, sep_id, mask_id
        self.continuation = np.asarray(continuation, dtype=bool)

    def _generators(self, chunk_index):
        seed = np.random.SeedSequence([self.options.random_seed, chunk_index])
        python_seed = int.from_bytes(seed.generate_state(4, np.uint32).tobytes(), "little")
        return random.Random(python_seed), np.random.default_rng(seed)

    def _batches(self, chunk, chunk_index):
        """The chunk's features in batches of `BATCH` instances (bounded scratch memory)."""
        o = self.options
        rng, np_rng = self._generators(chunk_index)
        instances = pretraining_instances.create_instances(
            chunk.sentence_splits, chunk.document_splits, o.max_seq_length, o.short_seq_prob,
            o.dupe_factor, rng, np_rng)
        instances = instances.take(np_rng.permutation(len(instances)))
        for start in range(0, len(instances), BATCH):
            part = instances.take(slice(start, start + BATCH))
            yield self._batch_features(chunk.ids, part, np_rng)

    def _batch_features(self, ids, instances, np_rng):
        o = self.options
        input_ids, segment_ids, lengths = pretraining_masking.pack(
            ids, instances, o.max_seq_length, self.cls_id, self.sep_id)
        positions, labels, weights = pretraining_masking.mask(
            input_ids, lengths, np_rng, sep_id=self.sep_id, mask_id=self.mask_id,
            vocab_size=len(self.continuation), masked_lm_prob=o.masked_lm_prob,
            max_predictions_per_seq=o.max_predictions_per_seq,
            continuation=self.continuation if o.do_whole_word_mask else None)
        input_mask = (np.arange(o.max_seq_length)[None, :] < lengths[:, None]).astype(np.int8)
        return {
            "input_ids": input_ids,
            "input_mask": input_mask,
            "segment_ids": segment_ids,
            "masked_lm_positions": positions,
            "masked_lm_ids": labels,
            "masked_lm_weights": weights,
            "next_sentence_labels": instances.is_random_next.astype(np.int8),
        }

    def features(self, chunk, chunk_index):
        """The instances of a `TokenizedChunk` as feature arrays named as in the records
        (int32/int8/float32), shuffled. Chunk ``k`` draws from generators seeded by
        ``(random_seed, k)`` alone."""
        batches = list(self._batches(chunk, chunk_index))
        if not batches:
            empty = pretraining_instances.Instances(*([np.zeros(0, np.int64)] * 4),
                                                    np.zeros(0, bool))
            return self._batch_features(chunk.ids, empty, np.random.default_rng(0))
        return {name: np.concatenate([b[name] for b in batches]) for name in batches[0]}

    def encode(self, chunk, chunk_index):
        """`features` serialized: (data, offsets), record i at ``data[offsets[i]:offsets[i +
        1]]`` (see `keras_bert.data.pretraining.records.serialize_batch`), in the same order."""
        parts, offsets = [], [np.zeros(1, dtype=np.int64)]
        size = 0
        for batch in self._batches(chunk, chunk_index):
            data, batch_offsets = pretraining_records.serialize_batch(batch)
            parts.append(data)
            offsets.append(batch_offsets[1:] + size)
            size += len(data)
        return b"".join(parts), np.concatenate(offsets)


class ChunkEncoder:
    """Makes the pre-training records of chunks of documents: `tokenize` (our in-graph
    `BertTokenizer`, one batched call per chunk) and a `RecordMaker` (``.maker``).

    Args:
      vocabulary: a `vocab.txt` path or a list of tokens (with BERT's special tokens).
      do_lower_case: as the model's tokenizer (uncased: True).
      options: `PretrainingDataOptions`.

    Example:

    >>> from keras_bert.presets import load_preset
    >>> vocab = load_preset("tiny_random").vocab_path  # a vocab.txt
    >>> encoder = ChunkEncoder(vocab, options=PretrainingDataOptions(
    ...     max_seq_length=12, max_predictions_per_seq=2, dupe_factor=2))
    >>> documents = [[b"The cat sat.", b"The dog ran."], [b"The dog sat.", b"The cat ran."]]
    >>> features = encoder.features(documents, chunk_index=0)
    >>> features["input_ids"].shape, features["masked_lm_ids"].shape
    ((6, 12), (6, 2))
    >>> len(encoder.records(documents, chunk_index=0))
    6
    """

    def __init__(self, vocabulary, do_lower_case=True, options=PretrainingDataOptions()):
        from keras_bert.text.tokenizer import BertTokenizer

        options.check()
        try:
            self.tokenizer = BertTokenizer(vocabulary, do_lower_case=do_lower_case)
        except (ValueError, FileNotFoundError) as e:
            raise PretrainingDataError(f"bad vocabulary: {e}") from None
        tokens = self.tokenizer.get_vocabulary()
        special = vocab_lib.special_token_ids(tokens)
        self.maker = RecordMaker(
            options, special[vocab_lib.CLS], special[vocab_lib.SEP], special[vocab_lib.MASK],
            [t.startswith(vocab_lib.SUFFIX_INDICATOR) for t in tokens])
        tokenizer = self.tokenizer

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string)], autograph=False)
        def tokenize(lines):
            ids = tokenizer.tokenize(lines)
            return ids.flat_values, ids.row_splits

        self._tokenize = tokenize
        self._threads = None

    def _tokenize_lines(self, lines):
        """Flat ids and row splits of ``lines``, in batches tokenized on several threads at
        once (TensorFlow runs them in parallel, without the GIL)."""
        def run(start):
            ids, splits = self._tokenize(tf.constant(lines[start:start + TOKENIZE_BATCH]))
            return ids.numpy(), splits.numpy()

        starts = range(0, len(lines), TOKENIZE_BATCH)
        if len(starts) == 1:
            return run(0)
        if self._threads is None:
            self._threads = concurrent.futures.ThreadPoolExecutor(
                min(os.cpu_count() or 1, 8), thread_name_prefix="tokenize")
        parts = list(self._threads.map(run, starts))
        ids = np.concatenate([part_ids for part_ids, _ in parts])
        offsets = np.cumsum([0] + [len(part_ids) for part_ids, _ in parts[:-1]])
        splits = np.concatenate([[0]] + [part_splits[1:] + offset
                                         for (_, part_splits), offset in zip(parts, offsets)])
        return ids, splits

    def tokenize(self, documents):
        """Documents (lists of lines, str or UTF-8 bytes) -> `TokenizedChunk`; lines without
        tokens and documents without such lines are dropped, as the original drops them."""
        lines = [line for document in documents for line in document]
        if not lines:
            return TokenizedChunk(np.zeros(0, np.int32), np.zeros(1, np.int64),
                                  np.zeros(1, np.int64))
        ids, splits = self._tokenize_lines(lines)
        kept = np.flatnonzero(np.diff(splits) > 0)            # lines with tokens
        sentence_splits = np.append(splits[kept], splits[-1])
        line_document = np.repeat(np.arange(len(documents)), [len(d) for d in documents])
        per_document = np.bincount(line_document[kept], minlength=len(documents))
        per_document = per_document[per_document > 0]
        document_splits = np.zeros(len(per_document) + 1, dtype=np.int64)
        np.cumsum(per_document, out=document_splits[1:])
        return TokenizedChunk(ids, sentence_splits, document_splits)

    def features(self, documents, chunk_index):
        """The instances of ``documents`` as feature arrays (see `RecordMaker.features`)."""
        return self.maker.features(self.tokenize(documents), chunk_index)

    def encode(self, documents, chunk_index):
        """The records of ``documents`` as (data, offsets) (see `RecordMaker.encode`)."""
        return self.maker.encode(self.tokenize(documents), chunk_index)

    def records(self, documents, chunk_index):
        """The serialized `tf.train.Example`s of ``documents``, a list of `bytes`."""
        data, offsets = self.encode(documents, chunk_index)
        return [data[offsets[i]:offsets[i + 1]] for i in range(len(offsets) - 1)]
