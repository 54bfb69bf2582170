"""`BertTokenClassifier`: a label per word (NER-style tagging)."""

import keras
import numpy as np
import tensorflow as tf

from keras_bert import checks
from keras_bert.layers.heads import check_class_ids, check_class_ids_in_graph, head_dtype
from keras_bert.models.masked_lm import mlm_loss
from keras_bert.models.label_names import LabelNames
from keras_bert.models.task import Task
from keras_bert.text.token_classifier_preprocessor import BertTokenClassifierPreprocessor
from keras_bert.checkpoints.task_heads import TOKEN_CLASSIFICATION


@keras.saving.register_keras_serializable(package="keras_bert")
class BertTokenClassifier(LabelNames, Task):
    """BERT for tagging: ``sequence_output`` -> dropout -> dense, logits
    ``[batch, seq, num_classes]``.

    Words are labelled through their first WordPiece: a `BertTokenClassifierPreprocessor`
    takes words (a list of word lists, or texts split on whitespace) with one label per word,
    puts each word's label on its first piece and gives the other pieces, ``[CLS]``, ``[SEP]``
    and padding sample weight 0, so loss and metrics ignore them (the loss averages over the
    labelled pieces). `predict_words` maps predictions back to words.

    Args:
        encoder: a `BertEncoder`.
        num_classes: number of tags.
        preprocessor: a `BertTokenClassifierPreprocessor`, or None for packed inputs.
        dropout: dropout before the dense layer (default: the encoder's hidden dropout).
        label_names: the name of each tag, in class-id order (`LabelNames`), or None. Kept in
            the config; the serving export names its labels with them.

    Example:

    >>> from keras_bert import BertTokenClassifier
    >>> model = BertTokenClassifier.from_preset("tiny_random", num_classes=3, seq_length=8)
    >>> words = [["Paris", "is", "biggest"]]
    >>> history = model.fit(words, [[1, 0, 2]], verbose=0)
    >>> [len(tags) for tags in model.predict_words(words)]
    [3]
    """

    preprocessor_cls = BertTokenClassifierPreprocessor
    reads_pooled_output = False
    head_task = TOKEN_CLASSIFICATION

    def __init__(self, encoder, num_classes, preprocessor=None, dropout=None, label_names=None,
                 **kwargs):
        self.num_classes = checks.count("num_classes", num_classes)
        self.label_names = label_names
        if dropout is None:
            dropout = encoder.bert_config.hidden_dropout_prob
        self.dropout = checks.rate("dropout", dropout)
        # The pooler is not used here: freeze it, as it gets no gradients.
        encoder.pooler.trainable = False
        inputs = encoder.input
        sequence = encoder(inputs)["sequence_output"]  # [batch, seq, hidden]
        x = keras.layers.Dropout(self.dropout, dtype=encoder.dtype_policy,
                                 name="output_dropout")(sequence)
        self.logits = keras.layers.Dense(
            self.num_classes,
            kernel_initializer=keras.initializers.TruncatedNormal(
                stddev=encoder.bert_config.initializer_range),
            dtype=head_dtype(encoder),
            name="logits",
        )
        super().__init__(inputs=inputs, outputs=self.logits(x), encoder=encoder,
                         preprocessor=preprocessor, **kwargs)

    @property
    def token_labels(self):
        return True

    def default_loss(self):
        return mlm_loss()  # mean over the pieces with weight 1

    def compile(self, optimizer="auto", loss="auto", metrics="auto", **kwargs):
        if metrics == "auto" and "weighted_metrics" not in kwargs:
            kwargs["weighted_metrics"] = [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]
            metrics = None
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics, **kwargs)

    def check_labels(self, y):
        check_class_ids(y.flat_values.numpy() if isinstance(y, tf.RaggedTensor) else y,
                        self.num_classes, what="word label")

    def check_labels_in_graph(self, y):
        return check_class_ids_in_graph(y, self.num_classes)

    def predict_words(self, words, batch_size=None, verbose=0):
        """Predicted class id of every word: a list (per text) of lists (per word); None for
        a word cut off by ``seq_length`` (or with no WordPiece at all)."""
        words = self.preprocessor.read_inputs(words, batched=True)[0]  # [batch, (words)]
        first = self.preprocessor.first_piece_positions(words)  # ragged [batch, (words)]
        logits = self.predict(words, batch_size=batch_size, verbose=verbose)
        classes = np.argmax(logits, axis=-1)
        return [[None if p < 0 else int(classes[i, p]) for p in row]
                for i, row in enumerate(first.to_list())]

    def head_variables(self):
        return {"output_weights": (self.logits.kernel, True),
                "output_bias": (self.logits.bias, False)}

    def get_config(self):
        config = super().get_config()
        config.update({"num_classes": self.num_classes, "dropout": self.dropout,
                       "label_names": self.label_names})
        return config
