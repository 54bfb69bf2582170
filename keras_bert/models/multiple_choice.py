"""`BertMultipleChoice`: pick one of ``num_choices`` continuations (SWAG-style)."""

import keras

from keras_bert.layers.choices import FlattenChoices, UnflattenChoices
from keras_bert import checks
from keras_bert.layers.heads import check_class_ids, check_class_ids_in_graph, head_dtype
from keras_bert.config import INPUT_NAMES
from keras_bert.models.task import Task
from keras_bert.text.multiple_choice_preprocessor import BertMultipleChoicePreprocessor
from keras_bert.checkpoints.task_heads import MULTIPLE_CHOICE


@keras.saving.register_keras_serializable(package="keras_bert")
class BertMultipleChoice(Task):
    """BERT for multiple choice: each ``(context, choice)`` pair is encoded on its own, its
    pooled output scored by one dense unit, and the scores of a question's choices compared
    by softmax (as Hugging Face's ``BertForMultipleChoice``).

    Inputs are packed per choice: ``[batch, num_choices, seq]`` each; the output is logits
    ``[batch, num_choices]``; the label is the index of the right choice. With a
    `BertMultipleChoicePreprocessor`, ``fit`` and ``predict`` take ``(contexts, choices)``
    with ``choices`` a list of ``num_choices`` texts per context.

    Example:

    >>> from keras_bert import BertMultipleChoice
    >>> model = BertMultipleChoice.from_preset("tiny_random", num_choices=3, seq_length=6)
    >>> contexts, choices = ["he", "the cat"], [["ran", "sat", "slept"], ["sat", "ran", "is"]]
    >>> model.predict((contexts, choices), verbose=0).shape
    (2, 3)
    """

    trim_predictions = True  # one row per example: predict and serving cut the padding

    preprocessor_cls = BertMultipleChoicePreprocessor
    head_task = MULTIPLE_CHOICE

    def __init__(self, encoder, num_choices, preprocessor=None, dropout=None, **kwargs):
        self.num_choices = checks.count("num_choices", num_choices, low=2)
        if dropout is None:
            dropout = encoder.bert_config.hidden_dropout_prob
        self.dropout = checks.rate("dropout", dropout)
        inputs = {name: keras.Input(shape=(self.num_choices, None), dtype="int32", name=name)
                  for name in INPUT_NAMES}
        # [batch, choices, seq] -> [batch * choices, seq]
        flat = {name: FlattenChoices(name=f"flatten_{name}")(t) for name, t in inputs.items()}
        # The last block computes the [CLS] row only: the pooler reads no other.
        pooled = encoder(flat, output_positions=1)["pooled_output"]  # [batch * choices, hidden]
        x = keras.layers.Dropout(self.dropout, dtype=encoder.dtype_policy,
                                 name="output_dropout")(pooled)
        self.score = keras.layers.Dense(
            1,
            kernel_initializer=keras.initializers.TruncatedNormal(
                stddev=encoder.bert_config.initializer_range),
            dtype=head_dtype(encoder),
            name="score",
        )
        # [batch * choices, 1] -> [batch, choices]
        logits = UnflattenChoices(self.num_choices, name="choice_logits")(self.score(x))
        super().__init__(inputs=inputs, outputs=logits, encoder=encoder,
                         preprocessor=preprocessor, **kwargs)

    def default_loss(self):
        return keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def default_metrics(self):
        return [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]

    def check_labels(self, y):
        check_class_ids(y, self.num_choices, what="choice label")

    def check_labels_in_graph(self, y):
        return check_class_ids_in_graph(y, self.num_choices)

    def head_variables(self):
        return {"output_weights": (self.score.kernel, True),
                "output_bias": (self.score.bias, False)}

    def get_config(self):
        config = super().get_config()
        config.update({"num_choices": self.num_choices, "dropout": self.dropout})
        return config
