"""`BertPackInputs`: token id segments -> `input_word_ids`, `input_mask`, `input_type_ids`;
which rows it cuts (`overflowing_rows`), and a packed batch cut to its longest sequence
(`trim_padding`)."""

import keras
import tensorflow as tf

from keras_bert import checks
from keras_bert.presets.preset_loader import text_preset
from keras_bert import vocab as vocab_lib
from keras_bert.config import INPUT_NAMES

_SPECIAL_ID_ARGS = ("start_of_sequence_id", "end_of_segment_id", "padding_id")
TRUNCATORS = ("round_robin", "waterfall")
MAX_SEQ_LENGTH = 2**20  # far beyond any BERT; keeps a typo from allocating gigabytes
MAX_ID = 2**31  # ids are packed as int32
PAD_MULTIPLE = 8  # trim_padding rounds lengths up to this, so few shapes get traced


def min_seq_length(segments=1):
    """The shortest sequence that holds [CLS], one token of each segment and a [SEP] after
    each: 3 for single texts, 5 for pairs, 7 for triples."""
    return 2 * segments + 1


def _layout(segments):
    return "[CLS] " + " ".join(f"{'abc'[i]} [SEP]" for i in range(segments))


def checked_seq_length(seq_length, segments=1, where="BertPackInputs"):
    """`seq_length` as an int with room for [CLS], one token of each of ``segments`` segments
    and a [SEP] after each (`min_seq_length`), or ValueError: shorter, a model would see the
    special tokens and nothing of a text.

    Inside a graph a scalar integer tensor is accepted too (an exported ``bert_pack_inputs``
    takes ``seq_length`` as an input): it comes back as an int32 tensor behind an assertion
    with the same message; an eager one is read as its int.
    """
    low = min_seq_length(segments)
    if isinstance(seq_length, tf.Tensor):
        if seq_length.shape.rank != 0 or not seq_length.dtype.is_integer:
            raise ValueError(f"seq_length must be an integer, got a {seq_length.dtype.name} "
                             f"tensor of shape {seq_length.shape}")
        if checks.is_eager(seq_length):
            seq_length = int(seq_length.numpy())
        else:
            length = tf.cast(seq_length, tf.int64)
            valid = tf.debugging.Assert(
                (length >= low) & (length <= MAX_SEQ_LENGTH),
                [f"{where}: seq_length must be an integer in [{low}, {MAX_SEQ_LENGTH}] (room "
                 f"for {_layout(segments)}: one token of each of {segments} segment(s) and "
                 f"{segments + 1} special tokens), got", seq_length])
            return checks.after([valid], tf.cast(seq_length, tf.int32))
    seq_length = checks.integer("seq_length", seq_length, maximum=MAX_SEQ_LENGTH)
    if seq_length < low:
        raise ValueError(
            f"{where}: seq_length must be at least {low} to hold {_layout(segments)} (one token "
            f"of each of {segments} segment(s) and {segments + 1} special tokens), got "
            f"{seq_length}: shorter, the model would see the special tokens and no text")
    return seq_length


