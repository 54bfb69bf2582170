"""Runs code in a fresh Python that can import tensorflow and tensorflow_text but not
keras_bert, as a TF Serving or TF Hub user loads an export without our package."""

import json
import os
import subprocess
import sys
import textwrap

# Any `import keras_bert` in the child raises ImportError (a None entry in sys.modules), even
# though the environment has it installed (editable); the child checks it at the end.
PROLOGUE = """
import sys
sys.modules["keras_bert"] = None
import json
import numpy as np
import tensorflow as tf
"""

EPILOGUE = """
loaded = sorted(m for m, v in sys.modules.items() if m.split(".")[0] == "keras_bert" and v)
assert not loaded, loaded
try:
    import keras_bert
except ImportError:
    pass
else:
    raise AssertionError("keras_bert was importable in the fresh process")
print("FRESH-PROCESS-OK")
"""


def run(code, cwd, timeout=300, python=None, **values):
    """Runs ``code`` (after `PROLOGUE`; ``values`` as JSON in the variable ``VALUES``) in a
    fresh interpreter started in ``cwd`` (not the repository); returns its stdout. Fails the
    test with the child's stderr when it does not finish cleanly. ``python``: another
    interpreter (e.g. one with an older TensorFlow), by default this one."""
    script = (PROLOGUE + f"VALUES = json.loads({json.dumps(json.dumps(values))})\n"
              + textwrap.dedent(code) + EPILOGUE)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    result = subprocess.run([python or sys.executable, "-I", "-c", script], cwd=cwd, env=env,
                            capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0 and "FRESH-PROCESS-OK" in result.stdout, (
        f"fresh process failed ({result.returncode}):\n{result.stderr[-4000:]}")
    return result.stdout
