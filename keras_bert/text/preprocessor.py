"""`BertPreprocessor`: raw strings (single sentences or pairs) -> BERT model inputs, in graph."""

import keras
import tensorflow as tf

from keras_bert.text.packer import BertPackInputs
from keras_bert.text.tokenizer import BertTokenizer


@keras.saving.register_keras_serializable(package="keras_bert")
class BertPreprocessor(keras.layers.Layer):
    """`BertTokenizer` + `BertPackInputs`: strings in, `input_word_ids`/`input_mask`/
    `input_type_ids` out, all TensorFlow graph ops.

    Works three ways: called eagerly; in `tf.data` as `dataset.map(preprocessor,
    num_parallel_calls=tf.data.AUTOTUNE)` (elements `text`, `(text, label)` or
    `((text_a, text_b), label)`; labels and sample weights pass through); and as the first layer
    of a Keras model whose inputs are `tf.string`, which then saves to `.keras` with its
    vocabulary.

    Args:
      tokenizer: a `BertTokenizer`, or a vocabulary (path to `vocab.txt` or list of tokens)
        to build one with `do_lower_case`.
      seq_length: length of the packed sequences.
      truncator: "round_robin" or "waterfall" (see `BertPackInputs`).
      do_lower_case: only used when `tokenizer` is a vocabulary.

    Example:

    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "qu", "##ick",
    ...          "fox", "."]
    >>> preprocessor = BertPreprocessor(vocab, seq_length=6)
    >>> out = preprocessor(["The quick fox."])
    >>> out["input_word_ids"].numpy()
    array([[2, 5, 6, 7, 8, 3]], dtype=int32)
    >>> pair = preprocessor((["The fox"], ["Quick."]))
    >>> pair["input_word_ids"].numpy(), pair["input_type_ids"].numpy()
    (array([[2, 5, 8, 3, 6, 3]], dtype=int32), array([[0, 0, 0, 0, 1, 1]], dtype=int32))
    """

    def __init__(
        self, tokenizer, seq_length=128, truncator="round_robin", do_lower_case=True, **kwargs
    ):
        kwargs.setdefault("dtype", "int32")
        super().__init__(**kwargs)
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True
        if isinstance(tokenizer, dict):
            tokenizer = keras.saving.deserialize_keras_object(tokenizer)
        if not isinstance(tokenizer, BertTokenizer):
            tokenizer = BertTokenizer(tokenizer, do_lower_case=do_lower_case)
        self.tokenizer = tokenizer
        self.packer = BertPackInputs(
            seq_length=seq_length,
            start_of_sequence_id=tokenizer.cls_token_id,
            end_of_segment_id=tokenizer.sep_token_id,
            padding_id=tokenizer.pad_token_id,
            truncator=truncator,
        )
        self.seq_length = int(seq_length)
        self.truncator = truncator
        self.built = True

    @staticmethod
    def _texts(x):
        if isinstance(x, dict):
            raise TypeError(
                "BertPreprocessor takes a string tensor or a tuple of 1 to 3 of them, not a dict"
            )
        if isinstance(x, list) and not x:
            return [tf.constant([], tf.string)]  # an empty batch
        return list(x) if isinstance(x, (list, tuple)) and not _is_string_list(x) else [x]

    def call(self, x, y=None, sample_weight=None, seq_length=None):
        segments = [self.tokenizer.tokenize(tf.convert_to_tensor(t, tf.string))
                    for t in self._texts(x)]
        out = self.packer(segments, seq_length=seq_length)
        return keras.utils.pack_x_y_sample_weight(out, y, sample_weight)

    def compute_output_spec(self, x, y=None, sample_weight=None, seq_length=None):
        first = self._texts(x)[0]
        shape = tuple(first.shape) + (int(seq_length or self.seq_length),)
        out = {
            name: keras.KerasTensor(shape, dtype="int32")
            for name in ("input_word_ids", "input_mask", "input_type_ids")
        }
        return keras.utils.pack_x_y_sample_weight(out, y, sample_weight)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "tokenizer": keras.saving.serialize_keras_object(self.tokenizer),
                "seq_length": self.seq_length,
                "truncator": self.truncator,
            }
        )
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["tokenizer"] = keras.saving.deserialize_keras_object(config["tokenizer"])
        return cls(**config)

    @classmethod
    def from_preset(cls, preset, seq_length=128, truncator="round_robin", do_lower_case=None,
                    **kwargs):
        """The preprocessor of a preset: its vocabulary and casing (see `BertTokenizer`)."""
        tokenizer = BertTokenizer.from_preset(preset, do_lower_case=do_lower_case)
        return cls(tokenizer, seq_length=seq_length, truncator=truncator, **kwargs)


def _is_string_list(x):
    """A plain Python list of str/bytes is one batch of texts, not a list of segments."""
    return isinstance(x, list) and len(x) > 0 and all(isinstance(t, (str, bytes)) for t in x)
