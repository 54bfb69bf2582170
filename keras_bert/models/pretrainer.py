"""`BertPretrainer`: BERT's pre-training model, masked LM and next-sentence prediction."""

import keras

from keras_bert.layers.heads import head_dtype
from keras_bert.models.masked_lm import mlm_graph, mlm_loss
from keras_bert.models.task import Task
from keras_bert.text.masked_lm_preprocessor import BertPretrainerPreprocessor
from keras_bert.checkpoints.task_heads import PRETRAINING


@keras.saving.register_keras_serializable(package="keras_bert")
class BertPretrainer(Task):
    """BERT's pre-training model: masked LM and next-sentence prediction.

    Outputs a dict: ``mlm_logits`` ``[batch, predictions, vocab_size]`` at
    ``masked_lm_positions`` (see `BertMaskedLM`) and ``nsp_logits`` ``[batch, 2]`` from the
    pooled output (label 0: ``text_b`` follows ``text_a``, 1: a random sentence, as in
    ``create_pretraining_data.py``). Google's ``cls/predictions/*`` and
    ``cls/seq_relationship/*`` weights load into it and ``save_to_preset`` writes them back.
    Labels: ``{"mlm_logits": masked_lm_ids, "nsp_logits": next_sentence_labels}`` with
    sample weights ``{"mlm_logits": masked_lm_weights}``; the loss is their sum, as the
    original's.

    Example:

    >>> import numpy as np
    >>> from keras_bert import BertPretrainer
    >>> model = BertPretrainer.from_preset("tiny_random", preprocessor=None)
    >>> ids = np.array([[2, 7, 4, 3, 9, 3]], "int32")
    >>> x = {"input_word_ids": ids, "input_mask": np.ones_like(ids),
    ...      "input_type_ids": np.array([[0, 0, 0, 0, 1, 1]]),
    ...      "masked_lm_positions": np.array([[2, 4]])}
    >>> {k: v.shape for k, v in model.predict(x, verbose=0).items()}
    {'mlm_logits': (1, 2, 92), 'nsp_logits': (1, 2)}
    """

    trim_predictions = True  # one row per example: predict and serving cut the padding

    preprocessor_cls = BertPretrainerPreprocessor
    head_task = PRETRAINING

    def __init__(self, encoder, preprocessor=None, **kwargs):
        inputs, outputs, mlm_logits, head = mlm_graph(encoder)
        self.mlm_head = head
        self.nsp_head = keras.layers.Dense(
            2,
            kernel_initializer=keras.initializers.TruncatedNormal(
                stddev=encoder.bert_config.initializer_range),
            dtype=head_dtype(encoder),
            name="nsp_head",
        )
        nsp_logits = self.nsp_head(outputs["pooled_output"])  # [batch, 2]
        super().__init__(inputs=inputs,
                         outputs={"mlm_logits": mlm_logits, "nsp_logits": nsp_logits},
                         encoder=encoder, preprocessor=preprocessor, **kwargs)

    def default_loss(self):
        return {"mlm_logits": mlm_loss(),
                "nsp_logits": keras.losses.SparseCategoricalCrossentropy(from_logits=True)}

    def compile(self, optimizer="auto", loss="auto", metrics="auto", **kwargs):
        if metrics == "auto":
            metrics = {"nsp_logits": [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]}
            kwargs.setdefault("weighted_metrics", {
                "mlm_logits": [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]})
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics, **kwargs)

    def head_variables(self):
        out = {name: (var, False) for name, var in self.mlm_head.canonical_variables().items()}
        out["cls/seq_relationship/output_weights"] = (self.nsp_head.kernel, True)
        out["cls/seq_relationship/output_bias"] = (self.nsp_head.bias, False)
        return out
