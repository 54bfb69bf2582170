"""Fuzzing the text layers and the encoder in a separate process (tests/fuzz_cases.py).

Random shapes, batch sizes, ranks, dtypes, byte strings and arguments (fixed seeds, 300
cases) for `BertPreprocessor`, `BertPackInputs`, `BertTokenizer`, `MaskedLMMasker` and a
tiny `BertEncoder`, eagerly, in `tf.function` and in `dataset.map`: the process never dies
by a signal, and every case gives a result of the documented shape and values or one of the
documented errors (ValueError, TypeError, tf.errors.InvalidArgumentError) naming the problem.
Before the hardening the first 80 cases already killed the process (SIGSEGV in the packer).
"""

import json

from tests.isolated import run_python

LAYERS = ("BertPreprocessor", "BertPackInputs", "BertTokenizer", "MaskedLMMasker", "BertEncoder")


def test_fuzz_never_crashes_and_only_raises_documented_errors():
    result = run_python("from tests.fuzz_cases import main; main(300, 0)", timeout=600)
    lines = result.stdout.splitlines()
    last_case = next((line for line in reversed(lines) if line.startswith("CASE")), None)
    assert result.returncode == 0, (
        f"the fuzzing process ended with {result.returncode} (negative: a signal) during "
        f"{last_case}:\n{result.stderr[-3000:]}"
    )
    report = json.loads(next(line for line in lines if line.startswith("RESULT "))[7:])
    assert report["bad"] == [], "\n".join(report["bad"])
    assert report["cases"] == 300
    for layer in LAYERS:  # each class both returned results and refused inputs
        kinds = {k.split(": ")[1] for k in report["outcomes"] if k.startswith(layer + ":")}
        assert "result" in kinds and kinds - {"result"}, (layer, report["outcomes"])
