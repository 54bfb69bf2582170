"""`BertMultipleChoicePreprocessor`: (context, choices) -> one packed pair per choice."""

import keras
import tensorflow as tf

from keras_bert.text.preprocessor import BertPreprocessor
from keras_bert.config import INPUT_NAMES


@keras.saving.register_keras_serializable(package="keras_bert")
class BertMultipleChoicePreprocessor(BertPreprocessor):
    """Packs ``(contexts, choices)`` into ``[batch, num_choices, seq_length]`` inputs.

    ``contexts`` is ``[batch]`` strings and ``choices`` ``[batch, num_choices]`` strings;
    each choice is packed with its context as a sentence pair (``[CLS] context [SEP] choice
    [SEP]``, truncated round-robin). ``choices`` alone packs each choice as one sentence.
    Labels and sample weights pass through.

    Example:

    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "he", "ran", "sat", "slept"]
    >>> preprocessor = BertMultipleChoicePreprocessor(vocab, seq_length=6)
    >>> out = preprocessor((["he"], [["ran", "sat", "slept"]]))
    >>> out["input_word_ids"].shape
    TensorShape([1, 3, 6])
    >>> out["input_word_ids"].numpy()[0, 1].tolist()
    [2, 5, 3, 7, 3, 0]
    """

    def call(self, x, y=None, sample_weight=None, seq_length=None):
        parts = list(x) if isinstance(x, (tuple, list)) else [x]
        if len(parts) not in (1, 2):
            raise ValueError("BertMultipleChoicePreprocessor takes (contexts, choices) or choices.")
        choices = tf.convert_to_tensor(parts[-1], tf.string)
        if choices.shape.rank != 2:
            raise ValueError(f"choices must be [batch, num_choices] strings; got shape "
                             f"{choices.shape}.")
        num_choices = tf.shape(choices)[1]
        segments = [tf.reshape(choices, [-1])]  # [batch * choices]
        if len(parts) == 2:
            contexts = tf.convert_to_tensor(parts[0], tf.string)
            tf.debugging.assert_equal(tf.shape(contexts)[0], tf.shape(choices)[0],
                                      message="contexts and choices need the same batch size")
            segments.insert(0, tf.repeat(contexts, num_choices))
        packed = super().call(tuple(segments), seq_length=seq_length)
        length = int(seq_length or self.seq_length)
        out = {k: tf.reshape(v, [-1, num_choices, length]) for k, v in packed.items()}
        return keras.utils.pack_x_y_sample_weight(out, y, sample_weight)

    def compute_output_spec(self, x, y=None, sample_weight=None, seq_length=None):
        parts = list(x) if isinstance(x, (tuple, list)) else [x]
        shape = tuple(parts[-1].shape) + (int(seq_length or self.seq_length),)
        out = {name: keras.KerasTensor(shape, dtype="int32")
               for name in INPUT_NAMES}
        return keras.utils.pack_x_y_sample_weight(out, y, sample_weight)
