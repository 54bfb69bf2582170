"""Every benchmark script starts and parses its flags (they are run by hand, not in CI)."""

import pathlib
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
SCRIPTS = sorted((REPO / "benchmarks").glob("*.py"))


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_script_starts(script):
    # Run as a user would, from the repository root: the script's folder is sys.path[0], where
    # benchmarks/tokenize.py would shadow the standard library's tokenize without its guard.
    result = subprocess.run([sys.executable, str(script), "--help"], cwd=REPO,
                            capture_output=True, text=True, timeout=300)
    # absl's --help prints the flags and exits with status 1; a broken start is a traceback.
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    assert "Try --helpfull" in result.stdout, result.stdout[-3000:]
