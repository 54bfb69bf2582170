"""The task heads of Hugging Face BERT directories, for `keras_bert.checkpoints.huggingface`:
which ``BertFor*`` class a ``config.json`` describes (`read_head_values`), the names of its head
tensors, and what ``config.json`` records of a task when one is written (`config_values`).

* ``BertForSequenceClassification``, ``BertForTokenClassification``,
  ``BertForMultipleChoice``: ``classifier.{weight,bias}``, Google's ``output_{weights,bias}``;
* ``BertForQuestionAnswering``: ``qa_outputs.{weight,bias}``, Google's
  ``cls/squad/output_{weights,bias}``;
* ``BertForMaskedLM``, ``BertForPreTraining``: ``cls.predictions.*`` (and
  ``cls.seq_relationship.*``), Google's ``cls/predictions/*`` (``cls/seq_relationship/*``).

torch's ``[out, in]`` weight of these heads is already Google's layout (``[num_labels,
hidden]``): no transpose. ``BertForTokenClassification``, ``BertForQuestionAnswering`` and
``BertForMaskedLM`` have no pooler (transformers builds them without one): a directory written
for them leaves it out. Label names are ``id2label`` (transformers' defaults ``LABEL_0``,
``LABEL_1``, ... are no names: `keras_bert.checkpoints.task_heads.label_names_from_id2label`);
``problem_type`` tells regression and multi-label classification apart (unset, one label is
regression, as transformers reads it); ``classifier_dropout`` is the head's dropout.
keras_bert's own arguments that transformers has no field for (a multiple-choice model's
``num_choices``, the preprocessor's ``seq_length``) are kept in ``config.json`` under
``"keras_bert"``, which transformers carries along as it is.

>>> head = read_head_values({"architectures": ["BertForTokenClassification"],
...                          "id2label": {"0": "O", "1": "B-PER"}}, "config.json")
>>> head.task, head.label_names
('token-classification', ['O', 'B-PER'])
"""

from keras_bert.checkpoints import task_heads
from keras_bert.checkpoints.common import CheckpointError
from keras_bert.checkpoints.task_heads import (
    MASKED_LM, MULTIPLE_CHOICE, PRETRAINING, PROBLEM_TYPES, QUESTION_ANSWERING, REGRESSION,
    SEQUENCE_CLASSIFICATION, TOKEN_CLASSIFICATION, TaskHead,
)

# transformers' BERT classes and the kind of head each has (None: the encoder alone).
ARCHITECTURES = {
    "BertModel": None,
    "BertForSequenceClassification": SEQUENCE_CLASSIFICATION,
    "BertForTokenClassification": TOKEN_CLASSIFICATION,
    "BertForQuestionAnswering": QUESTION_ANSWERING,
    "BertForMultipleChoice": MULTIPLE_CHOICE,
    "BertForMaskedLM": MASKED_LM,
    "BertForPreTraining": PRETRAINING,
    "BertForNextSentencePrediction": PRETRAINING,
}
# The class written for each kind of head.
WRITTEN = {task: name for name, task in ARCHITECTURES.items()
           if name != "BertForNextSentencePrediction"}
# The classes transformers builds without a pooler (add_pooling_layer=False).
WITHOUT_POOLER = ("BertForTokenClassification", "BertForQuestionAnswering", "BertForMaskedLM")
# The key of config.json that keeps keras_bert's own task and preprocessor arguments.
KERAS_BERT_KEY = "keras_bert"

# (Google name, Hugging Face name, transpose?) of the fine-tuned heads.
CLASSIFIER = [("output_weights", "classifier.weight", False),
              ("output_bias", "classifier.bias", False)]
QA_OUTPUTS = [("cls/squad/output_weights", "qa_outputs.weight", False),
              ("cls/squad/output_bias", "qa_outputs.bias", False)]
TASK_NAMES = CLASSIFIER + QA_OUTPUTS  # every fine-tuned head name, for reading


