"""examples/extract_features.py: Google's JSON-lines format, pairs, clear errors."""

import json
import pathlib
import subprocess
import sys

from tests.examples.tiny_preset import write_tiny_preset

REPO = pathlib.Path(__file__).resolve().parents[2]


def _run(*flags):
    return subprocess.run([sys.executable, str(REPO / "examples" / "extract_features.py"),
                           *flags], cwd=REPO, capture_output=True, text=True, timeout=300)


def test_writes_one_record_per_line(tmp_path):
    preset = write_tiny_preset(tmp_path / "preset")
    (tmp_path / "in.txt").write_text("the cat sat\na great movie ||| good fun\n")
    out = tmp_path / "features.jsonl"
    result = _run(f"--input_file={tmp_path / 'in.txt'}", f"--output_file={out}",
                  f"--preset={preset}", "--layers=-1,-2", "--seq_length=16")
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stderr == ""
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["linex_index"] for r in records] == [0, 1]
    assert [f["token"] for f in records[1]["features"]] == [
        "[CLS]", "a", "great", "movie", "[SEP]", "good", "fun", "[SEP]"]
    layers = records[0]["features"][0]["layers"]
    assert [layer["index"] for layer in layers] == [-1, -2] and len(layers[0]["values"]) == 16


def test_empty_line_and_bad_layers_are_named(tmp_path):
    preset = write_tiny_preset(tmp_path / "preset")
    (tmp_path / "in.txt").write_text("the cat\n\n")
    result = _run(f"--input_file={tmp_path / 'in.txt'}", f"--output_file={tmp_path / 'o'}",
                  f"--preset={preset}")
    assert result.returncode == 1
    assert result.stderr.strip() == f"extract_features.py: {tmp_path / 'in.txt'} line 2: empty; " \
                                    "give one input a line"
    (tmp_path / "in.txt").write_text("the cat\n")
    result = _run(f"--input_file={tmp_path / 'in.txt'}", f"--output_file={tmp_path / 'o'}",
                  f"--preset={preset}", "--layers=-5")
    assert result.returncode == 1 and "layers must be indices" in result.stderr
    assert not (tmp_path / "o").exists() and not (tmp_path / "o.tmp").exists()
