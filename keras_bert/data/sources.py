"""The fine-tuning data of a task, from files or a known TFDS set: one call for the tools.

`load_splits` returns ``{"train": Examples, "validation": Examples, "test": Examples}``
(the splits asked for) for the tasks of ``tools/finetune.py``: ``classification`` and
``regression`` (texts or text pairs and a label), ``tagging`` (words and one tag per word),
``multiple_choice`` (a context and a list of choices) and ``embedding`` (an anchor, its
positive and optionally a negative text, no labels: ``text_column``, ``text_b_column`` and
``text_c_column``). String labels are mapped to ids the same way in every split: the
training split's names decide.
"""

from keras_bert.data import files, tfds_tasks

TASKS = ("classification", "regression", "tagging", "multiple_choice", "embedding", "squad")
SPLITS = ("train", "validation", "test")


def load_splits(task, tfds_name=None, train_file=None, eval_file=None, test_file=None,
                text_column=None, text_b_column=None, label_column="label", data_dir=None,
                text_c_column=None):
    """Loads the splits of a task's data (see the module docstring).

    Example:

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "train.csv")
    >>> with open(path, "w") as f:
    ...     _ = f.write("text,label\\ngood,1\\nbad,0\\n")
    >>> splits = load_splits("classification", train_file=path, text_column="text")
    >>> sorted(splits), splits["train"].labels
    (['train'], [1, 0])
    """
    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, got {task!r}.")
    if task == "squad":
        raise ValueError("SQuAD data is read by keras_bert.data.squad, not load_splits.")
    if tfds_name and any((train_file, eval_file, test_file)):
        raise ValueError("Give tfds_name or data files, not both.")
    if tfds_name and task == "embedding":
        raise ValueError("embedding reads pairs (or triples) of texts from data files: give "
                         "train_file, not tfds_name.")
    if tfds_name:
        known = tfds_tasks.task_of(tfds_name)
        if known.task != task:
            raise ValueError(f"{tfds_name} is a {known.task} set, not {task}.")
        return {split: tfds_tasks.load_split(tfds_name, split, data_dir=data_dir)
                for split in SPLITS}
    if not train_file:
        raise ValueError("No training data: give tfds_name or train_file.")
    if not text_column:
        raise ValueError("text_column names the column of the text (or words, or context).")
    splits, names = {}, None
    for split, path in zip(SPLITS, (train_file, eval_file, test_file)):
        if not path:
            continue
        label = label_column if split == "train" else _label_if_present(path, label_column)
        if task == "embedding":
            if not text_b_column:
                raise ValueError("embedding needs text_b_column: the column of each text's "
                                 "positive (a text that belongs with it).")
            splits[split] = files.read_examples(path, text_column, text_b_column,
                                                text_c_column=text_c_column)
            continue
        if task == "tagging":
            examples = files.read_tagging_examples(path, text_column, label, tag_names=names)
        elif task == "multiple_choice":
            if not text_b_column:
                raise ValueError("multiple_choice needs text_b_column: the column of the "
                                 "choices (a JSON list per row).")
            examples = files.read_choice_examples(path, text_column, text_b_column, label)
        else:
            examples = files.read_examples(
                path, text_column, text_b_column, label,
                label_type="float" if task == "regression" else "class", label_names=names)
        if split == "train":
            if examples.labels is None:
                raise ValueError(f"{path}: the training file needs labels ({label_column!r}).")
            names = examples.label_names
        else:
            examples.label_names = examples.label_names or names  # for the predictions
        splits[split] = examples
    return splits


def _label_if_present(path, label_column):
    """Evaluation and test files may lack the label column (GLUE's test files do)."""
    if not label_column:
        return None
    fmt = files.file_format(path)
    for _, row in files._rows(path, fmt):  # the header (first row) decides
        return label_column if label_column in row else None
    return None


def num_classes(task, splits):
    """The number of classes (choices) the training data implies: 1 for regression, the
    label names' count, or the largest id + 1."""
    train = splits["train"]
    if task == "regression":
        return 1
    if train.label_names:
        return len(train.label_names)
    if task == "multiple_choice":
        return len(train.texts_b[0])
    labels = [v for row in train.labels for v in row] if task == "tagging" else train.labels
    return max(labels) + 1
