"""What every export's root object shares: a `tf.Module` that holds a Keras model's variables
the way SavedModel and TF Hub's reusable-SavedModel API expect, and flat signature outputs.

A Keras 3 model inside a plain `tf.Module` is invisible to SavedModel (it finds 0 variables),
and tracking the Keras object itself saves every variable twice. So an export's functions
close over the Keras model without tracking it, and the module lists the model's underlying
`tf.Variable`s explicitly (``[v.value for v in model.variables]``, the Dropout layers'
seed-generator states included, which ``training=True`` updates).
"""

import tensorflow as tf

from keras_bert.config import INPUT_NAMES



class Module(tf.Module):
    """A `tf.Module` whose ``variables``, ``trainable_variables`` and
    ``regularization_losses`` are plain attributes (tf.Module makes the first two read-only
    properties), as a TF Hub reusable SavedModel carries them.

    >>> import tensorflow as tf
    >>> module = Module()
    >>> module.variables = module.trainable_variables = [tf.Variable([1.0, 2.0])]
    >>> len(module.variables), len(module.trainable_variables), module.regularization_losses
    (1, 1, ())
    """

    variables = ()
    trainable_variables = ()
    regularization_losses = ()


def attach_variables(module, model):
    """Gives ``module`` the underlying `tf.Variable`s of the Keras ``model``: ``variables``
    (all, in the model's order), ``trainable_variables`` and an empty
    ``regularization_losses`` (BERT has no weight regularizers; AdamW decays instead)."""
    module.variables = [v.value for v in model.variables]
    module.trainable_variables = [v.value for v in model.trainable_variables]
    module.regularization_losses = []
    return module


def packed_specs(shape=(None, None), extra=()):
    """Signature specs of the packed inputs (int32), plus ``extra`` int32 inputs."""
    return {name: tf.TensorSpec(shape, tf.int32, name=name)
            for name in INPUT_NAMES + tuple(extra)}


def float32(outputs):
    """Float outputs as float32 (a mixed-precision model computes in 16 bits)."""
    return tf.nest.map_structure(
        lambda t: tf.cast(t, tf.float32) if t.dtype.is_floating else t, outputs)


def flat(outputs):
    """A dict whose values may be lists (``encoder_outputs``) -> a flat dict of tensors, as
    signatures require: list items become ``<name>_<index>``."""
    out = {}
    for name, value in outputs.items():
        if isinstance(value, (list, tuple)):
            out.update({f"{name}_{i}": t for i, t in enumerate(value)})
        else:
            out[name] = value
    return out
