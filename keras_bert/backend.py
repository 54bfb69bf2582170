"""Selects Keras 3's TensorFlow backend before Keras is imported.

keras_bert is built on TensorFlow ops (tensorflow-text, tf.distribute, SavedModel), so it
runs on the TensorFlow backend only. When ``KERAS_BACKEND`` is unset we set it; when it names
another backend we refuse with a clear message instead of failing deep inside a layer.
"""

import contextlib
import logging
import os
import re
import sys
import tempfile

_BACKEND = "tensorflow"

# Informational lines TensorFlow's C++ runtime writes to stderr before absl logging starts
# (TF_CPP_MIN_LOG_LEVEL does not reach them in TF 2.21). Anything else is passed through.
_IMPORT_NOISE = re.compile(
    r"WARNING: All log messages before absl::InitializeLog\(\) is called"
    r"|^[IW]\d{4} [\d:.]+\s+\d+ (port\.cc|cudart_stub\.cc|cpu_feature_guard\.cc|cuda_\w+\.cc)"
    r"|^E\d{4} [\d:.]+\s+\d+ cuda_platform\.cc:\d+\] failed call to cuInit"
    r"|^E\d{4} [\d:.]+\s+\d+ util\.cc:\d+\] oneDNN supports DT_INT64 only"
    r"|^To enable the following instructions:|rebuild TensorFlow with the appropriate compiler"
    r"|^INFO: Created TensorFlow Lite XNNPACK delegate for CPU"
)


class BackendError(ImportError):
    """Raised when Keras is configured for a backend other than TensorFlow.

    Keras on another backend (e.g. ``KERAS_BACKEND=jax``) is refused at ``import keras_bert``;
    ``except ImportError`` catches it as it does a missing dependency:

    >>> from keras_bert.backend import BackendError
    >>> issubclass(BackendError, ImportError)
    True
    """


@contextlib.contextmanager
def quiet_native_stderr(drop=None):
    """Holds back TensorFlow's known C++ notices written to stderr inside the block (start-up,
    oneDNN fallbacks); replays every other line when the block ends. For tools, demos and
    short library steps (a LiteRT conversion). ``drop``: a function that takes the other
    lines (a list) and returns those to replay, for the notices of that step."""
    try:
        fd = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # stderr replaced (e.g. captured): no fd.
        yield
        return
    sys.stderr.flush()
    saved = os.dup(fd)
    with tempfile.TemporaryFile(mode="w+b") as held:
        os.dup2(held.fileno(), fd)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, fd)
            os.close(saved)
            held.seek(0)
            lines = [line for line in held.read().decode("utf-8", "replace").splitlines()
                     if line.strip() and not _IMPORT_NOISE.search(line)]
            for line in drop(lines) if drop is not None else lines:
                print(line, file=sys.stderr)


def _load_tensorflow():
    if os.environ.get("KERAS_BERT_VERBOSE_IMPORT"):
        return
    imported_here = "tensorflow" not in sys.modules
    if imported_here:
        # TensorFlow's C++ logger reads TF_CPP_MIN_LOG_LEVEL once, at its first line, which
        # `import tensorflow` writes: 1 leaves out its INFO lines (XLA's start-up at the first
        # training step, the converters' and loaders' progress); warnings and errors still
        # show. A level the user set is kept. (A program that imported TensorFlow first has
        # its level already: only its own TF_CPP_MIN_LOG_LEVEL, set before, changes it.)
        if not os.environ.get("TF_CPP_MIN_LOG_LEVEL"):
            os.environ["TF_CPP_MIN_LOG_LEVEL"] = "1"
    with quiet_native_stderr():
        import tensorflow as tf

        # The platforms are probed once per process, and on a machine without a GPU driver
        # that logs "failed call to cuInit" (an error line for a CPU machine's normal state):
        # listing the physical devices probes them now, whatever imported TensorFlow first,
        # without starting TensorFlow's context (devices can still be configured after it).
        tf.config.list_physical_devices("GPU")
        # Creates the CPU device: its notices now. A program that must configure the devices
        # first (logical CPU devices, a multi-worker strategy's collective ops: both only
        # before TensorFlow's context starts) sets KERAS_BERT_DEFER_DEVICES=1.
        if imported_here and not os.environ.get("KERAS_BERT_DEFER_DEVICES"):
            tf.config.list_logical_devices("CPU")


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
    # Keras imports matplotlib.pyplot. The first import on a machine builds matplotlib's font
    # cache and logs "generated new fontManager" at INFO, which tools run by absl (root logger
    # at INFO) would print; only that logger, and only when nobody has set its level.
    font_log = logging.getLogger("matplotlib.font_manager")
    if font_log.level == logging.NOTSET:
        font_log.setLevel(logging.WARNING)
    _load_tensorflow()
    import keras  # noqa: E402  (must follow the environment set-up above)

    active = keras.config.backend()
    if active != _BACKEND:
        raise BackendError(
            f"keras_bert needs Keras 3 on the TensorFlow backend, but Keras was already "
            f"imported with the {active!r} backend (from ~/.keras/keras.json or an earlier "
            f"import). Set KERAS_BACKEND=tensorflow before importing keras."
        )


_select_tensorflow_backend()
