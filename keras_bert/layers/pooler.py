"""`Pooler`: the dense + tanh over the ``[CLS]`` position."""

import keras

from keras_bert.checks import check_layer_kwargs
from keras_bert.layers.dense import Dense


@keras.saving.register_keras_serializable(package="keras_bert")
class Pooler(keras.layers.Layer):
    """Takes the first token of ``[batch, seq, hidden]`` through a tanh dense layer,
    giving BERT's ``pooled_output`` ``[batch, hidden]``.

    Example:

    >>> import numpy as np
    >>> from keras_bert.layers import Pooler
    >>> Pooler(hidden_size=8)(np.ones((2, 3, 8), "float32")).shape
    TensorShape([2, 8])
    """

    def __init__(self, hidden_size, initializer_range=0.02, **kwargs):
        check_layer_kwargs(self, kwargs)
        super().__init__(**kwargs)
        self.hidden_size = hidden_size
        self.initializer_range = initializer_range
        self.dense = Dense(
            hidden_size,
            activation="tanh",
            kernel_initializer=keras.initializers.TruncatedNormal(stddev=initializer_range),
            dtype=self.dtype_policy,
            name="dense",
        )

    def build(self, input_shape):
        self.dense.build((None, self.hidden_size))
        super().build(input_shape)

    def call(self, sequence_output):
        return self.dense(sequence_output[:, 0, :])  # [batch, seq, hidden] -> [batch, hidden]

    def compute_output_shape(self, input_shape):
        return (input_shape[0], self.hidden_size)

    def canonical_variables(self):
        """Variables by their names in Google's checkpoints, relative to ``bert/pooler/``."""
        return {"dense/kernel": self.dense.kernel, "dense/bias": self.dense.bias}

    def get_config(self):
        config = super().get_config()
        config.update({"hidden_size": self.hidden_size, "initializer_range": self.initializer_range})
        return config