@keras.saving.register_keras_serializable(package="keras_bert")
class BertPackInputs(keras.layers.Layer):
    """Packs 1 to 3 segments of token ids into BERT's fixed-length model inputs.

    `[CLS] a [SEP]`, `[CLS] a [SEP] b [SEP]`, ... padded with `padding_id` to `seq_length`;
    `input_type_ids` is 0 for `[CLS]` and the first segment with its `[SEP]`, 1 for the second,
    2 for the third; `input_mask` is 1 on tokens, 0 on padding. Segments too long together are
    cut from their ends: "round_robin" gives each segment a token in turn (BERT's
    `truncate_seq_pair` for pairs), "waterfall" fills the first segment first.

    Args:
      seq_length: length of the packed sequences, at least 3 (can be overridden per call,
        inside a graph also by a scalar integer tensor; a call with two segments needs at
        least 5, three 7).
      start_of_sequence_id: id of `[CLS]`.
      end_of_segment_id: id of `[SEP]`.
      padding_id: id of `[PAD]`.
      truncator: "round_robin" or "waterfall".

    Inputs: a ragged [batch, (tokens)] or dense [batch, tokens] (every entry a token) integer
    tensor, or a list/tuple of 1 to 3 of them, all with the same batch size; or unbatched
    [tokens] ones. Ids must be in [0, 2**31). Outputs are int32.

    Raises:
      ValueError: segments whose batch sizes differ (naming both), a rank other than these
        (e.g. per-word ids of ragged_rank 2: `merge_dims(-2, -1)` first), batched mixed with
        unbatched, 0 or more than 3 segments, negative ids, a bad `seq_length` (not an int
        up to 2**20, or too short to hold [CLS], one token of each segment and a [SEP] after
        each: at least 3 for one segment, 5 for two, 7 for three), a bad id argument or
        truncator.
      TypeError: ids that are not integers (float, string, bool), a dict, unknown
        constructor arguments.
      tf.errors.InvalidArgumentError: inside a graph (`tf.function`, `dataset.map`) when
        only the run time knows: batch sizes the traced shapes leave unknown, id values. The
        check runs before any packing op.

    Example:

    >>> packer = BertPackInputs(seq_length=8, start_of_sequence_id=2, end_of_segment_id=3)
    >>> a = tf.ragged.constant([[10, 11, 12], [13]])
    >>> b = tf.ragged.constant([[20, 21, 22, 23, 24], [25, 26]])
    >>> out = packer([a, b])
    >>> out["input_word_ids"].numpy()
    array([[ 2, 10, 11, 12,  3, 20, 21,  3],
           [ 2, 13,  3, 25, 26,  3,  0,  0]], dtype=int32)
    >>> out["input_type_ids"].numpy()
    array([[0, 0, 0, 0, 0, 1, 1, 1],
           [0, 0, 0, 1, 1, 1, 0, 0]], dtype=int32)
    >>> out["input_mask"].numpy()
    array([[1, 1, 1, 1, 1, 1, 1, 1],
           [1, 1, 1, 1, 1, 1, 0, 0]], dtype=int32)
    >>> packer([a, tf.ragged.constant([[20]])])
    Traceback (most recent call last):
    ...
    ValueError: ...the batch sizes differ: segment 1 has 2, segment 2 has 1...
    """

    def __init__(
        self,
        seq_length=128,
        start_of_sequence_id=101,
        end_of_segment_id=102,
        padding_id=0,
        truncator="round_robin",
        **kwargs,
    ):
        checks.check_layer_kwargs(
            "BertPackInputs", kwargs, checks.keyword_parameters(BertPackInputs.__init__)
        )
        kwargs.setdefault("dtype", "int32")
        super().__init__(**kwargs)
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True
        self.built = True
        if truncator not in TRUNCATORS:
            raise ValueError(f"truncator must be one of {TRUNCATORS}, got {truncator!r}")
        self.seq_length = checked_seq_length(seq_length)
        for name, value in (("start_of_sequence_id", start_of_sequence_id),
                            ("end_of_segment_id", end_of_segment_id),
                            ("padding_id", padding_id)):
            setattr(self, name, checks.integer(name, value, minimum=0, maximum=MAX_ID - 1))
        self.truncator = truncator

    @staticmethod
    def _segments(inputs):
        if isinstance(inputs, dict):
            raise TypeError("BertPackInputs takes a tensor or a list of 1 to 3 tensors, not a dict")
        segments = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
        if not 1 <= len(segments) <= 3:
            raise ValueError(f"BertPackInputs packs 1 to 3 segments, got {len(segments)}")
        return segments

    def _checked_segments(self, inputs):
        """The segments as ragged int32 [batch, (tokens)], checked; and whether unbatched."""
        names = [f"segment {i + 1}" for i in range(len(self._segments(inputs)))]
        segments = [checks.integer_tensor(s, n) for s, n in zip(self._segments(inputs), names)]
        ranks = []
        for segment, name in zip(segments, names):
            if isinstance(segment, tf.RaggedTensor):
                if segment.ragged_rank != 1 or segment.shape.rank != 2:
                    raise ValueError(
                        f"BertPackInputs: {name} must be [batch, (tokens)], got a ragged tensor "
                        f"of shape {segment.shape} (ragged_rank {segment.ragged_rank}); "
                        "for per-word ids [batch, (words), (pieces)] use merge_dims(-2, -1)"
                    )
            elif segment.shape.rank not in (1, 2):
                raise ValueError(
                    f"BertPackInputs: {name} must be [batch, tokens] or unbatched [tokens], "
                    f"got shape {segment.shape}"
                )
            ranks.append(segment.shape.rank)
        if len(set(ranks)) > 1:
            raise ValueError(
                "BertPackInputs: segments must be all batched or all unbatched, got ranks "
                + ", ".join(f"{n}: {r}" for n, r in zip(names, ranks))
            )
        unbatched = ranks[0] == 1
        if unbatched:
            segments = [s[tf.newaxis] for s in segments]  # [1, tokens]
        assertions = checks.same_dims(segments, names, 0, "batch size", "BertPackInputs")
        for segment, name in zip(segments, names):
            assertions += checks.values_in(segment, f"{name} ids", 0, MAX_ID, "BertPackInputs")
        segments = checks.after(assertions, segments)
        return [_to_ragged(s) for s in segments], unbatched

    def call(self, inputs, seq_length=None):
        segments, unbatched = self._checked_segments(inputs)
        seq_length = self.seq_length if seq_length is None else seq_length
        seq_length = checked_seq_length(seq_length, len(segments))
        out = self._pack(segments, seq_length)
        if unbatched:
            out = {k: v[0] for k, v in out.items()}
        return out

    def _pack(self, segments, seq_length):
        """Ragged int32 segments [batch, (tokens)] -> the three int32 [batch, seq_length]."""
        budget = seq_length - len(segments) - 1  # room left by [CLS] and one [SEP] each
        lengths = tf.stack([s.row_lengths() for s in segments], axis=1)  # [B, K]
        if self.truncator == "round_robin":
            kept = round_robin_lengths(lengths, budget)
        else:
            kept = waterfall_lengths(lengths, budget)  # [B, K]
        ends = 1 + tf.cumsum(kept + 1, axis=1)  # [B, K]: one past each segment's [SEP]
        starts = ends - kept - 1  # [B, K]: each segment's first token
        position = tf.range(seq_length)[tf.newaxis, :]  # [1, S]
        batch = tf.shape(lengths)[0]
        word_ids = tf.fill([batch, seq_length], self.padding_id)  # [B, S]
        word_ids = tf.where(position == 0, self.start_of_sequence_id, word_ids)
        type_ids = tf.zeros([batch, seq_length], tf.int32)
        for i, segment in enumerate(segments):
            offset = position - starts[:, i : i + 1]  # [B, S]: place within segment i
            n = kept[:, i : i + 1]  # [B, 1]
            in_segment = (offset >= 0) & (offset <= n)  # its tokens and its [SEP]
            is_token = in_segment & (offset < n)
            # Flat index of the token in segment.values; a spare last slot elsewhere.
            values = tf.concat([segment.values, [0]], axis=0)
            index = tf.where(is_token, segment.row_starts()[:, tf.newaxis] + offset,
                             tf.size(segment.values))
            tokens = tf.gather(values, index)  # [B, S]
            word_ids = tf.where(
                is_token, tokens, tf.where(in_segment, self.end_of_segment_id, word_ids)
            )
            type_ids = tf.where(in_segment, i, type_ids)
        mask = tf.cast(position < ends[:, -1:], tf.int32)  # [B, S]
        return {"input_word_ids": word_ids, "input_mask": mask, "input_type_ids": type_ids}

    def compute_output_spec(self, inputs, seq_length=None):
        first = self._segments(inputs)[0]
        seq_length = self.seq_length if seq_length is None else seq_length
        shape = tuple(first.shape[:-1]) + (checked_seq_length(seq_length),)
        return {
            name: keras.KerasTensor(shape, dtype="int32")
            for name in INPUT_NAMES
        }

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "seq_length": self.seq_length,
                "start_of_sequence_id": self.start_of_sequence_id,
                "end_of_segment_id": self.end_of_segment_id,
                "padding_id": self.padding_id,
                "truncator": self.truncator,
            }
        )
        return config

    @classmethod
    def from_preset(cls, preset, **kwargs):
        """The packer of a preset: the ids of its vocabulary's `[CLS]`, `[SEP]` and `[PAD]`.

        `kwargs`: the other constructor arguments (`seq_length`, `truncator`, `name`, ...);
        the three ids come from the preset and cannot be passed (TypeError, as for unknown
        arguments).
        """
        accepted = checks.keyword_parameters(cls.__init__, skip=_SPECIAL_ID_ARGS)
        checks.check_layer_kwargs("BertPackInputs.from_preset", kwargs, accepted)
        ids = vocab_lib.special_token_ids(text_preset(preset).load_vocabulary())
        return cls(start_of_sequence_id=ids[vocab_lib.CLS], end_of_segment_id=ids[vocab_lib.SEP],
                   padding_id=ids[vocab_lib.PAD], **kwargs)


