"""examples/wikipedia_retrieval.py at a tiny size: the real Wikipedia pairs (the dump already in
the cache folder, as a first run leaves it), a tiny random model, a few steps; the metrics
are computed before and after (the gain of a real run is in docs/embeddings.md, not here).

Both command lines run in one fresh process (`tests.tool_runs.run_cases`)."""

import json
import shutil

import pytest

from keras_bert.data import wikipedia_pairs
from tests import tool_runs
from tests.examples.tiny_preset import write_tiny_preset
from tests.text.corpus import wiki_dump_path


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("wikipedia_retrieval")
    preset = write_tiny_preset(tmp_path / "preset")
    cache = tmp_path / "cache"
    cache.mkdir()
    shutil.copy(wiki_dump_path(), cache / wikipedia_pairs.DUMP)
    startup, cases = tool_runs.run_cases("examples/wikipedia_retrieval.py", [
        [f"--preset={preset}", f"--cache_dir={cache}", "--max_train_pairs=8",
         "--max_test_pairs=12", "--batch_size=4", "--seq_length=16"],
        [f"--preset={tmp_path / 'missing'}", f"--cache_dir={cache}"],
    ])
    assert startup.stdout == startup.stderr == ""  # importing the example prints nothing
    return preset, cases


def test_scores_before_and_after_fine_tuning(runs):
    preset, (result, _) = runs
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert lines[0] == f"{preset!r}: 8 training pairs; 12 test queries search 12 passages"
    assert any(line.startswith("fine-tuned: 2 steps in ") for line in lines)
    figures = json.loads(lines[-1])
    assert figures["steps"] == 2 and figures["seq_length"] == 16
    assert figures["test_queries"] == figures["corpus"] == 12
    for when in ("before", "after"):
        assert sorted(figures[when]) == ["mrr@10", "ndcg@10", "recall@1", "recall@10"]
        assert all(0 <= value <= 1 for value in figures[when].values())
        assert 0 < figures[when]["recall@10"]  # 12 passages: 10 of them are in the top 10
    assert "TruncationWarning" not in result.stderr  # long passages are cut on purpose


def test_a_missing_preset_is_one_line(runs):
    _, (_, result) = runs
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.startswith("wikipedia_retrieval.py: ")
    assert len(result.stderr.splitlines()) == 1, result.stderr[-3000:]
