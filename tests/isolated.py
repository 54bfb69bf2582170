"""Runs Python code in a fresh interpreter, for tests whose failure could be a crash (a signal
would take pytest down with it) or that read what TensorFlow writes to stderr."""

import os
import pathlib
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parent.parent


def run_python(code, timeout=300, env=None):
    """`python -c code` from the repository root, so this checkout's keras_bert is imported.

    Returns the CompletedProcess (text stdout/stderr); `returncode` < 0 means a signal.
    """
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=dict(os.environ, **(env or {})),
    )
