"""The task heads a checkpoint holds beside its encoder, in every format: which task each one
belongs to (`TaskHead`, what the files say of it), its variables in Google's names, the
constructor arguments it decides, and the checks made before a task model is built.

The head variables, in the names and layouts of Google's fine-tuning scripts:

* ``output_weights`` ``[num_labels, hidden]`` and ``output_bias`` ``[num_labels]``:
  ``run_classifier.py``'s head over the pooled output (logits = pooled x output_weights^T +
  output_bias). Hugging Face's ``classifier.weight``/``classifier.bias`` of
  ``BertForSequenceClassification``, of ``BertForTokenClassification`` (over every token) and
  of ``BertForMultipleChoice`` (one unit per choice) are stored the same way, and keras-hub's
  ``BertTextClassifier`` logits layer transposed: one pair of names, three tasks, told apart
  by what the files say (`TaskHead`); Google's files say nothing, so its ``output_weights``
  load into any of the three.
* ``cls/squad/output_weights`` ``[2, hidden]`` and ``cls/squad/output_bias`` ``[2]``:
  ``run_squad.py``'s span head over every token, row 0 the start logits and row 1 the end
  logits (Hugging Face's ``qa_outputs.*``, the same order).
* ``cls/predictions/*`` and ``cls/seq_relationship/*``: the pre-training heads
  (`keras_bert.checkpoints.common.head_shapes`).

A task model names its kind (one of `TASKS`: the ``head_task`` of keras_bert's task classes).
`check_head` holds a checkpoint's head to it before anything is built: for a fine-tuned task,
a fine-tuned head of another task (a question-answering head into a classifier) is an error,
and so are head shapes the task cannot take; pre-training heads belong to no fine-tuned task,
so a classifier from a pre-trained checkpoint starts with a fresh head, and the pre-training
tasks read their heads from any checkpoint. `head_arguments` gives the arguments
the head decides (``num_classes``, ``label_names``, ``multi_label``, ``dropout``).

>>> head = TaskHead(SEQUENCE_CLASSIFICATION, "config.json (BertForSequenceClassification)",
...                 label_names=["negative", "positive"])
>>> shapes = {"output_weights": (2, 8), "output_bias": (2,)}
>>> check_head(SEQUENCE_CLASSIFICATION, shapes, head, hidden_size=8, source="dir",
...            owner="BertClassifier")
True
>>> head_arguments(SEQUENCE_CLASSIFICATION, shapes, head)
{'num_classes': 2, 'label_names': ['negative', 'positive'], 'multi_label': False}
"""

from keras_bert.checkpoints.common import CheckpointError

# The kinds of task head, as the error messages name them.
SEQUENCE_CLASSIFICATION = "sequence-classification"
TOKEN_CLASSIFICATION = "token-classification"
QUESTION_ANSWERING = "question-answering"
MULTIPLE_CHOICE = "multiple-choice"
MASKED_LM = "masked-LM"
PRETRAINING = "pre-training"
TASKS = (SEQUENCE_CLASSIFICATION, TOKEN_CLASSIFICATION, QUESTION_ANSWERING, MULTIPLE_CHOICE,
         MASKED_LM, PRETRAINING)
FINE_TUNED = TASKS[:4]  # a head of one of these belongs to its task alone

# What a Hugging Face classifier's problem_type may be (transformers' names).
REGRESSION = "regression"
SINGLE_LABEL = "single_label_classification"
MULTI_LABEL = "multi_label_classification"
PROBLEM_TYPES = (REGRESSION, SINGLE_LABEL, MULTI_LABEL)

OUTPUT = ("output_weights", "output_bias")
SQUAD = ("cls/squad/output_weights", "cls/squad/output_bias")
PREDICTIONS = ("cls/predictions/transform/dense/kernel", "cls/predictions/transform/dense/bias",
               "cls/predictions/transform/LayerNorm/gamma",
               "cls/predictions/transform/LayerNorm/beta", "cls/predictions/output_bias")
