"""`BertTokenClassifierPreprocessor`: words and word labels -> packed pieces and piece labels."""

import keras
import tensorflow as tf

from keras_bert.text import truncation
from keras_bert.text.packer import BertPackInputs, checked_seq_length, overflowing_rows
from keras_bert.text.preprocessor import special_ids, sync_packer
from keras_bert.text.raw_inputs import RawInputReader, WORDS, read_word_labels
from keras_bert.text.tokenizer import BertTokenizer
from keras_bert.config import INPUT_NAMES


@keras.saving.register_keras_serializable(package="keras_bert")
class BertTokenClassifierPreprocessor(keras.layers.Layer, RawInputReader):
    """Tokenizes words for tagging and puts each word's label on its first WordPiece.

    Call it on words ``[batch, (words)]`` (a ragged `tf.string` tensor: one entry per word,
    as in CoNLL data; a list of word lists; or texts, split on whitespace: the forms of
    `keras_bert.text.raw_inputs`) with labels ``[batch, (words)]``. Each word is tokenized as BERT's
    tokenizer would tokenize it inside a text (it may give several pieces, or split off
    punctuation); the label goes to the word's first piece, and the sample weight is 1 there
    and 0 on every other piece, on ``[CLS]``, ``[SEP]`` and padding, so that loss and metrics
    see each word once (the convention of the BERT paper's NER experiment). Returns
    ``(x, y, sample_weight)`` with ``x`` the packed inputs ``[batch, seq_length]``; without
    labels, ``x`` alone. Words past ``seq_length`` are cut off with their labels (an eager
    call that cuts some warns once: `keras_bert.text.truncation.TruncationWarning`).

    Args:
        tokenizer: a `BertTokenizer`, or a vocabulary to build one with ``do_lower_case``.
        seq_length: length of the packed sequences.

    Example:

    >>> import tensorflow as tf
    >>> from keras_bert import BertTokenizer
    >>> tokenizer = BertTokenizer.from_preset("tiny_random")
    >>> preprocessor = BertTokenClassifierPreprocessor(tokenizer, seq_length=7)
    >>> x, y, w = preprocessor(tf.ragged.constant([["Paris", "is", "biggest"]]),
    ...                        tf.ragged.constant([[1, 0, 2]]))
    >>> x["input_word_ids"].numpy(), y.numpy(), w.numpy()
    (array([[ 2, 70, 17, 73, 87,  3,  0]], dtype=int32), array([[0, 1, 0, 2, 0, 0, 0]], dtype=int32), array([[0., 1., 1., 1., 0., 0., 0.]], dtype=float32))
    >>> preprocessor.first_piece_positions(tf.ragged.constant([["Paris", "is", "biggest"]]))
    <tf.RaggedTensor [[1, 2, 3]]>
    """

    input_form = WORDS  # what it reads: keras_bert.text.raw_inputs

    def __init__(self, tokenizer, seq_length=128, do_lower_case=True, **kwargs):
        super().__init__(**kwargs)
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True
        if isinstance(tokenizer, dict):
            tokenizer = keras.saving.deserialize_keras_object(tokenizer)
        if not isinstance(tokenizer, BertTokenizer):
            tokenizer = BertTokenizer(tokenizer, do_lower_case=do_lower_case)
        self.tokenizer = tokenizer
        self.seq_length = checked_seq_length(seq_length, where=type(self).__name__)
        self.packer = BertPackInputs(seq_length=self.seq_length, truncator="waterfall",
                                     **special_ids(tokenizer))
        self.built = True

    def _pieces(self, words):
        """[batch, (words)] strings -> ids [batch, (words), (pieces)]."""
        sync_packer(self.packer, self.tokenizer)
        words = self.read_inputs(words)[0]
        flat = self.tokenizer.tokenize(words.flat_values)  # [words, (pieces)]
        return tf.RaggedTensor.from_row_splits(flat, tf.cast(words.row_splits, tf.int64))

    def read_labels(self, y):
        """One class id per word -> ragged int32 [batch, (words)]."""
        return read_word_labels(y, type(self).__name__)

    def call(self, x, y=None, sample_weight=None):
        pieces = self._pieces(x)  # [batch, (words), (pieces)]
        tokens = pieces.merge_dims(1, 2)  # [batch, (tokens)]
        name = type(self).__name__
        out = truncation.record(overflowing_rows([tokens], self.seq_length), self.seq_length,
                                self.packer(tokens), name)  # [batch, seq]
        if y is None:
            return out
        labels = self.read_labels(y)
        with tf.control_dependencies([tf.debugging.assert_equal(
                labels.row_lengths(), pieces.row_lengths(),
                message="every text needs exactly one label per word")]):
            # 1 on each word's first piece: [batch, (words), (pieces)]
            lengths = pieces.row_lengths(axis=2)  # [batch, (words)]
            index = lengths.with_flat_values(tf.ragged.range(lengths.flat_values))
            first = tf.cast(tf.equal(index, 0), tf.int32)
        y = self._pack_like(first * tf.expand_dims(labels, -1))
        weights = tf.cast(first, tf.float32)
        if sample_weight is not None:
            weights = weights * tf.expand_dims(
                read_word_labels(sample_weight, name, dtype=tf.float32), -1)
        return out, y, self._pack_like(weights)

    def _pack_like(self, values):
        """Per-piece values [batch, (words), (pieces)] -> [batch, seq_length], placed as the
        packer places the pieces (after [CLS], cut before the last [SEP]); 0 elsewhere."""
        values = values.merge_dims(1, 2)[:, : self.seq_length - 2]  # [batch, (tokens)]
        zero = tf.zeros_like(values[:, :1])
        values = tf.concat([zero, values], axis=1)
        return values.to_tensor(default_value=0, shape=[None, self.seq_length])

    def first_piece_positions(self, words):
        """Where each word's first piece sits in the packed sequence: ragged int32
        [batch, (words)]; -1 for a word cut off by ``seq_length`` or with no pieces."""
        counts = tf.cast(self._pieces(words).row_lengths(axis=2), tf.int32)  # [batch, (words)]
        flat = counts.flat_values
        ends = tf.cumsum(flat)
        row_base = tf.gather(tf.concat([[0], ends], 0), counts.row_starts())
        before = ends - flat - tf.repeat(row_base, counts.row_lengths())  # pieces before word
        offsets = counts.with_flat_values(before + 1)  # +1: [CLS]
        keep = (counts > 0) & (offsets + 1 <= self.seq_length - 1)
        return tf.where(keep, offsets, -tf.ones_like(offsets))

    def compute_output_spec(self, x, y=None, sample_weight=None):
        shape = (x.shape[0], self.seq_length)
        out = {name: keras.KerasTensor(shape, dtype="int32")
               for name in INPUT_NAMES}
        if y is None:
            return out
        return out, keras.KerasTensor(shape, dtype="int32"), keras.KerasTensor(shape, "float32")

    def get_config(self):
        config = super().get_config()
        config.update({"tokenizer": keras.saving.serialize_keras_object(self.tokenizer),
                       "seq_length": self.seq_length})
        return config

