"""Selects Keras 3's TensorFlow backend before Keras is imported.

keras_bert is built on TensorFlow ops (tensorflow-text, tf.distribute, SavedModel), so it
runs on the TensorFlow backend only. When ``KERAS_BACKEND`` is unset we set it; when it names
another backend we refuse with a clear message instead of failing deep inside a layer.
"""

import os
import sys

_BACKEND = "tensorflow"


class BackendError(ImportError):
    """Raised when Keras is configured for a backend other than TensorFlow."""


def _select_tensorflow_backend():
    requested = os.environ.get("KERAS_BACKEND")
    if requested is None:
        if "keras" not in sys.modules:
            os.environ["KERAS_BACKEND"] = _BACKEND
    elif requested != _BACKEND:
        raise BackendError(
            f"keras_bert needs Keras 3 on the TensorFlow backend, but KERAS_BACKEND="
            f"{requested!r}. Unset KERAS_BACKEND or set KERAS_BACKEND=tensorflow."
        )
    import keras  # noqa: E402  (must follow the environment set-up above)

    active = keras.config.backend()
    if active != _BACKEND:
        raise BackendError(
            f"keras_bert needs Keras 3 on the TensorFlow backend, but Keras was already "
            f"imported with the {active!r} backend (from ~/.keras/keras.json or an earlier "
            f"import). Set KERAS_BACKEND=tensorflow before importing keras."
        )


_select_tensorflow_backend()
