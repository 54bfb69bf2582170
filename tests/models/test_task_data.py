"""`keras_bert.models.task_data`: labels that are not numbers are named as the user wrote them."""

import numpy as np
import pytest

from keras_bert.checks import TaskInputError
from keras_bert.models.task_data import labels_array


@pytest.mark.parametrize("labels, shown", [
    (["pos", "neg"], "'pos'"),
    (np.array(["pos", "neg"]), "'pos'"),
    ([b"pos", b"neg"], "b'pos'"),
])
def test_string_labels_are_named_as_written(labels, shown):
    with pytest.raises(TaskInputError, match=rf"^y holds the string {shown}, which is not a "
                                             rf"number\.$"):
        labels_array(labels)


def test_a_non_number_among_numbers_is_named():
    with pytest.raises(TaskInputError, match=r"^sample_weight holds \{'label': 1\}, which is "
                                             r"not a number\.$"):
        labels_array([1.0, {"label": 1}], what="sample_weight")


def test_numbers_become_32_bit_arrays():
    assert labels_array([1, 0]).dtype == np.int32
    assert labels_array([0.5, 1.0]).dtype == np.float32
    assert labels_array(None) is None
