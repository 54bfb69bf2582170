"""What the task heads share: the dtype of their last layer and the check of class-id labels.

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
