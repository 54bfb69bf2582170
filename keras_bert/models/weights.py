"""Assigning named weights into Keras variables with every check done first."""

import numpy as np


class WeightsMismatchError(ValueError):
    """A weights file whose names or shapes do not fit the model's configuration.

    >>> import keras
    >>> import numpy as np
    >>> variables = {"bert/pooler/dense/bias": keras.Variable(np.zeros(8, "float32"))}
    >>> try:
    ...     assign(variables, {"bert/pooler/dense/bias": np.zeros(16)}, source="model.ckpt")
    ... except WeightsMismatchError as error:
    ...     print(error)
    model.ckpt: variable bert/pooler/dense/bias has shape (16,) but the config expects (8,).
    """


def assign(variables, weights, source="weights"):
    """Assigns ``weights[name]`` to ``variables[name]`` for every name in ``variables``.

    All names and shapes are checked before anything is assigned, so a bad file leaves the
    model untouched. Errors name the variable, both shapes and ``source``.
    """
    missing = sorted(set(variables) - set(weights))
    if missing:
        shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        raise WeightsMismatchError(f"{source}: missing variable(s) {shown}.")
    arrays = {}
    for name, var in variables.items():
        value = np.asarray(weights[name])
        expected = tuple(var.shape)
        if value.shape != expected:
            hint = ""
            if name.endswith("word_embeddings") and value.ndim == 2 and value.shape[1:] == expected[1:]:
                hint = (f" (the vocabulary has {value.shape[0]} entries but the config says "
                        f"vocab_size={expected[0]})")
            raise WeightsMismatchError(
                f"{source}: variable {name} has shape {value.shape} but the config expects "
                f"{expected}{hint}."
            )
        arrays[name] = value
    for name, var in variables.items():
        var.assign(arrays[name].astype(var.dtype))
