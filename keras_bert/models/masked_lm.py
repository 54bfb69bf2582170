"""`BertMaskedLM`: BERT with its masked-LM head, and the masked-LM graph and loss that
`BertPretrainer` shares."""

import keras

from keras_bert.layers.masked_lm_head import MaskedLMHead
from keras_bert.models.task import Task
from keras_bert.text.masked_lm_preprocessor import BertMaskedLMPreprocessor
from keras_bert.checkpoints.task_heads import MASKED_LM

POSITIONS = "masked_lm_positions"


def mlm_loss():
    """Cross-entropy over the real predictions only: sum(loss * weight) / sum(weight), the
    original's masked-LM loss, with ``masked_lm_weights`` as sample weights."""
    return keras.losses.SparseCategoricalCrossentropy(from_logits=True,
                                                      reduction="mean_with_sample_weight")


def mlm_graph(encoder):
    """Encoder inputs + masked_lm_positions -> (inputs, encoder outputs, MLM logits, head)."""
    config = encoder.bert_config
    inputs = dict(encoder.input)
    inputs[POSITIONS] = keras.Input(shape=(None,), dtype="int32", name=POSITIONS)
    # The last block runs at the masked positions (and [CLS], for the pooled output) only:
    # no other row of its output is read, so none is computed.
    outputs = encoder({k: v for k, v in inputs.items() if k != POSITIONS},
                      output_positions=inputs[POSITIONS])
    head = MaskedLMHead(
        vocab_size=config.vocab_size,
        hidden_size=config.hidden_size,
        hidden_act=config.hidden_act,
        embeddings=encoder.token_embedding,  # the decoder is tied to its word embeddings
        layer_norm_eps=config.layer_norm_eps,
        initializer_range=config.initializer_range,
        dtype=encoder.dtype_policy,
        name="mlm_head",
    )
    # [batch, predictions, vocab_size], float32
    logits = head(outputs["sequence_output"])
    return inputs, outputs, logits, head


@keras.saving.register_keras_serializable(package="keras_bert")
class BertMaskedLM(Task):
    """BERT with its masked-LM head: predicts the tokens at ``masked_lm_positions``.

    Inputs: the encoder's packed inputs plus ``masked_lm_positions`` ``[batch, predictions]``;
    output: logits ``[batch, predictions, vocab_size]`` (float32). The head is the original
    one (`MaskedLMHead`: dense + activation + LayerNorm, decoder tied to the word
    embeddings, output bias); Google's ``cls/predictions/*`` weights load into it. Labels are
    ``masked_lm_ids`` with ``masked_lm_weights`` as sample weights (the loss averages over
    real predictions only). With a `BertMaskedLMPreprocessor`, ``fit`` takes raw text and
    masks it anew each epoch.

    Example:

    >>> import numpy as np
    >>> from keras_bert import BertMaskedLM
    >>> model = BertMaskedLM.from_preset("tiny_random", preprocessor=None)
    >>> ids = np.array([[2, 7, 4, 9, 3]], "int32")
    >>> x = {"input_word_ids": ids, "input_mask": np.ones_like(ids),
    ...      "input_type_ids": np.zeros_like(ids), "masked_lm_positions": np.array([[2]])}
    >>> model.predict(x, verbose=0).shape  # [batch, masked positions, vocab_size]
    (1, 1, 92)
    """

    trim_predictions = True  # one row per example: predict and serving cut the padding

    preprocessor_cls = BertMaskedLMPreprocessor
    reads_pooled_output = False
    head_task = MASKED_LM
    preprocessor_makes_labels = True  # raw text: the masked ids are the labels

    def __init__(self, encoder, preprocessor=None, **kwargs):
        inputs, _, logits, head = mlm_graph(encoder)
        self.mlm_head = head
        super().__init__(inputs=inputs, outputs=logits, encoder=encoder,
                         preprocessor=preprocessor, **kwargs)

    def default_loss(self):
        return mlm_loss()

    def default_metrics(self):
        return None

    def compile(self, optimizer="auto", loss="auto", metrics="auto", **kwargs):
        if metrics == "auto" and "weighted_metrics" not in kwargs:
            kwargs["weighted_metrics"] = [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics, **kwargs)

    def head_variables(self):
        return {name: (var, False) for name, var in self.mlm_head.canonical_variables().items()}
