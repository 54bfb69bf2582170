"""Fine-tuning data from TensorFlow Datasets, for the sets whose columns and splits are known.

`load_split` returns the same `Examples` as `keras_bert.data.files.read_examples`, so the
fine-tuning tool treats a ``--tfds_name`` and a file alike. GLUE test splits carry no labels
(their label is -1): they load with ``labels=None``, for prediction only.
"""

import dataclasses

from keras_bert.data.files import Examples


@dataclasses.dataclass(frozen=True)
class TfdsTask:
    """How to read one TFDS set: its text columns, label column and kind, and split names.

    >>> from keras_bert.data.tfds_tasks import task_of
    >>> task = TfdsTask("sentence1", "sentence2", num_classes=1)  # as glue/stsb
    >>> task.task, task.validation
    ('regression', 'validation')
    >>> task_of("glue/mnli").validation
    'validation_matched'
    """

    text: str
    text_b: str = None
    label: str = "label"
    num_classes: int = 2  # 1: regression
    train: str = "train"
    validation: str = "validation"
    test: str = "test"
    test_has_labels: bool = False

    @property
    def task(self):
        return "regression" if self.num_classes == 1 else "classification"


KNOWN = {
    "glue/cola": TfdsTask("sentence"),
    "glue/sst2": TfdsTask("sentence"),
    "glue/mrpc": TfdsTask("sentence1", "sentence2"),
    "glue/qqp": TfdsTask("question1", "question2"),
    "glue/stsb": TfdsTask("sentence1", "sentence2", num_classes=1),
    "glue/mnli": TfdsTask("premise", "hypothesis", num_classes=3,
                          validation="validation_matched", test="test_matched"),
    "glue/qnli": TfdsTask("question", "sentence"),
    "glue/rte": TfdsTask("sentence1", "sentence2"),
    "glue/wnli": TfdsTask("sentence1", "sentence2"),
    "imdb_reviews": TfdsTask("text", validation="test", test_has_labels=True),
    "yelp_polarity_reviews": TfdsTask("text", validation="test", test_has_labels=True),
}


def task_of(name):
    """The `TfdsTask` of a known set, or a ValueError listing the known ones."""
    if name not in KNOWN:
        raise ValueError(f"--tfds_name={name!r} is not a set whose columns are known; known: "
                         f"{', '.join(sorted(KNOWN))}. Other data: --train_file/--eval_file.")
    return KNOWN[name]


def load_split(name, split, data_dir=None):
    """One split (``"train"``, ``"validation"`` or ``"test"``, mapped to the set's own split
    names) of a known TFDS set as `Examples` (labels None where the split hides them).

    Example (needs the data set prepared; offline, ``tfds.load`` cannot fetch it):

    >>> examples = load_split("glue/sst2", "validation")     # doctest: +SKIP
    >>> len(examples), examples.labels[:3]                    # doctest: +SKIP
    (872, [1, 0, 1])
    """
    import tensorflow_datasets as tfds

    task = task_of(name)
    real_split = {"train": task.train, "validation": task.validation, "test": task.test}[split]
    ds = tfds.load(name, split=real_split, data_dir=data_dir, shuffle_files=False)
    texts, texts_b, labels = [], [], []
    for row in tfds.as_numpy(ds):
        texts.append(_text(row[task.text]))
        if task.text_b:
            texts_b.append(_text(row[task.text_b]))
        labels.append(row[task.label].item())
    hidden = split == "test" and not task.test_has_labels
    if task.num_classes == 1:
        labels = [float(v) for v in labels]
    else:
        labels = [int(v) for v in labels]
    return Examples(texts, texts_b if task.text_b else None, None if hidden else labels)


def _text(value):
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)
