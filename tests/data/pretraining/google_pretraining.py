"""google-research/bert's create_pretraining_data.py (PyPI bert-tensorflow==1.0.4), for the tests.

`run_script` runs the script itself, unmodified, in its own process (as a user runs it, and
as the issue measured it: `runpy.run_module(..., run_name="__main__", alter_sys=True)` with
its flags in sys.argv). `functions` loads its functions into this process without its flag
definitions (absl flags are process-wide: the script's `input_file`, `max_seq_length`, ...
would clash with other modules that define them), the rest of its source as it is.
"""

import os
import subprocess
import sys
import types

_RUNNER = """
import runpy, sys
sys.path.insert(0, sys.argv[1])
sys.argv = ["create_pretraining_data.py"] + sys.argv[2:]
runpy.run_module("bert.create_pretraining_data", run_name="__main__", alter_sys=True)
"""


def run_script(google_bert_path, flags, timeout=300):
    """Runs the original script with ``flags`` (a dict); raises with its output on failure."""
    argv = [f"--{name}={value}" for name, value in flags.items()]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    result = subprocess.run([sys.executable, "-c", _RUNNER, str(google_bert_path), *argv],
                            capture_output=True, text=True, timeout=timeout, env=env)
    if result.returncode != 0:
        raise RuntimeError(f"the original script failed:\n{result.stderr[-3000:]}")
    return result


class _NoFlags:
    FLAGS = types.SimpleNamespace()

    def __getattr__(self, name):  # DEFINE_string, DEFINE_bool, ...: nothing
        return lambda *args, **kwargs: None


def functions(google_bert_path):
    """The original module's functions (create_instances_from_document, truncate_seq_pair,
    create_masked_lm_predictions, ...) as a module object."""
    path = os.path.join(google_bert_path, "bert", "create_pretraining_data.py")
    with open(path, encoding="utf-8") as f:
        source = f.read()
    assert "flags = tf.flags\n" in source, "not the bert-tensorflow==1.0.4 script"
    source = source.replace("flags = tf.flags\n", "flags = _NoFlags()\n")
    module = types.ModuleType("google_create_pretraining_data")
    module.__dict__["_NoFlags"] = _NoFlags
    sys.path.insert(0, str(google_bert_path))
    try:
        exec(compile(source, path, "exec"), module.__dict__)  # noqa: S102
    finally:
        sys.path.remove(str(google_bert_path))
    return module
