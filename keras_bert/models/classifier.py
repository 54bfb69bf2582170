"""`BertClassifier`: sentence and sentence-pair classification (single- and multi-label) and
regression."""

import keras
import numpy as np
import tensorflow as tf

from keras_bert.models import retrieval
from keras_bert.models.label_names import LabelNames
from keras_bert.models.task import Task
from keras_bert import checks
from keras_bert.checkpoints.task_heads import SEQUENCE_CLASSIFICATION
from keras_bert.checks import TaskInputError
from keras_bert.layers.heads import check_class_ids, check_class_ids_in_graph, head_dtype


@keras.saving.register_keras_serializable(package="keras_bert")
class BertClassifier(LabelNames, Task):
    """BERT for sentence and sentence-pair classification, and for regression.

    The original ``run_classifier.py`` head: ``pooled_output`` -> dropout -> dense, giving
    logits ``[batch, num_classes]``. ``num_classes=1`` is regression (e.g. STS-B): one score
    per example, mean squared error. ``multi_label=True`` makes each class a yes/no of its
    own (transformers' ``problem_type="multi_label_classification"``): labels are
    ``[batch, num_classes]`` arrays of 0 and 1, the loss is the sigmoid cross-entropy of each
    class, and the serving export gives each class's probability by sigmoid.

    Args:
        encoder: a `BertEncoder`.
        num_classes: number of classes (1: regression, unless ``multi_label``).
        preprocessor: a `BertPreprocessor` to take raw text in fit/evaluate/predict, or None
            (inputs are packed dicts). `from_preset` attaches the preset's.
        dropout: dropout before the dense layer (default: the encoder's hidden dropout).
        activation: applied to the logits (default none: losses take logits).
        label_names: the name of each class, in class-id order (`LabelNames`), or None.
            Kept in the config (``.keras``, ``save_to_preset``); the serving export names
            its labels with them. ``predict`` returns logits either way.
        multi_label: each class a yes/no of its own (labels: multi-hot ``[batch,
            num_classes]``; sigmoid cross-entropy; binary accuracy at probability 0.5).
        compile: compile with the BERT recipe and the default loss and metrics.

    Example:

    >>> from keras_bert import BertClassifier
    >>> model = BertClassifier.from_preset("tiny_random", num_classes=2, seq_length=8)
    >>> history = model.fit(["a great movie", "dull"], [1, 0], epochs=2, verbose=0)
    >>> model.predict(["a dull movie"], verbose=0).shape
    (1, 2)

    ``BertClassifier.from_preset("base", num_classes=2)`` loads the encoder and the
    preprocessor of a preset (see `BertEncoder.from_preset`) with a fresh head.
    """

    trim_predictions = True  # one row per example: predict and serving cut the padding
    head_task = SEQUENCE_CLASSIFICATION

    def __init__(self, encoder, num_classes, preprocessor=None, dropout=None, activation=None,
                 label_names=None, multi_label=False, **kwargs):
        self.num_classes = checks.count("num_classes", num_classes)
        self.multi_label = checks.boolean("multi_label", multi_label)
        self.label_names = label_names
        if dropout is None:
            dropout = encoder.bert_config.hidden_dropout_prob
        self.dropout = checks.rate("dropout", dropout)
        self.activation = keras.activations.get(activation)
        inputs = encoder.input
        # The last block computes the [CLS] row only: the pooler reads no other.
        pooled = encoder(inputs, output_positions=1)["pooled_output"]  # [batch, hidden]
        x = keras.layers.Dropout(self.dropout, dtype=encoder.dtype_policy,
                                 name="output_dropout")(pooled)
        self.logits = keras.layers.Dense(
            self.num_classes,
            activation=self.activation,
            kernel_initializer=keras.initializers.TruncatedNormal(
                stddev=encoder.bert_config.initializer_range),
            dtype=head_dtype(encoder),
            name="logits",
        )
        super().__init__(inputs=inputs, outputs=self.logits(x), encoder=encoder,  # [batch, C]
                         preprocessor=preprocessor, **kwargs)

    @property
    def regression(self):
        return self.num_classes == 1 and not self.multi_label

    @property
    def _from_logits(self):
        return self.activation in (None, keras.activations.linear)

    def default_loss(self):
        if self.regression:
            return keras.losses.MeanSquaredError()
        if self.multi_label:
            return keras.losses.BinaryCrossentropy(from_logits=self._from_logits)
        return keras.losses.SparseCategoricalCrossentropy(from_logits=self._from_logits)

    def default_metrics(self):
        if self.regression:
            return [keras.metrics.MeanAbsoluteError(name="mae")]
        if self.multi_label:  # a logit of 0 is a probability of 0.5
            return [keras.metrics.BinaryAccuracy(name="accuracy",
                                                 threshold=0.0 if self._from_logits else 0.5)]
        return [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]

    def check_labels(self, y):
        if self.multi_label:
            return _check_multi_hot(y, self.num_classes)
        if self.regression:
            values = np.asarray(y, dtype=np.float64).reshape(-1)
            bad = np.flatnonzero(~np.isfinite(values))
            if bad.size:
                i = int(bad[0])
                raise TaskInputError(f"regression label {i} is {values[i].item()!r}; labels must be "
                                     "finite numbers.")
            return
        check_class_ids(y, self.num_classes)

    def check_labels_in_graph(self, y):
        if self.multi_label:
            return tf.cast(y, "float32")
        if self.regression or not y.dtype.is_integer:
            return y
        return check_class_ids_in_graph(y, self.num_classes)

    def rerank(self, query, documents, top_k=None, return_documents=False, batch_size=32,
               activation="auto"):
        """Scores each of ``documents`` against ``query`` with this cross-encoder (a
        single-score model, ``num_classes=1``, reading ``(query, document)`` pairs) and
        returns them best first, as sentence-transformers' ``CrossEncoder.rank``:
        ``[{"corpus_id": int, "score": float}, ...]`` (with ``"text"`` when
        ``return_documents``), the first ``top_k`` (None: all); ties keep the documents'
        order.

        ``activation``: ``"auto"`` turns logits into sigmoid scores in (0, 1), as
        ``CrossEncoder`` does for one label (a model built with an ``activation`` keeps
        its outputs); None keeps the raw outputs; or a Keras activation (name or function).
        The order is the same either way. ValueError for a model of several classes.
        """
        if not self.regression:
            raise ValueError(f"rerank needs a single-score model (a cross-encoder, "
                             f"num_classes=1); this {type(self).__name__} has "
                             f"num_classes={self.num_classes}.")
        if not isinstance(query, (str, bytes)):
            raise TaskInputError(f"rerank takes one query (a string), got "
                                 f"{type(query).__name__} {query!r:.80}.")
        documents = list(documents)
        if not documents:
            return []
        scores = self.predict(([query] * len(documents), documents), batch_size=batch_size,
                              verbose=0)
        scores = np.asarray(scores, np.float32).reshape(-1)
        if activation == "auto":
            activation = "sigmoid" if self.activation in (
                None, keras.activations.linear) else None
        if activation is not None:
            scores = np.asarray(keras.activations.get(activation)(scores))
        return retrieval.ranked(scores, top_k, documents if return_documents else None)

    def head_variables(self):
        return {"output_weights": (self.logits.kernel, True),
                "output_bias": (self.logits.bias, False)}

    def get_config(self):
        config = super().get_config()
        config.update({
            "num_classes": self.num_classes,
            "dropout": self.dropout,
            "activation": keras.activations.serialize(self.activation),
            "label_names": self.label_names,
            "multi_label": self.multi_label,
        })
        return config


def _check_multi_hot(y, num_classes):
    """Multi-label labels (numpy): ``[examples, num_classes]`` of 0 and 1."""
    try:
        values = np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError):
        raise TaskInputError("multi-label labels are numbers: one row per example, one 0 or "
                             f"1 per class ({num_classes} columns).") from None
    if values.ndim != 2 or values.shape[1] != num_classes:
        raise TaskInputError(f"multi-label labels have shape {values.shape}; they are one row "
                             f"per example with one 0 or 1 per class: [examples, {num_classes}].")
    bad = np.argwhere((values != 0) & (values != 1))
    if len(bad):
        i, j = (int(k) for k in bad[0])
        raise TaskInputError(f"multi-label label [{i}, {j}] is {values[i, j].item()!r}; each is 0 "
                             "(the class does not apply) or 1 (it does).")