def read_head_values(values, where):
    """The `TaskHead` that ``config.json``'s ``values`` describe (its first ``architectures``
    entry that is a BERT class), or None for ``BertModel`` and configs that name none."""
    architectures = values.get("architectures") or []
    if not isinstance(architectures, list):
        raise CheckpointError(f"{where}: architectures is {architectures!r:.100}; expected a "
                              "list of class names.")
    # (transformers' TensorFlow classes are TFBert*: the same heads and files' names)
    known = [name[2:] if name.startswith("TFBert") else name for name in architectures]
    known = [name for name in known if name in ARCHITECTURES]
    if not known or ARCHITECTURES[known[0]] is None:
        return None
    name = known[0]
    task = ARCHITECTURES[name]
    origin = f"{where} ({name})"
    if task not in (SEQUENCE_CLASSIFICATION, TOKEN_CLASSIFICATION, MULTIPLE_CHOICE):
        return TaskHead(task, origin)
    dropout = values.get("classifier_dropout")
    if dropout is not None and not isinstance(dropout, (int, float)):
        raise CheckpointError(f"{where}: classifier_dropout is {dropout!r:.60}; expected a "
                              "number or null.")
    if task == MULTIPLE_CHOICE:
        return TaskHead(task, origin, dropout=dropout)
    names = task_heads.label_names_from_id2label(values.get("id2label"), where)
    count = len(values["id2label"]) if values.get("id2label") else values.get("num_labels")
    problem_type = None
    if task == SEQUENCE_CLASSIFICATION:
        problem_type = values.get("problem_type")
        if problem_type is not None and problem_type not in PROBLEM_TYPES:
            raise CheckpointError(f"{where}: problem_type is {problem_type!r}; transformers "
                                  f"knows {', '.join(PROBLEM_TYPES)}.")
        if problem_type is None:  # as transformers reads it when it computes the loss
            problem_type = REGRESSION if count == 1 else task_heads.SINGLE_LABEL
    return TaskHead(task, origin, label_names=names, problem_type=problem_type,
                    num_labels=count, dropout=dropout)


def architecture(head, has_pretraining_heads):
    """The transformers class a directory is written for: the one of ``head``'s kind; without
    one, ``BertForPreTraining`` when there are pre-training heads, else ``BertModel``."""
    if head is not None and head.task is not None:
        return WRITTEN[head.task]
    return "BertForPreTraining" if has_pretraining_heads else "BertModel"


def head_names(name):
    """``[(Google name, Hugging Face name, transpose?)]`` of the fine-tuned head of the
    transformers class ``name`` (none for the others)."""
    task = ARCHITECTURES.get(name)
    if task == QUESTION_ANSWERING:
        return QA_OUTPUTS
    return CLASSIFIER if task in (SEQUENCE_CLASSIFICATION, TOKEN_CLASSIFICATION,
                                  MULTIPLE_CHOICE) else []


def config_values(name, head, config, extra=None):
    """What ``config.json`` records of the head for the transformers class ``name``:
    ``architectures``, and for the classifiers ``id2label``/``label2id`` (transformers'
    ``LABEL_i`` for unnamed labels), ``problem_type`` and ``classifier_dropout``; ``extra``
    (keras_bert's own task and preprocessor arguments) under `KERAS_BERT_KEY`."""
    values = {"architectures": [name]}
    task = ARCHITECTURES[name]
    if head is not None and task in (SEQUENCE_CLASSIFICATION, TOKEN_CLASSIFICATION):
        names = head.label_names or task_heads.default_label_names(head.num_labels)
        values["id2label"] = {str(i): label for i, label in enumerate(names)}
        values["label2id"] = {label: i for i, label in enumerate(names)}
        if task == SEQUENCE_CLASSIFICATION:
            values["problem_type"] = head.problem_type
    if head is not None and task in (SEQUENCE_CLASSIFICATION, TOKEN_CLASSIFICATION,
                                     MULTIPLE_CHOICE):
        dropout = head.dropout
        values["classifier_dropout"] = (None if dropout is None
                                        or dropout == config.hidden_dropout_prob else dropout)
    if extra:
        values[KERAS_BERT_KEY] = extra
    return values


def recorded_arguments(values, where):
    """keras_bert's task and preprocessor arguments kept in ``config.json`` (``{"task": ...,
    "preprocessor": ...}``, as keras_bert.json keeps them), or ``{}``."""
    recorded = values.get(KERAS_BERT_KEY)
    if recorded is None:
        return {}
    if not isinstance(recorded, dict):
        raise CheckpointError(f"{where}: {KERAS_BERT_KEY} is {recorded!r:.60}; expected an "
                              "object.")
    return {key: recorded[key] for key in (task_heads.TASK_KEY, task_heads.PREPROCESSOR_KEY)
            if isinstance(recorded.get(key), dict)}
