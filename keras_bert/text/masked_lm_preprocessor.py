"""`BertMaskedLMPreprocessor` and `BertPretrainerPreprocessor`: raw text -> masked-LM
(and next-sentence) training examples, masked anew on every call."""

import keras
import tensorflow as tf

from keras_bert.text.masker import MaskedLMMasker
from keras_bert.text.preprocessor import BertPreprocessor
from keras_bert.config import INPUT_NAMES

_MASKER_ARGS = ("mask_rate", "max_predictions_per_seq", "mask_token_rate", "random_token_rate",
                "whole_word_masking", "seed")


@keras.saving.register_keras_serializable(package="keras_bert")
class BertMaskedLMPreprocessor(BertPreprocessor):
    """`BertPreprocessor` + `MaskedLMMasker`: texts (or pairs) -> ``(x, y, sample_weight)``
    for `BertMaskedLM`.

    ``x`` holds the masked ``input_word_ids``, ``input_mask``, ``input_type_ids`` and
    ``masked_lm_positions``; ``y`` is ``masked_lm_ids`` and ``sample_weight``
    ``masked_lm_weights`` (1.0 on real predictions), the names of the original BERT
    TFRecords. The masks are drawn anew on every call (dynamic masking), so each epoch of a
    `tf.data` pipeline sees other masks.

    Args:
        tokenizer, seq_length, truncator, do_lower_case: as `BertPreprocessor`.
        mask_rate, max_predictions_per_seq, mask_token_rate, random_token_rate,
        whole_word_masking, seed: as `MaskedLMMasker`.

    Example:

    >>> preprocessor = BertMaskedLMPreprocessor.from_preset(
    ...     "tiny_random", seq_length=8, max_predictions_per_seq=2, seed=0)
    >>> x, y, w = preprocessor(["the cat sat down"])
    >>> sorted(x), y.shape, w.numpy().tolist()
    (['input_mask', 'input_type_ids', 'input_word_ids', 'masked_lm_positions'], TensorShape([1, 2]), [[1.0, 0.0]])
    """

    def __init__(self, tokenizer, seq_length=128, truncator="round_robin", do_lower_case=True,
                 mask_rate=0.15, max_predictions_per_seq=20, mask_token_rate=0.8,
                 random_token_rate=0.1, whole_word_masking=False, seed=None, **kwargs):
        super().__init__(tokenizer, seq_length=seq_length, truncator=truncator,
                         do_lower_case=do_lower_case, **kwargs)
        # The masker holds the vocabulary too (None until the tokenizer has one), and so
        # saves it as its own asset.
        self.masker = MaskedLMMasker(
            self.tokenizer.vocabulary, mask_rate=mask_rate,
            max_predictions_per_seq=max_predictions_per_seq, mask_token_rate=mask_token_rate,
            random_token_rate=random_token_rate, whole_word_masking=whole_word_masking,
            seed=seed)

    def call(self, x, y=None, sample_weight=None, seq_length=None):
        if self.masker.vocabulary is None and self.tokenizer.vocabulary is not None:
            self.masker.set_vocabulary(self.tokenizer.vocabulary)  # given to the tokenizer
        packed = super().call(x, seq_length=seq_length)
        masked = self.masker(packed)
        features = {k: masked[k] for k in INPUT_NAMES + ("masked_lm_positions",)}
        return self._labels(features, masked, y, sample_weight)

    def _labels(self, features, masked, y, sample_weight):
        return features, masked["masked_lm_ids"], masked["masked_lm_weights"]

    def compute_output_spec(self, x, y=None, sample_weight=None, seq_length=None):
        out = super().compute_output_spec(x, seq_length=seq_length)
        batch = out["input_word_ids"].shape[:-1]
        width = (self.masker.max_predictions_per_seq,)
        out["masked_lm_positions"] = keras.KerasTensor(batch + width, dtype="int32")
        return out, keras.KerasTensor(batch + width, "int32"), keras.KerasTensor(batch + width,
                                                                                "float32")

    def get_config(self):
        config = super().get_config()
        masker = self.masker.get_config()
        config.update({name: masker[name] for name in _MASKER_ARGS})
        return config


@keras.saving.register_keras_serializable(package="keras_bert")
class BertPretrainerPreprocessor(BertMaskedLMPreprocessor):
    """`BertMaskedLMPreprocessor` for `BertPretrainer`: sentence pairs and next-sentence
    labels -> ``(x, {"mlm_logits": masked_lm_ids, "nsp_logits": next_sentence_labels},
    {"mlm_logits": masked_lm_weights, "nsp_logits": 1})``.

    Call it on ``(texts_a, texts_b)`` with ``y`` the next-sentence labels (0: ``texts_b``
    follows ``texts_a``; 1: it is a random sentence).

    Example:

    >>> preprocessor = BertPretrainerPreprocessor.from_preset("tiny_random", seq_length=10, seed=0)
    >>> x, y, w = preprocessor((["the cat sat"], ["down"]), [0])
    >>> sorted(y), y["nsp_logits"].numpy().tolist()
    (['mlm_logits', 'nsp_logits'], [0])
    """

    def _labels(self, features, masked, y, sample_weight):
        if y is None:
            return features
        y = tf.convert_to_tensor(y)
        labels = {"mlm_logits": masked["masked_lm_ids"], "nsp_logits": y}
        nsp_weight = (tf.ones(tf.shape(y)[:1], tf.float32) if sample_weight is None
                      else tf.cast(sample_weight, tf.float32))
        return features, labels, {"mlm_logits": masked["masked_lm_weights"],
                                  "nsp_logits": nsp_weight}
