"""Pre-training straight from raw text: dynamic masking in the `tf.data` pipeline.

The input is the original ``create_pretraining_data.py`` format: one sentence per line, a
blank line between documents. Nothing is prepared beforehand; every step runs on `tf.data`
threads as TensorFlow graph ops:

1. lines are grouped into documents (long documents are cut every ``max_document_lines``);
2. each document is tokenized (`keras_bert.text.BertTokenizer`) and cut into chunks of
   consecutive sentences of about ``max_seq_length - 3`` tokens (a shorter target with
   probability ``short_seq_prob``, as the original); each chunk is split at a random sentence
   boundary into segments A and B;
3. next-sentence pairs: instances are shuffled and taken two at a time; with probability 1/2
   (and always for a chunk of one sentence, which has no B) each gets the other's A as a
   random next segment, label 1, unless both come from the same document; otherwise B is
   the real next segment, label 0;
4. pairs are packed (`keras_bert.text.BertPackInputs`) and masked
   (`keras_bert.text.MaskedLMMasker`: ``masked_lm_prob``, 80/10/10, whole words optionally).

Every random draw is stateless, seeded by (``seed``, input pipeline id, the index of the
document, pair or batch), so input pipelines never draw the same masks, a run is
reproducible, and a run resumed at batch ``b`` (``start_batch``) draws exactly the masks it
would have drawn: masks are new each time a sentence comes round again (dynamic masking).
"""

import tensorflow as tf

from keras_bert.data.pretraining.record_input import PretrainingDataError, _shard
from keras_bert import vocab as vocab_lib
from keras_bert.text.masker import MaskedLMMasker
from keras_bert.text.packer import BertPackInputs
from keras_bert.text.tokenizer import BertTokenizer

MAX_DOCUMENT_LINES = 1000
SHUFFLE_BUFFER = 1000  # instances shuffled before they are paired and batched


def _fold(seed, index):
    """A shape [2] stateless seed for ``index`` drawn from ``seed`` (shape [2])."""
    return tf.random.experimental.stateless_fold_in(seed, tf.cast(index, tf.int64))


