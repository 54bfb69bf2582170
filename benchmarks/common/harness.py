"""What every benchmark script does the same way: its start, its common flags, its last line.

A script starts with the lines that put the repository root on the import path in place of
``benchmarks/`` (``benchmarks/tokenize.py`` would shadow the standard library's `tokenize`,
which inspect, linecache and absl import), then calls `start` before TensorFlow is imported:

    import os as _os, sys as _sys  # noqa: E401
    _here = _os.path.dirname(_os.path.abspath(__file__))
    _sys.path[:] = [_os.path.dirname(_here)] + [
        p for p in _sys.path if _os.path.abspath(p or _os.curdir) != _here]
    from benchmarks.common import harness  # noqa: E402
    harness.start()

`define_flags` defines the flags the scripts share (batch size, lengths, timed rounds,
precisions, XLA, peers) with one help text each; `print_summary` prints the JSON object that
is every script's last line; `run` runs ``main`` with absl.
"""

import json
import os
import pathlib

from absl import app, flags

flags.disclaim_key_flags()  # the flags defined here are the script's: its --help lists them

REPO = pathlib.Path(__file__).resolve().parents[2]

# The flags several scripts have: help text of each (a script gives the default).
HELP = {
    "batch_size": "Sequences per step.",
    "seq_length": "Tokens per sequence.",
    "max_predictions_per_seq": "Masked positions per sequence.",
    "num_layers": "Transformer blocks (12 = BERT-base).",
    "steps": "Steps per timed round.",
    "warmup": "Untimed steps before timing (after tracing/compiling).",
    "rounds": "Interleaved timed rounds per model; the best one counts (other processes can "
              "only slow a round down, so the best is the fairest).",
    "precisions": "Compute precisions to run: fp32, mixed_bfloat16 (encoder.py also "
                  "mixed_float16).",
    "xla": "jit_compile settings for the Keras models: on, off.",
    "peers": "Peers to measure: keras_hub, hf_torch (encoder.py also torch_compile).",
}


def start(log_level="3", override=False):
    """Sets what must be set before TensorFlow is imported: ``TF_CPP_MIN_LOG_LEVEL``
    (``log_level``; unless the caller set one, or whatever it set with ``override``) so that
    TensorFlow's C++ lines do not cut the table, and ``TF_ENABLE_ONEDNN_OPTS=1`` (the default
    on x86; said so, TensorFlow does not print that it is on)."""
    if override:
        os.environ["TF_CPP_MIN_LOG_LEVEL"] = log_level
    else:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", log_level)
    os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")


def define_flags(help=None, flag_values=flags.FLAGS, **defaults):
    """Defines the shared flags named in ``defaults`` with those defaults: a list default
    makes a comma-list flag, an int an integer flag. ``help`` overrides the help of some."""
    help = dict(HELP, **(help or {}))
    for name, default in defaults.items():
        if name not in HELP:
            raise ValueError(f"{name!r} is not a shared benchmark flag: {sorted(HELP)}")
        if isinstance(default, (list, tuple)):
            flags.DEFINE_list(name, list(default), help[name], flag_values=flag_values)
        elif isinstance(default, bool) or not isinstance(default, int):
            raise TypeError(f"--{name}: a list or an integer default, got {default!r}")
        else:
            flags.DEFINE_integer(name, default, help[name], flag_values=flag_values)


def print_summary(summary):
    """Prints ``summary`` as one JSON line: the last line every benchmark prints."""
    print(json.dumps(summary), flush=True)


def run(main):
    """Parses the flags and runs ``main(argv)`` (absl's ``app.run``)."""
    app.run(main)
