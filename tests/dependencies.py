"""Test dependencies are required, never optional: a parity test whose reference package is
missing fails and names it (``pytest.importorskip`` would turn it into a quiet skip)."""

import importlib
import importlib.util

import pytest

# Module -> the pinned distribution that provides it, and where the pin lives.
PACKAGES = {
    "torch": "torch (requirements-hf.txt, the [hf] extra)",
    "transformers": "transformers (requirements-test.txt)",
    "sentence_transformers": "sentence-transformers (requirements-test.txt)",
    "keras_hub": "keras-hub (requirements-keras-hub.txt, the [keras_hub] extra)",
    "tensorflow_hub": "tensorflow-hub (requirements-test.txt)",
    "tf_keras": "tf-keras (requirements-test.txt)",
    "onnxruntime": "onnxruntime (requirements-test.txt)",
    "onnx": "onnx (requirements-test.txt)",
    "huggingface_hub": "huggingface_hub (requirements-hub.txt, the [hub] extra)",
    "kagglehub": "kagglehub (requirements-hub.txt, the [hub] extra)",
    "ai_edge_litert": "ai-edge-litert (requirements-litert.txt, the [litert] extra)",
}


def require(module):
    """Imports ``module``; a missing one fails the test with the package to install."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        pytest.fail(
            f"this test needs {PACKAGES.get(module, module)}, which does not import ({e}); "
            "install the test requirements: make test, or pip install -e '.[test]'",
            pytrace=False,
        )


def require_installed(module):
    """Like `require`, for a module a test uses only in a subprocess (tf_keras must not be
    imported beside Keras 3): fails the test when it is not installed, imports nothing."""
    if importlib.util.find_spec(module) is None:
        pytest.fail(f"this test needs {PACKAGES.get(module, module)}, which is not installed; "
                    "install the test requirements: make test, or pip install -e '.[test]'",
                    pytrace=False)