class DynamicMaskingInput:
    """Raw text -> masked pre-training batches, in the `tf.data` pipeline.

    Args:
        tokenizer: a `BertTokenizer` (its vocabulary and casing).
        max_seq_length, max_predictions_per_seq: packed length and most predictions.
        masked_lm_prob: share of the tokens to predict.
        short_seq_prob: probability of a shorter target length for a document.
        do_whole_word_mask: mask whole words (all WordPieces of a word).
        seed: the run's seed; each input pipeline draws from (seed, pipeline id).

    Batches are dicts with the names `keras_bert.data.pretraining.record_input.tfrecord_dataset`
    gives, so both feed the same training loop.

    Example:

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "corpus.txt")
    >>> with open(path, "w") as f:
    ...     _ = f.write("the cat sat down.\\nthe dog ran.\\n\\na dog sat.\\nthe cat ran down.\\n")
    >>> data = DynamicMaskingInput(BertTokenizer.from_preset("tiny_random"), max_seq_length=16,
    ...                            max_predictions_per_seq=3, seed=1)
    >>> batch = next(iter(data.dataset([path], batch_size=2)))
    >>> {k: tuple(v.shape) for k, v in sorted(batch.items())}  # doctest: +NORMALIZE_WHITESPACE
    {'input_mask': (2, 16), 'input_type_ids': (2, 16), 'input_word_ids': (2, 16),
     'masked_lm_ids': (2, 3), 'masked_lm_positions': (2, 3), 'masked_lm_weights': (2, 3),
     'next_sentence_labels': (2,)}
    """

    def __init__(self, tokenizer, max_seq_length=128, max_predictions_per_seq=20,
                 masked_lm_prob=0.15, short_seq_prob=0.1, do_whole_word_mask=False, seed=0,
                 max_document_lines=MAX_DOCUMENT_LINES, shuffle_buffer=SHUFFLE_BUFFER):
        if not isinstance(tokenizer, BertTokenizer):
            raise TypeError(f"tokenizer must be a BertTokenizer, got {type(tokenizer).__name__}")
        vocab_lib.require(tokenizer.vocabulary, "DynamicMaskingInput")
        if not 0.0 <= short_seq_prob <= 1.0:
            raise ValueError(f"short_seq_prob must be in [0, 1], got {short_seq_prob}")
        if max_seq_length < 5:
            raise ValueError(f"max_seq_length must be >= 5 for a pair with [CLS] and two "
                             f"[SEP], got {max_seq_length}")
        self.tokenizer = tokenizer
        self.max_seq_length = int(max_seq_length)
        self.short_seq_prob = float(short_seq_prob)
        self.seed = int(seed)
        self.max_document_lines = int(max_document_lines)
        self.shuffle_buffer = int(shuffle_buffer)
        ids = vocab_lib.special_token_ids(tokenizer.vocabulary)
        self.packer = BertPackInputs(seq_length=self.max_seq_length,
                                     start_of_sequence_id=ids[vocab_lib.CLS],
                                     end_of_segment_id=ids[vocab_lib.SEP],
                                     padding_id=ids[vocab_lib.PAD])
        self.masker = MaskedLMMasker(tokenizer.vocabulary, mask_rate=masked_lm_prob,
                                     max_predictions_per_seq=max_predictions_per_seq,
                                     whole_word_masking=do_whole_word_mask, seed=self.seed)

    # ---------------------------------------------------------------- documents
    def _documents(self, lines):
        """Lines of one file -> its documents (1-D string tensors of sentences)."""
        lines = lines.concatenate(tf.data.Dataset.from_tensors(tf.constant("")))
        limit = self.max_document_lines

        def step(state, line):
            line = tf.strings.strip(line)
            blank = tf.equal(line, "")
            appended = tf.concat([state, tf.reshape(line, [1])], 0)
            emit = (blank & (tf.size(state) > 0)) | (~blank & (tf.size(appended) >= limit))
            document = tf.cond(blank, lambda: state, lambda: appended)
            reset = emit | blank
            new_state = tf.cond(reset, lambda: tf.zeros([0], tf.string), lambda: appended)
            return new_state, (emit, document)

        def emitted(emit, document):
            return emit

        def document_only(emit, document):
            return document

        return (lines.scan(tf.zeros([0], tf.string), step)
                .filter(emitted).map(document_only))

    # ---------------------------------------------------------------- instances
    def _instances(self, base_seed):
        max_tokens = self.max_seq_length - 3  # [CLS] A [SEP] B [SEP]

        def instances(index, document):
            seeds = tf.random.experimental.stateless_split(_fold(base_seed, index), num=3)
            tokens = self.tokenizer(document)  # [sentences, (tokens)]
            tokens = tf.RaggedTensor.from_row_lengths(
                tokens.flat_values, tf.cast(tokens.row_lengths(), tf.int64))
            lengths = tokens.row_lengths()
            n = tf.shape(lengths, out_type=tf.int64)[0]
            # The target length: max_tokens, or with short_seq_prob a random one in [2, max].
            short = tf.random.stateless_uniform([], seeds[0]) < self.short_seq_prob
            short_target = tf.random.stateless_uniform([], seeds[1], minval=2,
                                                       maxval=max_tokens + 1, dtype=tf.int64)
            target = tf.where(short, short_target, tf.constant(max_tokens, tf.int64))
            # Chunks of consecutive sentences: a sentence joins the chunk in which it starts.
            window = tf.cumsum(lengths, exclusive=True) // target  # [n], non-decreasing
            new_chunk = tf.concat([[True], window[1:] != window[:-1]], 0)[:n]
            chunk = tf.cumsum(tf.cast(new_chunk, tf.int64)) - 1  # [n], 0, 0, 1, 2, 2, ...
            num_chunks = tf.reduce_max(tf.concat([chunk + 1, [0]], 0))
            per_chunk = tf.math.bincount(chunk, minlength=num_chunks, dtype=tf.int64)
            first = tf.cumsum(per_chunk, exclusive=True)  # index of each chunk's first sentence
            # A ends at a random sentence boundary: 1..(sentences - 1); all of a 1-sentence one.
            u = tf.random.stateless_uniform(tf.shape(per_chunk), seeds[2], dtype=tf.float32)
            a_end = 1 + tf.cast(u * tf.cast(tf.maximum(per_chunk - 1, 1), tf.float32), tf.int64)
            a_end = tf.minimum(a_end, tf.maximum(per_chunk - 1, 1))
            position = tf.range(n) - tf.gather(first, chunk)
            in_a = position < tf.gather(a_end, chunk)  # [n]
            # Per token: its sentence's chunk and segment.
            sentence = tokens.value_rowids()
            token_chunk = tf.gather(chunk, sentence)
            token_in_a = tf.gather(in_a, sentence)
            values = tokens.flat_values

            def segment(keep):
                return tf.RaggedTensor.from_value_rowids(
                    tf.boolean_mask(values, keep), tf.boolean_mask(token_chunk, keep),
                    nrows=num_chunks)

            a, b = segment(token_in_a), segment(~token_in_a)
            has_tokens = a.row_lengths() > 0
            a, b = tf.ragged.boolean_mask(a, has_tokens), tf.ragged.boolean_mask(b, has_tokens)
            return a, b, tf.fill(tf.shape(a.row_lengths()), index)

        return instances

    # ---------------------------------------------------------------- pairs
    @staticmethod
    def _pairs(base_seed):
        def pairs(index, a, b, document):
            # Two instances: [2, (tokens)] each. One coin for both.
            coin = tf.random.stateless_uniform([], _fold(base_seed, index)) < 0.5
            other_document = tf.not_equal(document[0], document[1])
            no_b = tf.equal(b.row_lengths(), 0)  # [2]
            use_random = other_document & (coin | no_b)  # [2]
            # Rows 0-1: the real B of each; rows 2-3: the other instance's A.
            choices = tf.concat([b, tf.gather(a, [1, 0])], axis=0)
            new_b = tf.gather(choices, tf.where(use_random, tf.constant([2, 3], tf.int64),
                                                tf.constant([0, 1], tf.int64)))
            return a, new_b, tf.cast(use_random, tf.int32)

        return pairs

    # ---------------------------------------------------------------- batches
    def _pack_and_mask(self, base_seed):
        def pack(index, batch):
            a, b, labels = batch
            packed = self.packer([a, b])
            masked = self.masker(packed, seed=_fold(base_seed, index))
            masked["next_sentence_labels"] = labels
            return masked

        return pack

    def dataset(self, files, batch_size, input_context=None, is_training=True, start_batch=0,
                cycle_length=4):
        """The batches of one input pipeline (see the module docstring).

        Args:
            files: text files (`keras_bert.data.pretraining.record_input.list_files`).
            batch_size: the per-replica batch.
            input_context: this pipeline's `tf.distribute.InputContext` (None: the only one).
            is_training: shuffle the files; otherwise they are read in order (instances are
                shuffled either way, with the seed).
            start_batch: batches to skip (a resumed run's position).
            cycle_length: files read at once.
        """
        files = list(files)
        if not files:
            raise PretrainingDataError("no input files")
        pipeline = input_context.input_pipeline_id if input_context is not None else 0
        base = tf.constant([self.seed, pipeline], tf.int64)
        seeds = [_fold(base, i) for i in range(3)]
        dataset = tf.data.Dataset.from_tensor_slices(tf.constant(files, tf.string))
        dataset, shard_documents = _shard(dataset, files, input_context)
        if is_training:
            dataset = dataset.shuffle(len(files), seed=self.seed * 1000 + pipeline)
        dataset = dataset.repeat().interleave(
            lambda name: self._documents(tf.data.TextLineDataset(name)),
            cycle_length=min(cycle_length, len(files)) if is_training else 1, block_length=1,
            num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
        if shard_documents:
            dataset = dataset.shard(input_context.num_input_pipelines, pipeline)
        dataset = dataset.enumerate().map(
            self._instances(seeds[0]), num_parallel_calls=tf.data.AUTOTUNE,
            deterministic=True).unbatch()
        # Shuffled for evaluation too (seeded, so the same every time): next to each other,
        # instances of one document could not be random next segments for each other.
        # (Pipelines read other files: the seed need not differ between them.)
        dataset = dataset.shuffle(self.shuffle_buffer, seed=self.seed * 1000 + 1)
        pairs = self._pairs(seeds[1])
        dataset = dataset.ragged_batch(2, drop_remainder=True).enumerate().map(
            lambda index, pair: pairs(index, *pair)).unbatch()
        dataset = dataset.ragged_batch(batch_size, drop_remainder=True).enumerate()
        if start_batch:
            dataset = dataset.skip(int(start_batch))
        dataset = dataset.map(self._pack_and_mask(seeds[2]), num_parallel_calls=tf.data.AUTOTUNE,
                              deterministic=True)
        return dataset.prefetch(tf.data.AUTOTUNE)
