"""`BertPackInputs`: token id segments -> `input_word_ids`, `input_mask`, `input_type_ids`."""

import keras
import tensorflow as tf

TRUNCATORS = ("round_robin", "waterfall")


def _to_ragged(segment):
    """An int tensor [batch, tokens] (dense: every entry is a token) or ragged -> ragged int32."""
    if isinstance(segment, tf.RaggedTensor):
        return tf.cast(segment, tf.int32)
    return tf.RaggedTensor.from_tensor(tf.cast(segment, tf.int32))


@keras.saving.register_keras_serializable(package="keras_bert")
class BertPackInputs(keras.layers.Layer):
    """Packs 1 to 3 segments of token ids into BERT's fixed-length model inputs.

    `[CLS] a [SEP]`, `[CLS] a [SEP] b [SEP]`, ... padded with `pad_id` to `seq_length`;
    `input_type_ids` is 0 for `[CLS]` and the first segment with its `[SEP]`, 1 for the second,
    2 for the third; `input_mask` is 1 on tokens, 0 on padding. Segments too long together are
    cut from their ends: "round_robin" gives each segment a token in turn (BERT's
    `truncate_seq_pair` for pairs), "waterfall" fills the first segment first.

    Args:
      seq_length: length of the packed sequences (can be overridden per call).
      start_of_sequence_id: id of `[CLS]`.
      end_of_segment_id: id of `[SEP]`.
      padding_id: id of `[PAD]`.
      truncator: "round_robin" or "waterfall".

    Inputs: a ragged (or dense, every entry a token) int tensor [batch, (tokens)], or a
    list/tuple of 1 to 3 of them; an unbatched [tokens] works too.

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
        kwargs.setdefault("dtype", "int32")
        super().__init__(**kwargs)
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True
        self.built = True
        if truncator not in TRUNCATORS:
            raise ValueError(f"truncator must be one of {TRUNCATORS}, got {truncator!r}")
        self.seq_length = int(seq_length)
        self.start_of_sequence_id = int(start_of_sequence_id)
        self.end_of_segment_id = int(end_of_segment_id)
        self.padding_id = int(padding_id)
        self.truncator = truncator

    @staticmethod
    def _segments(inputs):
        if isinstance(inputs, dict):
            raise TypeError("BertPackInputs takes a tensor or a list of 1 to 3 tensors, not a dict")
        segments = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
        if not 1 <= len(segments) <= 3:
            raise ValueError(f"BertPackInputs packs 1 to 3 segments, got {len(segments)}")
        return segments

    def call(self, inputs, seq_length=None):
        import tensorflow_text as tf_text

        seq_length = int(seq_length or self.seq_length)
        segments = [
            s if isinstance(s, tf.RaggedTensor) else tf.convert_to_tensor(s)
            for s in self._segments(inputs)
        ]
        unbatched = segments[0].shape.rank == 1  # one sequence [tokens], always dense
        if unbatched:
            segments = [s[tf.newaxis] for s in segments]
        segments = [_to_ragged(s) for s in segments]
        budget = seq_length - len(segments) - 1  # room left by [CLS] and one [SEP] each
        if budget < 0:
            raise ValueError(
                f"seq_length={seq_length} is too short for {len(segments)} segment(s) "
                f"and their {len(segments) + 1} special tokens"
            )
        if self.truncator == "round_robin":
            trimmer = tf_text.RoundRobinTrimmer(max_seq_length=budget)
        else:
            trimmer = tf_text.WaterfallTrimmer(max_seq_length=budget)
        trimmed = trimmer.trim(segments)
        word_ids, type_ids = tf_text.combine_segments(
            trimmed,
            start_of_sequence_id=self.start_of_sequence_id,
            end_of_segment_id=self.end_of_segment_id,
        )
        word_ids, mask = tf_text.pad_model_inputs(
            word_ids, max_seq_length=seq_length, pad_value=self.padding_id
        )
        type_ids, _ = tf_text.pad_model_inputs(type_ids, max_seq_length=seq_length, pad_value=0)
        out = {
            "input_word_ids": tf.cast(word_ids, tf.int32),
            "input_mask": tf.cast(mask, tf.int32),
            "input_type_ids": tf.cast(type_ids, tf.int32),
        }
        if unbatched:
            out = {k: v[0] for k, v in out.items()}
        return out

    def compute_output_spec(self, inputs, seq_length=None):
        first = self._segments(inputs)[0]
        shape = tuple(first.shape[:-1]) + (int(seq_length or self.seq_length),)
        return {
            name: keras.KerasTensor(shape, dtype="int32")
            for name in ("input_word_ids", "input_mask", "input_type_ids")
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
