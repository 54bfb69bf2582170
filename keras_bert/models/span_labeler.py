"""`BertSpanLabeler`: extractive question answering (SQuAD 1.1 and 2.0)."""

import keras

from keras_bert.layers.heads import check_class_ids, head_dtype
from keras_bert.models.task import Task
from keras_bert.text.packer import min_seq_length
from keras_bert.checkpoints.task_heads import QUESTION_ANSWERING


@keras.saving.register_keras_serializable(package="keras_bert")
class BertSpanLabeler(Task):
    """BERT for SQuAD-style answer spans: a dense layer over ``sequence_output`` gives a start
    and an end logit per token, as the original ``run_squad.py``.

    Outputs a dict ``{"start_logits": [batch, seq], "end_logits": [batch, seq]}`` (float32).
    Labels are ``{"start_logits": start_positions, "end_logits": end_positions}`` (token
    indices; 0, the ``[CLS]`` token, for SQuAD 2.0 questions without an answer); the loss is
    the mean of the two cross-entropies. Google's ``cls/squad/output_weights`` and
    ``output_bias`` load into the head.

    `keras_bert.data.squad` makes the training features (``doc_stride`` windows,
    ``max_query_length``) and turns the logits back into answer texts (n-best,
    ``max_answer_length``, the null-score threshold of 2.0) with the official EM/F1. With a
    preprocessor, ``predict((questions, contexts))`` takes raw pairs packed into one window
    each (the context is truncated).

    Example:

    >>> import numpy as np
    >>> from keras_bert import BertSpanLabeler
    >>> model = BertSpanLabeler.from_preset("tiny_random", seq_length=8)
    >>> pairs = (["who ran"], ["he ran home"])  # [CLS] who ran [SEP] he ran home [SEP]
    >>> history = model.fit(pairs, {"start_logits": np.array([4]), "end_logits": np.array([4])},
    ...                     verbose=0)
    >>> {k: v.shape for k, v in model.predict(pairs, verbose=0).items()}
    {'start_logits': (1, 8), 'end_logits': (1, 8)}
    """

    # A (question, context) pair keeps its question and cuts the context.
    preprocessor_defaults = {"truncator": "waterfall"}
    reads_pooled_output = False
    head_task = QUESTION_ANSWERING

    def __init__(self, encoder, preprocessor=None, **kwargs):
        seq_length = getattr(preprocessor, "seq_length", None)
        if seq_length is not None and seq_length < min_seq_length(2):
            raise ValueError(
                f"BertSpanLabeler packs (question, context) pairs, [CLS] q [SEP] c [SEP]: its "
                f"preprocessor's seq_length must be at least {min_seq_length(2)}, got "
                f"{seq_length}")
        # The pooler is not used here: freeze it, as it gets no gradients.
        encoder.pooler.trainable = False
        inputs = encoder.input
        sequence = encoder(inputs)["sequence_output"]  # [batch, seq, hidden]
        self.span_head = keras.layers.Dense(
            2,
            kernel_initializer=keras.initializers.TruncatedNormal(
                stddev=encoder.bert_config.initializer_range),
            dtype=head_dtype(encoder),
            name="span_head",
        )
        logits = self.span_head(sequence)  # [batch, seq, 2]
        start, end = keras.ops.unstack(logits, num=2, axis=-1)
        outputs = {"start_logits": start, "end_logits": end}
        super().__init__(inputs=inputs, outputs=outputs, encoder=encoder,
                         preprocessor=preprocessor, **kwargs)

    def default_loss(self):
        return {"start_logits": keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                "end_logits": keras.losses.SparseCategoricalCrossentropy(from_logits=True)}

    def compile(self, optimizer="auto", loss="auto", metrics="auto", **kwargs):
        if loss == "auto":
            kwargs.setdefault("loss_weights", {"start_logits": 0.5, "end_logits": 0.5})
        if metrics == "auto":
            metrics = {name: [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]
                       for name in ("start_logits", "end_logits")}
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics, **kwargs)

    def check_labels(self, y):
        if not isinstance(y, dict) or set(y) != {"start_logits", "end_logits"}:
            raise ValueError('BertSpanLabeler labels are {"start_logits": start_positions, '
                             '"end_logits": end_positions}.')
        seq = self.preprocessor.seq_length if self.preprocessor is not None else None
        for name, value in y.items():
            if seq is not None:
                check_class_ids(value, seq, what=f"{name} position")

    def head_variables(self):
        return {"cls/squad/output_weights": (self.span_head.kernel, True),
                "cls/squad/output_bias": (self.span_head.bias, False)}
