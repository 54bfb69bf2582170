"""examples/question_answering.py at a tiny size: hand-made SQuAD data with right offsets,
the held-out questions answered and scored, nothing on stderr."""

import json
import pathlib
import subprocess
import sys

from tests.examples.tiny_preset import write_tiny_preset

REPO = pathlib.Path(__file__).resolve().parents[2]
DATA = REPO / "examples" / "data"


def test_hand_made_answers_sit_at_their_offsets():
    for name, count in (("tiny_squad_train.json", 16), ("tiny_squad_dev.json", 8)):
        data = json.loads((DATA / name).read_text())
        questions = 0
        for article in data["data"]:
            for paragraph in article["paragraphs"]:
                for qa in paragraph["qas"]:
                    answer = qa["answers"][0]
                    start = answer["answer_start"]
                    assert paragraph["context"][start:start + len(answer["text"])] == \
                        answer["text"], qa["id"]
                    questions += 1
        assert questions == count


def test_runs_and_scores_the_held_out_questions(tmp_path):
    preset = write_tiny_preset(tmp_path / "preset")
    result = subprocess.run(
        [sys.executable, str(REPO / "examples" / "question_answering.py"), f"--preset={preset}",
         "--epochs=1", "--seq_length=64", f"--model_dir={tmp_path / 'run'}"],
        cwd=REPO, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stderr == ""
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"fine-tuned {preset!r} on 16 questions")
    assert "held-out questions: exact match " in lines[0] and ", F1 " in lines[0]
    assert len(lines) == 9 and all(" -> " in line for line in lines[1:])
    assert sorted(json.loads((tmp_path / "run" / "predictions.json").read_text())) == sorted(
        f"p{p}q{q}" for p in range(4) for q in (4, 5))