SEQ_RELATIONSHIP = ("cls/seq_relationship/output_weights", "cls/seq_relationship/output_bias")
# The head variables of each kind (Google's names).
VARIABLES = {
    SEQUENCE_CLASSIFICATION: OUTPUT,
    TOKEN_CLASSIFICATION: OUTPUT,
    MULTIPLE_CHOICE: OUTPUT,
    QUESTION_ANSWERING: SQUAD,
    MASKED_LM: PREDICTIONS,
    PRETRAINING: PREDICTIONS + SEQ_RELATIONSHIP,
}
# Where a keras_bert preset records its task (keras_bert.json; a Hugging Face config.json's
# "keras_bert" entry): the class and its head arguments, and the preprocessor's arguments.
TASK_KEY = "task"
PREPROCESSOR_KEY = "preprocessor"
# Where keras_bert.json records the `TaskHead` of the checkpoint it was converted from.
HEAD_KEY = "head"
# keras_bert's task classes, for presets that record a class name and no kind.
KERAS_BERT_TASKS = {
    "BertClassifier": SEQUENCE_CLASSIFICATION,
    "BertTokenClassifier": TOKEN_CLASSIFICATION,
    "BertSpanLabeler": QUESTION_ANSWERING,
    "BertMultipleChoice": MULTIPLE_CHOICE,
    "BertMaskedLM": MASKED_LM,
    "BertPretrainer": PRETRAINING,
}


class TaskHead:
    """What a checkpoint's files say of its task head (read by each format's ``read_head``;
    written by the Hugging Face writer into ``config.json``).

    Attributes: ``task`` (a kind of `TASKS`, or None: the files do not say, as Google's),
    ``origin`` (where it was read, for messages: ``"config.json (BertForQuestionAnswering)"``),
    ``label_names`` (class names by id, or None: unnamed), ``problem_type`` (a classifier's:
    one of `PROBLEM_TYPES` or None), ``num_labels`` (the count the files record, or None),
    ``dropout`` (the head's dropout rate, or None: the encoder's), ``activation`` (applied to
    the logits, or None).

    >>> head = TaskHead(TOKEN_CLASSIFICATION, "config.json", label_names=["O", "B-PER"])
    >>> head.task, head.num_labels
    ('token-classification', 2)
    """

    def __init__(self, task, origin, label_names=None, problem_type=None, num_labels=None,
                 dropout=None, activation=None):
        if task is not None and task not in TASKS:
            raise ValueError(f"Unknown task {task!r}; one of {TASKS}.")
        self.task, self.origin = task, origin
        self.label_names = None if label_names is None else list(label_names)
        self.problem_type = problem_type
        self.num_labels = num_labels if label_names is None else len(self.label_names)
        self.dropout, self.activation = dropout, activation

    @property
    def multi_label(self):
        return self.problem_type == MULTI_LABEL

    FIELDS = ("task", "origin", "label_names", "problem_type", "num_labels", "dropout",
              "activation")

    def to_dict(self):
        """The fields as JSON values (keras_bert.json's ``head``: a converted checkpoint keeps
        what its files said)."""
        return {field: getattr(self, field) for field in self.FIELDS}

    @classmethod
    def from_dict(cls, values, where):
        """The `TaskHead` of `to_dict`'s ``values``; `CheckpointError` naming ``where`` when
        they are not that."""
        if not isinstance(values, dict) or values.get("task") not in TASKS or \
                set(values) - set(cls.FIELDS):
            raise CheckpointError(f"{where}: head is {values!r:.200}; expected an object with "
                                  f"a task of {', '.join(TASKS)} and the fields "
                                  f"{', '.join(cls.FIELDS)}.")
        return cls(**values)

    def __repr__(self):
        return (f"TaskHead({self.task!r}, {self.origin!r}, label_names={self.label_names!r}, "
                f"problem_type={self.problem_type!r})")


def from_task_config(task, config, origin):
    """The `TaskHead` of a keras_bert task model of kind ``task`` with the head arguments
    ``config`` (its ``head_config()``, as keras_bert.json records it)."""
    problem_type = None
    if task == SEQUENCE_CLASSIFICATION:
        if config.get("multi_label"):
            problem_type = MULTI_LABEL
        elif config.get("num_classes") == 1:
            problem_type = REGRESSION
        else:
            problem_type = SINGLE_LABEL
    activation = config.get("activation")
    return TaskHead(task, origin, label_names=config.get("label_names"),
                    problem_type=problem_type, num_labels=config.get("num_classes"),
                    dropout=config.get("dropout"),
                    activation=None if activation in (None, "linear") else activation)


