"""examples/pretrain_mini.py at a tiny size: the real corpus, the mini architecture, the
metrics it prints beside the most-frequent-token baseline, and the curve PNG."""

import json
import pathlib
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]


def test_pretrain_mini_runs_and_draws_its_curve(tmp_path):
    result = subprocess.run(
        ["timeout", "-k", "10", "400", sys.executable, str(REPO / "examples" / "pretrain_mini.py"),
         f"--model_dir={tmp_path}", "--num_train_steps=4", "--train_batch_size=4",
         "--max_seq_length=32", "--max_predictions_per_seq=5", "--steps_per_loop=2",
         "--max_eval_steps=2", "--max_documents=10"],
        cwd=REPO, capture_output=True, text=True, timeout=430)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.startswith("Corpus: ")
    assert "always predicting the most frequent masked token scores" in result.stdout
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert metrics["total_train_steps"] == 4
    assert 0 < metrics["eval_most_frequent_token_accuracy"] < 1
    config = json.loads((tmp_path / "keras_bert.json").read_text())["config"]
    assert (config["num_hidden_layers"], config["hidden_size"], config["vocab_size"]) == (
        4, 256, 30522)
    png = (tmp_path / "pretrain_mini.png").read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 10_000
