"""FlattenChoices / UnflattenChoices: the choice axis into the batch and back; shared checks."""

import numpy as np

from keras_bert.layers.choices import FlattenChoices, UnflattenChoices
from tests.harness import check_layer


def test_flatten_then_unflatten_is_the_identity_on_scores():
    ids = np.arange(2 * 3 * 4, dtype="int32").reshape(2, 3, 4)
    flat = FlattenChoices()(ids).numpy()
    np.testing.assert_array_equal(flat, ids.reshape(6, 4))
    scores = flat[:, :1].astype("float32")
    np.testing.assert_array_equal(UnflattenChoices(3)(scores).numpy(), ids[:, :, 0])
    assert FlattenChoices().compute_output_shape((2, 3, 4)) == (6, 4)
    assert UnflattenChoices(3).compute_output_shape((6, 1)) == (2, 3)


def test_shared_checks():
    check_layer(FlattenChoices(), np.ones((2, 3, 4), "float32"))
    check_layer(UnflattenChoices(3), np.random.rand(6, 1).astype("float32"))
