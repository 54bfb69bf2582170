"""`BertMultipleChoicePreprocessor`: (context, choices) -> one packed pair per choice."""

import keras
import tensorflow as tf

from keras_bert.text.preprocessor import BertPreprocessor
from keras_bert.text.raw_inputs import CHOICES
from keras_bert.config import INPUT_NAMES


@keras.saving.register_keras_serializable(package="keras_bert")
class BertMultipleChoicePreprocessor(BertPreprocessor):
    """Packs ``(contexts, choices)`` into ``[batch, num_choices, seq_length]`` inputs.

    ``contexts`` is ``[batch]`` strings and ``choices`` ``[batch, num_choices]`` strings
    (lists of ``num_choices`` texts, an array or a tensor); each choice is packed with its
    context as a sentence pair (``[CLS] context [SEP] choice [SEP]``, truncated round-robin).
    ``choices`` alone packs each choice as one sentence. Labels and sample weights pass
    through. Other inputs are a `keras_bert.checks.TaskInputError` listing these forms
    (`keras_bert.text.raw_inputs`).

    Example:

    >>> preprocessor = BertMultipleChoicePreprocessor.from_preset("tiny_random", seq_length=6)
    >>> out = preprocessor((["he"], [["ran", "sat", "slept"]]))
    >>> out["input_word_ids"].shape
    TensorShape([1, 3, 6])
    >>> out["input_word_ids"].numpy()[0, 1].tolist()  # [CLS] he [SEP] sat [SEP] [PAD]
    [2, 35, 3, 60, 3, 0]
    """

    input_form = CHOICES  # what it reads: keras_bert.text.raw_inputs

    def call(self, x, y=None, sample_weight=None, seq_length=None):
        parts = self.read_inputs(x)  # (contexts, choices) or (choices,)
        choices = parts[-1]  # [batch, num_choices]
        batch = choices.shape[0] if choices.shape[0] is not None else tf.shape(choices)[0]
        num_choices = (choices.shape[1] if choices.shape[1] is not None
                       else tf.shape(choices)[1])
        segments = [tf.reshape(choices, [-1])]  # [batch * choices]
        if len(parts) == 2:
            segments.insert(0, tf.repeat(parts[0], num_choices))
        packed = self._pack_texts(tuple(segments), seq_length)  # [batch * choices, seq]
        out = {k: tf.reshape(v, [batch, num_choices, v.shape[-1] or tf.shape(v)[-1]])
               for k, v in packed.items()}
        return keras.utils.pack_x_y_sample_weight(out, y, sample_weight)

    def compute_output_spec(self, x, y=None, sample_weight=None, seq_length=None):
        choices = self.read_inputs(x)[-1]
        shape = tuple(choices.shape) + (int(seq_length or self.seq_length),)
        out = {name: keras.KerasTensor(shape, dtype="int32")
               for name in INPUT_NAMES}
        return keras.utils.pack_x_y_sample_weight(out, y, sample_weight)