def overflowing_rows(segments, seq_length):
    """Whether each row's segments hold more tokens than ``seq_length`` leaves them after
    [CLS] and one [SEP] each, so the packer cuts them: bool [batch] for ragged segments
    [batch, (tokens)], a scalar for unbatched ones [tokens]. (Cut or not does not depend on
    the truncator, only what is kept.)"""
    def tokens(segment):
        if isinstance(segment, tf.RaggedTensor):
            return tf.cast(segment.row_lengths(), tf.int32)
        return tf.size(segment, out_type=tf.int32)  # unbatched: [tokens]

    total = tf.add_n([tokens(s) for s in segments])
    return total > tf.cast(seq_length, tf.int32) - len(segments) - 1


def trim_padding(x, y=None, sample_weight=None, token_labels=False):
    """Cuts a packed batch to its longest sequence (rounded up to `PAD_MULTIPLE`), which
    changes no model output: padded positions get no attention and no loss.

    ``x``'s per-token inputs [batch, (choices,) seq] are cut on the last axis; with
    ``token_labels``, per-token ``y`` and ``sample_weight`` [batch, seq] too.

    >>> mask = tf.constant([[1, 1, 1, 0] + [0] * 12])
    >>> x, _, _ = trim_padding({"input_word_ids": mask, "input_mask": mask,
    ...                         "input_type_ids": 0 * mask})
    >>> x["input_mask"].shape
    TensorShape([1, 8])
    """
    mask = x["input_mask"]
    full = tf.shape(mask)[-1]
    longest = tf.reduce_max(tf.reduce_sum(tf.cast(mask, tf.int32), axis=-1))
    length = tf.minimum(full, (longest + PAD_MULTIPLE - 1) // PAD_MULTIPLE * PAD_MULTIPLE)
    length = tf.maximum(length, 1)

    def cut(t):
        return t[..., :length]

    x = {k: cut(v) if k in INPUT_NAMES else v for k, v in x.items()}
    if token_labels:
        y = tf.nest.map_structure(cut, y) if y is not None else None
        sample_weight = (tf.nest.map_structure(cut, sample_weight)
                         if sample_weight is not None else None)
    return x, y, sample_weight


def _to_ragged(segment):
    """An int tensor [batch, tokens] (dense: every entry is a token) or ragged -> ragged int32
    with int32 row splits."""
    if not isinstance(segment, tf.RaggedTensor):
        segment = tf.RaggedTensor.from_tensor(segment, row_splits_dtype=tf.int32)
    return tf.cast(segment, tf.int32).with_row_splits_dtype(tf.int32)


def waterfall_lengths(lengths, budget):
    """Tokens kept per segment, [B, K] -> [B, K], filling the first segment first."""
    before = tf.cumsum(lengths, axis=1, exclusive=True)  # tokens of the earlier segments
    return tf.minimum(lengths, tf.maximum(budget - before, 0))


def round_robin_lengths(lengths, budget):
    """Tokens kept per segment, [B, K] -> [B, K], taking one per segment in turn.

    Keeping `min(l_i, c)` of every segment costs f(c) = sum_i min(l_i, c). With the lengths
    sorted, s_1 <= ... <= s_K, f is the least of the lines S_j + (K - j) c (S_j: the sum of
    the j shortest), so the highest affordable level is c* = max_j (budget - S_j) // (K - j).
    The budget left after that level goes one token each to the segments still longer than
    c*, first segments first (as tensorflow-text's RoundRobinTrimmer and BERT's
    `truncate_seq_pair` do).
    """
    k = lengths.shape[1]
    shortest_first = tf.sort(lengths, axis=1)  # [B, K]
    sums = tf.cumsum(shortest_first, axis=1, exclusive=True)  # [B, K]: S_j, j = 0..K-1
    level = tf.reduce_max((budget - sums) // tf.range(k, 0, -1), axis=1, keepdims=True)  # [B, 1]
    kept = tf.minimum(lengths, level)  # [B, K]
    left = budget - tf.reduce_sum(kept, axis=1, keepdims=True)  # [B, 1]
    longer = tf.cast(lengths > level, tf.int32)
    extra = longer * tf.cast(tf.cumsum(longer, axis=1, exclusive=True) < left, tf.int32)
    fits = tf.reduce_sum(lengths, axis=1, keepdims=True) <= budget  # [B, 1]: nothing to cut
    return tf.where(fits, lengths, kept + extra)
