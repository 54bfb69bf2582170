"""examples/sentence_pair.py: pairs from files through BertClassifier, at a tiny size.

Both command lines run in one fresh process (`tests.tool_runs.run_cases`: one start-up), each
with its own exit status, stdout and stderr."""

import pytest

from tests import tool_runs
from tests.examples.tiny_preset import write_tiny_preset


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """(preset, folder, the fine-tuning run, the run on a file without text_a)."""
    tmp_path = tmp_path_factory.mktemp("sentence_pair")
    preset = write_tiny_preset(tmp_path / "preset")
    rows = ["text_a\ttext_b\tlabel"] + [
        "a great movie\tgood fun\tsame", "a dull movie\tbad plot\tsame",
        "a great movie\tbad plot\tdifferent", "good fun\ta dull movie\tdifferent"] * 4
    (tmp_path / "pairs.tsv").write_text("\n".join(rows) + "\n")
    (tmp_path / "no_text_a.tsv").write_text("first\tlabel\na\t1\n")
    startup, (fine_tuned, missing) = tool_runs.run_cases("examples/sentence_pair.py", [
        [f"--preset={preset}", f"--train_file={tmp_path / 'pairs.tsv'}", "--epochs=1",
         "--seq_length=16"],
        [f"--preset={preset}", f"--train_file={tmp_path / 'no_text_a.tsv'}"],
    ])
    assert startup.stdout == startup.stderr == ""  # importing the example prints nothing
    return preset, tmp_path, fine_tuned, missing


def test_fine_tunes_on_pairs_from_files(runs):
    preset, _, result, _ = runs
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert lines[0] == f"fine-tuning {preset!r} on 16 sentence pairs (2 classes); scoring 16"
    assert any(line.startswith("test accuracy ") for line in lines)


def test_missing_column_is_named(runs):
    _, tmp_path, _, result = runs
    assert result.returncode == 1
    assert result.stderr.startswith("sentence_pair.py: ") and "text_a" in result.stderr
    assert str(tmp_path / "no_text_a.tsv") in result.stderr
