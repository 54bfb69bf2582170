"""`FlattenChoices` / `UnflattenChoices`: the multiple-choice axis in and out of the batch."""

import keras
import tensorflow as tf

from keras_bert.checks import check_layer_kwargs


@keras.saving.register_keras_serializable(package="keras_bert")
class FlattenChoices(keras.layers.Layer):
    """``[batch, num_choices, seq]`` -> ``[batch * num_choices, seq]``, so that each choice
    goes through the encoder as its own sequence.

    Example:

    >>> import numpy as np
    >>> FlattenChoices()(np.zeros((2, 3, 5), "int32")).shape
    TensorShape([6, 5])
    """

    def call(self, x):
        return tf.reshape(x, tf.concat([[-1], tf.shape(x)[2:]], axis=0))

    def compute_output_shape(self, input_shape):
        batch, choices = input_shape[0], input_shape[1]
        flat = None if batch is None or choices is None else batch * choices
        return (flat,) + tuple(input_shape[2:])


@keras.saving.register_keras_serializable(package="keras_bert")
class UnflattenChoices(keras.layers.Layer):
    """``[batch * num_choices, 1]`` scores -> ``[batch, num_choices]``.

    Example:

    >>> import numpy as np
    >>> UnflattenChoices(3)(np.zeros((6, 1), "float32")).shape
    TensorShape([2, 3])
    """

    def __init__(self, num_choices, **kwargs):
        check_layer_kwargs(self, kwargs)
        super().__init__(**kwargs)
        self.num_choices = int(num_choices)

    def call(self, x):
        return tf.reshape(x, [-1, self.num_choices])

    def compute_output_shape(self, input_shape):
        batch = input_shape[0]
        return (None if batch is None else batch // self.num_choices, self.num_choices)

    def get_config(self):
        config = super().get_config()
        config["num_choices"] = self.num_choices
        return config
