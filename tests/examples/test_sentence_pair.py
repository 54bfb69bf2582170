"""examples/sentence_pair.py: pairs from files through BertClassifier, at a tiny size."""

import pathlib
import subprocess
import sys

from tests.examples.tiny_preset import write_tiny_preset

REPO = pathlib.Path(__file__).resolve().parents[2]


def test_fine_tunes_on_pairs_from_files(tmp_path):
    preset = write_tiny_preset(tmp_path / "preset")
    rows = ["text_a\ttext_b\tlabel"] + [
        "a great movie\tgood fun\tsame", "a dull movie\tbad plot\tsame",
        "a great movie\tbad plot\tdifferent", "good fun\ta dull movie\tdifferent"] * 4
    (tmp_path / "pairs.tsv").write_text("\n".join(rows) + "\n")
    result = subprocess.run(
        [sys.executable, str(REPO / "examples" / "sentence_pair.py"), f"--preset={preset}",
         f"--train_file={tmp_path / 'pairs.tsv'}", "--epochs=1", "--seq_length=16"],
        cwd=REPO, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert lines[0] == f"fine-tuning {preset!r} on 16 sentence pairs (2 classes); scoring 16"
    assert any(line.startswith("test accuracy ") for line in lines)


def test_missing_column_is_named(tmp_path):
    preset = write_tiny_preset(tmp_path / "preset")
    (tmp_path / "pairs.tsv").write_text("first\tlabel\na\t1\n")
    result = subprocess.run(
        [sys.executable, str(REPO / "examples" / "sentence_pair.py"), f"--preset={preset}",
         f"--train_file={tmp_path / 'pairs.tsv'}"],
        cwd=REPO, capture_output=True, text=True, timeout=300)
    assert result.returncode == 1
    assert result.stderr.startswith("sentence_pair.py: ") and "text_a" in result.stderr
    assert str(tmp_path / "pairs.tsv") in result.stderr
