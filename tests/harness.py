"""The shared checks every keras_bert layer and model goes through (as keras-hub's
``TestCase.run_layer_test``): config round trip, ``.keras`` round trip with identical outputs,
and mixed precision (compute in bfloat16, variables in float32, outputs close to float32).

    from tests.harness import check_layer
    check_layer(Pooler(hidden_size=8), np.random.rand(2, 3, 8).astype("float32"))

`check_layer` builds the layer on ``inputs`` (a tensor, or a dict of them, as its ``call``
takes), then:

1. ``type(layer).from_config(layer.get_config())`` gives an equal config (JSON-serialisable);
2. a functional model around the layer, saved to ``.keras`` and loaded, gives outputs equal
   to the original's (``atol``);
3. the layer rebuilt with ``dtype="mixed_bfloat16"`` and the same weights keeps float32
   variables, reports the policy, and its float outputs are within ``bf16_atol`` of float32.
"""

import json
import os
import tempfile

import keras
import numpy as np
import tensorflow as tf


def _to_numpy(x):
    return tf.nest.map_structure(
        lambda t: np.asarray(keras.ops.convert_to_numpy(keras.ops.cast(t, "float32"))
                             if keras.ops.is_tensor(t) or isinstance(t, np.ndarray) else t),
        x)


def _assert_close(a, b, atol, what):
    a, b = _to_numpy(a), _to_numpy(b)
    tf.nest.assert_same_structure(a, b)
    for x, y in zip(tf.nest.flatten(a), tf.nest.flatten(b)):
        np.testing.assert_allclose(x, y, atol=atol, err_msg=what)


def _symbolic(inputs):
    return tf.nest.map_structure(
        lambda x: keras.Input(shape=np.shape(x)[1:], dtype=str(np.asarray(x).dtype),
                              batch_size=None), inputs)


def check_config_round_trip(layer):
    config = layer.get_config()
    json.dumps(config)  # a .keras file stores it as JSON
    again = type(layer).from_config(config)
    assert again.get_config() == config, (config, again.get_config())
    return again


def check_keras_round_trip(layer, inputs, atol=1e-6, call=None):
    """A functional model of ``layer`` on ``inputs``, saved and loaded: same outputs."""
    call = call or (lambda layer, x: layer(x))
    symbolic = _symbolic(inputs)
    model = keras.Model(symbolic, call(layer, symbolic))
    want = model(inputs)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "layer.keras")
        model.save(path)
        loaded = keras.saving.load_model(path)
    _assert_close(loaded(inputs), want, atol, f"{type(layer).__name__} after a .keras round trip")
    return loaded


def check_mixed_precision(layer, inputs, bf16_atol, call=None):
    """``layer`` rebuilt under mixed_bfloat16 with its weights: float32 variables, the policy
    reported, outputs near float32's."""
    call = call or (lambda layer, x: layer(x))
    want = call(layer, inputs)
    config = dict(layer.get_config(), dtype="mixed_bfloat16")
    mixed = type(layer).from_config(config)
    call(mixed, inputs)  # build
    mixed.set_weights(layer.get_weights())
    assert mixed.dtype_policy.name == "mixed_bfloat16"
    assert {v.dtype for v in mixed.weights} <= {"float32"}, [v.dtype for v in mixed.weights]
    _assert_close(call(mixed, inputs), want, bf16_atol,
                  f"{type(layer).__name__} under mixed_bfloat16")
    return mixed


def check_layer(layer, inputs, atol=1e-6, bf16_atol=0.05, mixed_precision=True, call=None):
    """All three checks; ``call(layer, inputs)`` for layers called with more than one
    argument (default: ``layer(inputs)``)."""
    call = call or (lambda layer, x: layer(x))
    call(layer, inputs)  # build
    check_config_round_trip(layer)
    check_keras_round_trip(layer, inputs, atol=atol, call=call)
    if mixed_precision:
        check_mixed_precision(layer, inputs, bf16_atol, call=call)
