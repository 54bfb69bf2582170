"""What the task heads share: the dtype of their last layer, the check of class-id labels and
that of class names.

>>> import numpy as np
>>> from keras_bert.layers.heads import check_class_ids
>>> check_class_ids(np.array([0, 1, 1]), num_classes=2)  # fine: nothing raised
>>> check_class_ids(np.array([0, 2]), num_classes=2)
Traceback (most recent call last):
...
keras_bert.checks.TaskInputError: label 1 is 2, outside [0, 2) (num_classes=2); 1 label(s) are out of range.
"""

import numpy as np
import tensorflow as tf

from keras_bert.checks import TaskInputError


def head_dtype(encoder):
    """The dtype policy of a head's last layer: float32 logits under mixed precision."""
    policy = encoder.dtype_policy
    return "float32" if policy.compute_dtype in ("bfloat16", "float16") else policy


def check_class_ids(y, num_classes, what="label"):
    """Class-id labels (numpy) must be whole numbers in [0, num_classes)."""
    flat = np.asarray(y).reshape(-1)
    if flat.size and flat.dtype.kind == "f":
        fractional = np.flatnonzero(flat != np.round(flat))
        if fractional.size:
            i = int(fractional[0])
            raise TaskInputError(f"{what} {i} is {flat[i].item()!r}: class labels must be whole numbers "
                                 f"in [0, {num_classes}).")
    bad = np.flatnonzero((flat < 0) | (flat >= num_classes)) if flat.size else []
    if len(bad):
        i = int(bad[0])
        raise TaskInputError(
            f"{what} {i} is {flat[i].item()!r}, outside [0, {num_classes}) "
            f"(num_classes={num_classes}); "
            f"{len(bad)} label(s) are out of range."
        )


def check_class_ids_in_graph(y, num_classes):
    message = f"class labels must be in [0, {num_classes}) (num_classes={num_classes})"
    with tf.control_dependencies([
        tf.debugging.assert_non_negative(y, message=message),
        tf.debugging.assert_less(y, tf.cast(num_classes, y.dtype), message=message),
    ]):
        return tf.identity(y)


def check_label_names(label_names, num_classes, owner):
    """``label_names`` (class id -> name) as a tuple of ``num_classes`` distinct, non-empty
    strings, or None; ValueError naming ``owner`` and what is wrong otherwise.

    >>> check_label_names(["negative", "positive"], 2, "BertClassifier")
    ('negative', 'positive')
    >>> check_label_names(["O", "LOC"], 3, "BertTokenClassifier")
    Traceback (most recent call last):
    ...
    ValueError: BertTokenClassifier: label_names has 2 names (['O', 'LOC']) but num_classes is 3; give one name per class, in class-id order, or label_names=None.
    """
    if label_names is None:
        return None
    if isinstance(label_names, dict):  # (Keras' attribute tracking wraps dicts: say "dict")
        raise ValueError(f"{owner}: label_names must be a list of class names in class-id "
                         f"order, got a dict; for an id -> name mapping such as Hugging "
                         "Face's id2label, pass [id2label[i] for i in range(num_classes)].")
    if isinstance(label_names, (str, bytes)) or not hasattr(label_names, "__iter__"):
        raise ValueError(f"{owner}: label_names must be a list of class names in class-id "
                         f"order, got {type(label_names).__name__} {label_names!r:.100}.")
    names = list(label_names)
    for i, name in enumerate(names):
        if not isinstance(name, str) or not name:
            raise ValueError(f"{owner}: label_names[{i}] is {name!r:.60}; class names must be "
                             "non-empty strings.")
    if len(names) != num_classes:
        raise ValueError(f"{owner}: label_names has {len(names)} names ({names!r:.200}) but "
                         f"num_classes is {num_classes}; give one name per class, in class-id "
                         "order, or label_names=None.")
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ValueError(f"{owner}: label_names repeats {', '.join(map(repr, repeated))}; each "
                         "class needs a name of its own.")
    return tuple(str(name) for name in names)
