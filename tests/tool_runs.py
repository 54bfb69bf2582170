"""Runs an absl command line (tools/*.py, examples/*.py) as a user runs it, or several of its
command lines in one fresh interpreter.

`run` starts the script in its own process: exit status, stdout and stderr exactly as a user
sees them, TensorFlow's start-up lines included. `run_cases` runs several command lines of
one script in ONE fresh process (one Python and TensorFlow start-up instead of one per
command line): it imports the script once as a module, then for each command line resets
absl's flags (``FLAGS.unparse_flags()``) and calls ``app.run(main, argv=...)``, with file
descriptors 1 and 2 redirected to files, so that each case's stdout and stderr hold what the
process wrote there (C++ and Python alike) while that command line ran. Its exit status is
what the interpreter would have made of it: ``sys.exit("message")`` prints the message to
stderr and gives 1, an exception that escapes prints its traceback and gives 1.

    startup, (bad, good) = run_cases("tools/build_vocab.py",
                                     [["--vocab_size=0", ...], ["--vocab_size=100", ...]])
    assert startup.stderr == ""  # importing the script printed nothing
    assert bad.returncode == 1 and "FATAL Flags parsing error" in bad.stderr

The cases share the process: a case sees what an earlier one left in memory (TensorFlow's
devices, caches, the C++ notices TensorFlow prints once per process), but not its flags, and
each starts as a fresh process would in what it prints from Python (absl logging at INFO unless
its flags say otherwise, Python warnings shown again). Keep at least one `run` per script,
which checks what only a fresh process shows.
"""

import json
import os
import pathlib
import subprocess
import sys
import tempfile

REPO = pathlib.Path(__file__).resolve().parent.parent

# argv: the script, a JSON file of the command lines, where to write the results as JSON.
_DRIVER = r"""
import importlib.util, json, os, sys, tempfile, traceback

script, cases_path, results_path = sys.argv[1:4]
with open(cases_path) as f:
    cases = json.load(f)


def captured(body):
    # Runs body() with fds 1 and 2 going to files: (exit status, stdout, stderr).
    sys.stdout.flush(); sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        os.dup2(out.fileno(), 1); os.dup2(err.fileno(), 2)
        try:
            try:
                body()
                code = 0
            except SystemExit as error:
                code = error.code
                if code is None:
                    code = 0
                elif not isinstance(code, int):
                    print(code, file=sys.stderr)
                    code = 1
            except BaseException:
                traceback.print_exc()
                code = 1
        finally:
            sys.stdout.flush(); sys.stderr.flush()
            os.dup2(saved[0], 1); os.dup2(saved[1], 2)
            os.close(saved[0]); os.close(saved[1])
        texts = []
        for f in (out, err):
            f.seek(0)
            texts.append(f.read().decode("utf-8", "replace"))
    return [code] + texts


sys.argv = [script]
spec = importlib.util.spec_from_file_location("__tool__", script)
tool = importlib.util.module_from_spec(spec)
sys.modules["__tool__"] = tool
results = [captured(lambda: spec.loader.exec_module(tool))]

import warnings

from absl import app, flags


def parse(argv):
    # As app.run's first parse: absl logs at INFO unless --verbosity says otherwise.
    args = app.parse_flags_with_usage(argv)
    if flags.FLAGS["verbosity"].using_default_value:
        flags.FLAGS.verbosity = 0
    return args


def within(context, body):
    # Runs body() inside the context manager the expression `context` makes (None: as is).
    if context is None:
        return body()
    with eval(context):
        return body()


for case in cases:
    argv, context = case["argv"], case["context"]
    flags.FLAGS.unparse_flags()
    warnings._filters_mutated()  # Python warnings already shown are shown again
    warnings.onceregistry.clear()
    sys.argv = [script] + argv
    results.append(captured(lambda: within(context, lambda: app.run(
        tool.main, argv=[script] + argv, flags_parser=parse))))

with open(results_path, "w") as f:
    json.dump(results, f)
"""


def _script(script):
    return str(REPO / script)


def run(script, *flags, timeout=300, env=None, cwd=REPO):
    """``python script flags...`` in its own process, from ``cwd``; the CompletedProcess (text
    stdout and stderr)."""
    return subprocess.run([sys.executable, _script(script), *map(str, flags)], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout,
                          env=None if env is None else dict(os.environ, **env))


def run_cases(script, cases, timeout=600, env=None, cwd=REPO):
    """Runs each command line of ``cases`` (lists of flags) of ``script`` in one fresh process,
    in order. Returns ``(startup, results)``: CompletedProcess objects, ``startup`` for the
    import of the script (its returncode is 0 when the import went through), one result per
    case (returncode, stdout, stderr of that command line). The process itself failing (not a
    case) fails the test with its stderr.

    A case may also be ``(flags, context)``: ``context`` is a Python expression of a context
    manager that command line runs inside, e.g.
    ``"__import__('tensorflow_datasets').testing.mock_data(num_examples=12)"``."""
    cases = [case if isinstance(case, tuple) and len(case) == 2 and isinstance(case[0], list)
             else (list(case), None) for case in cases]
    cases = [{"argv": [str(flag) for flag in flags], "context": context}
             for flags, context in cases]
    with tempfile.TemporaryDirectory() as scratch:
        cases_path = os.path.join(scratch, "cases.json")
        results_path = os.path.join(scratch, "results.json")
        with open(cases_path, "w") as f:
            json.dump(cases, f)
        process = subprocess.run(
            [sys.executable, "-c", _DRIVER, _script(script), cases_path, results_path],
            cwd=cwd, capture_output=True, text=True, timeout=timeout,
            env=None if env is None else dict(os.environ, **env))
        assert process.returncode == 0 and os.path.exists(results_path), (
            f"the driver of {script} failed ({process.returncode}):\n{process.stderr[-4000:]}")
        with open(results_path) as f:
            results = json.load(f)
    startup, *runs = [subprocess.CompletedProcess([script, *case], code, out, err)
                      for case, (code, out, err) in zip([[]] + [c["argv"] for c in cases],
                                                        results)]
    assert startup.returncode == 0, f"importing {script} failed:\n{startup.stderr[-4000:]}"
    return startup, runs
