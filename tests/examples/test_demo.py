"""examples/demo.py (what `make demo` runs), with only what `make demo` installs: a short real
fine-tune; what it prints and writes, and that model.keras takes raw strings in a fresh
process after `import keras_bert`."""

import json
import pathlib
import subprocess
import sys

import pytest

from tests.test_makefile import demo_without_test_extras

REPO = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    model_dir = tmp_path_factory.mktemp("demo")
    # With only what `make demo` installs importable (the test extras hidden). seq_length 80
    # holds every review whole (the longest is 79 tokens): none is cut, so no warning. 256
    # of the 1,057 dev and test snippets each: `make demo` scores them all.
    result = subprocess.run(
        demo_without_test_extras(
            "--max_train_examples=256", "--max_eval_examples=256", "--epochs=2",
            "--seq_length=80",
            "--learning_rate=2e-4", "--batch_size=32", f"--model_dir={model_dir}"),
        cwd=REPO, capture_output=True, text=True, timeout=900)
    return result, model_dir


def test_prints_progress_scores_and_predictions_and_nothing_on_stderr(run):
    result, model_dir = run
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stderr == ""  # no TensorFlow start-up, CUDA or oneDNN lines
    lines = result.stdout.splitlines()
    assert lines[0].startswith("keras_bert ") and "'minilm_l6' (L6/H384" in lines[0]
    assert "on 256 movie-review snippets; dev 256, test 256" in lines[0]
    assert any(line.startswith("dev accuracy ") and ", test accuracy " in line for line in lines)
    predictions = [line for line in lines if line.strip().endswith(
        ("stays with you.", "get back.", "worth watching.", "not anything."))]
    assert len(predictions) == 4
    assert lines[-1].startswith(f"Wrote {model_dir}/model.keras and {model_dir}/metrics.json")


def test_metrics_and_a_model_that_learned(run):
    _, model_dir = run
    metrics = json.loads((model_dir / "metrics.json").read_text())
    assert metrics["train_examples"] == 256 and metrics["epochs"] == 2
    # 256 real examples, 2 epochs: well above chance (50%) on 256 test snippets.
    assert metrics["test_accuracy"] > 0.6, metrics
    assert (model_dir / "checkpoints" / "epoch-2.weights.h5").is_file()
    assert any((model_dir / "logs" / "train").iterdir())  # TensorBoard events


def test_model_keras_takes_raw_strings_in_a_fresh_process(run):
    _, model_dir = run
    code = (
        "import sys, keras_bert, keras\n"
        "model = keras.saving.load_model(sys.argv[1])\n"
        "p = keras.ops.softmax(model.predict(['a wonderful, moving film', 'dull and "
        "lifeless'], verbose=0)).numpy()\n"
        "print(type(model).__name__, p.shape)\n")
    result = subprocess.run([sys.executable, "-c", code, str(model_dir / "model.keras")],
                            cwd=REPO, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().splitlines()[-1] == "BertClassifier (2, 2)"


def test_unknown_preset_is_a_one_line_error(tmp_path):
    result = subprocess.run(
        [sys.executable, str(REPO / "examples" / "demo.py"), "--preset=nonexistent",
         f"--model_dir={tmp_path}"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.startswith("demo.py: Unknown preset 'nonexistent'.")
    assert len(result.stderr.splitlines()) == 1, result.stderr[-3000:]
