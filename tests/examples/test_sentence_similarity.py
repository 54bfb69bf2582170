"""examples/sentence_similarity.py: a clean table on stdout, nothing on stderr."""

import pathlib
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]


def _demo(*flags):
    return subprocess.run([sys.executable, str(REPO / "examples" / "sentence_similarity.py"), *flags],
                          cwd=REPO, capture_output=True, text=True, timeout=300)


def test_demo_prints_the_similarity_table_and_nothing_else():
    result = _demo()
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stderr == ""  # no TensorFlow start-up, CUDA or oneDNN lines
    lines = result.stdout.splitlines()
    assert lines[0].startswith("keras_bert ") and lines[0].endswith(
        ": preset 'minilm_l6', 5 sentences -> embeddings of size 384")
    rows = [line for line in lines if line.startswith("[")]
    assert len(rows) == 5
    table = [[float(v) for v in row.split()[-5:]] for row in rows]
    assert all(table[i][i] == 1.0 for i in range(5))
    assert table[0][1] > 0.5 and table[2][3] > 0.5  # guitar ~ instrument, movie ~ film
    assert max(table[0][2:]) < 0.2  # guitar is not about films or stocks


def test_unknown_preset_is_one_line_error():
    result = _demo("--preset=nonexistent")
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.startswith("sentence_similarity.py: Unknown preset 'nonexistent'. Known presets: ")
    assert len(result.stderr.splitlines()) == 1, result.stderr[-3000:]