def recorded_task(metadata, origin):
    """The `TaskHead` a keras_bert preset records: its ``head`` (`TaskHead.to_dict`), else the
    one of what it records under `TASK_KEY` (``{"class_name", "config", "head"}``), else
    None."""
    if metadata.get(HEAD_KEY) is not None:
        return TaskHead.from_dict(metadata[HEAD_KEY], origin)
    recorded = metadata.get(TASK_KEY)
    if not isinstance(recorded, dict):
        return None
    task = recorded.get("head") or KERAS_BERT_TASKS.get(recorded.get("class_name"))
    if task not in TASKS:
        return None
    config = recorded.get("config")
    return from_task_config(task, config if isinstance(config, dict) else {},
                            f"{origin} ({recorded.get('class_name')})")


# ------------------------------------------------------------------------ checks
def _present(shapes, names):
    return [name for name in names if name in shapes]


def held_task(shapes, head):
    """The fine-tuned task the checkpoint's head belongs to: what its files say, else what its
    variable names tell (``cls/squad/*``: question answering; ``output_weights``: one of the
    three classifying tasks, returned as None with ``True``). Returns ``(task, has_output)``:
    ``task`` a kind of `FINE_TUNED` or None, ``has_output`` whether ``output_*`` is there
    without a description."""
    if head is not None and head.task in FINE_TUNED:
        return head.task, False
    if _present(shapes, SQUAD):
        return QUESTION_ANSWERING, False
    return None, bool(_present(shapes, OUTPUT))


def _describe(task, head, shapes):
    """How a message names the checkpoint's head."""
    if head is not None and head.task == task:
        return f"a {task} head ({head.origin})"
    names = _present(shapes, VARIABLES.get(task, OUTPUT))
    return f"a {task} head ({', '.join(names)})" if names else f"a {task} head"


def check_head(task, shapes, head, hidden_size, source, owner):
    """Holds the checkpoint's head (``shapes``: ``{name: shape}`` in Google's names; ``head``:
    its `TaskHead` or None) to a task model of kind ``task`` (``owner``: its class name),
    before anything is built. Returns whether the checkpoint holds a head for ``task``.

    For a fine-tuned ``task`` (`FINE_TUNED`): `CheckpointError`, naming ``source``, the head
    and the way out, when the head is a fine-tuned one of another task (a question-answering
    head into a classifier; Google's ``output_weights`` into anything but the three
    classifying tasks), or when its variables have shapes ``task`` cannot take
    (``output_weights`` not ``[n, hidden_size]`` with ``output_bias`` ``[n]``; a
    multiple-choice head of more than one unit; a span head of other than two rows).
    Pre-training heads are no fine-tuned task's: a fine-tuned task model of such a
    checkpoint has no head of its own in it (False). The pre-training tasks take their
    heads from any checkpoint that has them, fine-tuned or not (their shapes are held to the
    config with the encoder's: `keras_bert.checkpoints.common.check_shapes`)."""
    present = bool(_present(shapes, VARIABLES[task]))
    if task not in FINE_TUNED:  # pre-training heads are the encoder's: any checkpoint will do
        return present
    held, unnamed_output = held_task(shapes, head)
    if held is not None and held != task:
        what = _describe(held, head, shapes)
    elif unnamed_output and VARIABLES[task] != OUTPUT:
        what = "a classification head (output_weights, output_bias: run_classifier.py's)"
    else:
        if present:
            _check_shapes(task, shapes, hidden_size, source, owner)
        return present
    raise CheckpointError(
        f"{source} holds {what}, the head of another task than {owner}'s ({task}). Load it "
        f"with the task it was trained for, or give {owner} a new head on the checkpoint's "
        f"encoder: {owner}(BertEncoder.from_preset(...), ...).")


