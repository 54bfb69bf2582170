"""House rule: optional heavy dependencies are imported where used, never at package import."""

import os
import pathlib
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parent.parent
HEAVY = ("torch", "transformers", "keras_hub", "tensorflow_hub", "grpc", "tensorflow_serving",
         "safetensors", "kagglehub", "kagglesdk", "ai_edge_litert")  # (Keras itself imports huggingface_hub)


def test_import_keras_bert_pulls_no_optional_dependency():
    code = f"import sys, keras_bert; print([m for m in {HEAVY!r} if m in sys.modules])"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "[]"


def test_the_server_package_imports_grpc_only_when_a_server_starts():
    code = ("import sys, keras_bert.serving; "
            "print([m for m in ('grpc', 'tensorflow_serving') if m in sys.modules])")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "[]"
