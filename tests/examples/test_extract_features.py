"""examples/extract_features.py: Google's JSON-lines format, pairs, clear errors."""

import json

import pytest

from tests import tool_runs
from tests.examples.tiny_preset import write_tiny_preset

SCRIPT = "examples/extract_features.py"


@pytest.fixture(scope="module")
def preset(tmp_path_factory):
    return write_tiny_preset(tmp_path_factory.mktemp("tiny") / "preset")


def test_writes_one_record_per_line(preset, tmp_path):
    (tmp_path / "in.txt").write_text("the cat sat\na great movie ||| good fun\n")
    out = tmp_path / "features.jsonl"
    result = tool_runs.run(SCRIPT, f"--input_file={tmp_path / 'in.txt'}",
                           f"--output_file={out}", f"--preset={preset}", "--layers=-1,-2",
                           "--seq_length=16")
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stderr == ""
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["linex_index"] for r in records] == [0, 1]
    assert [f["token"] for f in records[1]["features"]] == [
        "[CLS]", "a", "great", "movie", "[SEP]", "good", "fun", "[SEP]"]
    layers = records[0]["features"][0]["layers"]
    assert [layer["index"] for layer in layers] == [-1, -2] and len(layers[0]["values"]) == 16


def test_empty_line_and_bad_layers_are_named(preset, tmp_path):
    # Both command lines in one process (tests/tool_runs.py), each with its own exit status
    # and stderr.
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "in.txt").write_text("the cat\n\n")
    (tmp_path / "in.txt").write_text("the cat\n")
    startup, (empty, bad_layers) = tool_runs.run_cases(SCRIPT, [
        [f"--input_file={tmp_path / 'empty' / 'in.txt'}", f"--output_file={tmp_path / 'o'}",
         f"--preset={preset}"],
        [f"--input_file={tmp_path / 'in.txt'}", f"--output_file={tmp_path / 'o'}",
         f"--preset={preset}", "--layers=-5"],
    ])
    assert startup.stdout == startup.stderr == ""
    assert empty.returncode == 1
    assert empty.stderr.strip() == (f"extract_features.py: {tmp_path / 'empty' / 'in.txt'} "
                                    "line 2: empty; give one input a line")
    assert bad_layers.returncode == 1 and "layers must be indices" in bad_layers.stderr
    assert not (tmp_path / "o").exists() and not (tmp_path / "o.tmp").exists()