def _check_shapes(task, shapes, hidden_size, source, owner):
    kernel_name, bias_name = VARIABLES[task]
    kernel, bias = shapes.get(kernel_name), shapes.get(bias_name)
    rows = {QUESTION_ANSWERING: 2, MULTIPLE_CHOICE: 1}.get(task)
    fine = (kernel is not None and bias is not None and len(kernel) == 2
            and kernel[1] == hidden_size and tuple(bias) == (kernel[0],)
            and (rows is None or kernel[0] == rows))
    if fine:
        return
    n = "n" if rows is None else rows
    why = {QUESTION_ANSWERING: ": a start and an end logit per token",
           MULTIPLE_CHOICE: ": one score per choice"}.get(task, "")
    raise CheckpointError(
        f"{source}: its {task} head has {kernel_name} {_shape(kernel)} and {bias_name} "
        f"{_shape(bias)}; {owner} takes {kernel_name} ({n}, {hidden_size}) and {bias_name} "
        f"({n},){why}.")


def _shape(shape):
    return "(missing)" if shape is None else str(tuple(shape))


def head_arguments(task, shapes, head):
    """The constructor arguments of a task model of kind ``task`` that the checkpoint decides:
    ``num_classes`` from the shape of ``output_weights`` (the classifiers), and where the files
    describe a head of that task, its ``label_names``, ``multi_label`` (a classifier),
    ``dropout`` and ``activation`` as they record them. Call `check_head` first."""
    if task not in (SEQUENCE_CLASSIFICATION, TOKEN_CLASSIFICATION) or "output_weights" not in shapes:
        return {}
    num_classes = int(shapes["output_weights"][0])
    args = {"num_classes": num_classes}
    if head is None or head.task != task:
        return args
    if head.num_labels is not None and head.num_labels != num_classes:
        raise CheckpointError(
            f"{head.origin} names {head.num_labels} labels, but the checkpoint's head has "
            f"{num_classes} (output_weights {tuple(shapes['output_weights'])}); the config "
            "and the weights do not belong together.")
    names = head.label_names
    args["label_names"] = None if names is None or num_classes == 1 and not head.multi_label \
        else names
    if task == SEQUENCE_CLASSIFICATION:
        args["multi_label"] = head.multi_label
        if head.activation is not None:
            args["activation"] = head.activation
    if head.dropout is not None:
        args["dropout"] = head.dropout
    return args


def described_arguments(task, head):
    """`head_arguments` from the files' description alone (no weights read, as for
    ``load_weights=False``): ``num_classes`` from the labels they record."""
    if head is None or head.task != task or head.num_labels is None:
        return {}
    count = head.num_labels
    return head_arguments(task, {"output_weights": (count, 0)}, head)


# ------------------------------------------------------------------------ label names
def default_label_names(count):
    """transformers' names for labels nobody named (``LABEL_0``, ``LABEL_1``, ...)."""
    return [f"LABEL_{i}" for i in range(count)]


def label_names_from_id2label(id2label, where):
    """Class names by id from a Hugging Face ``id2label`` (``{"0": "negative", ...}``): None
    for transformers' defaults (``LABEL_0``, ``LABEL_1``, ...: nobody named them), else the
    names in id order. `CheckpointError` naming ``where`` when the ids are not 0..n-1 or a
    name is not a string."""
    if id2label is None:
        return None
    if not isinstance(id2label, dict) or not id2label:
        raise CheckpointError(f"{where}: id2label is {id2label!r:.100}; expected an object "
                              "of label ids to names.")
    try:
        by_id = {int(key): value for key, value in id2label.items()}
    except (TypeError, ValueError):
        raise CheckpointError(f"{where}: id2label has ids that are not integers: "
                              f"{sorted(id2label)!r:.100}.") from None
    if sorted(by_id) != list(range(len(by_id))):
        raise CheckpointError(f"{where}: id2label's ids are {sorted(by_id)!r:.100}, not "
                              f"0..{len(by_id) - 1}.")
    names = [by_id[i] for i in range(len(by_id))]
    if not all(isinstance(name, str) and name for name in names):
        raise CheckpointError(f"{where}: id2label holds names that are not strings: "
                              f"{names!r:.100}.")
    return None if names == default_label_names(len(names)) else names
