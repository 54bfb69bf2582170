"""What the CPU serving benchmarks (benchmarks/serve_cpu.py, embed_cpu.py) share: their flags
and start-up, the CPU they report, their contenders built and warmed up, and the timing of
the runners, ``texts (a list of str) -> numpy [len(texts), ...]``, on batches and on single
texts, interleaved so that a loaded machine hurts every runner alike; the directory their
exports go in."""

import contextlib
import os
import statistics
import sys
import tempfile
import time
import warnings

import numpy as np
from absl import flags, logging

from benchmarks.common import harness

FLAGS = flags.FLAGS


def define_flags(contenders):
    """The flags both scripts take (batch size, lengths, rounds, texts, threads) and
    ``--contenders``: names of the module ``contenders``' ``ALL``, all by default."""
    harness.define_flags(batch_size=32, seq_length=128, rounds=3, max_texts=0,
                         latency_texts=200, latency_block=25, threads=0)
    flags.DEFINE_list("contenders", list(contenders.ALL),
                      f"Which to run, of: {', '.join(contenders.ALL)}.")


def start(script, contenders):
    """Before anything is built: every contender asked for is known and has its packages,
    or the run stops (exit status 1, one line naming what to install); then keras_bert is
    imported (TensorFlow without its C++ start-up lines) and the peers' logs are quieted
    (ONNX Runtime's quantizer logs every tensor; the torch exporter, Keras' quantize and
    transformers warn about what the scripts do on purpose)."""
    if not FLAGS.contenders:
        sys.exit(f"{script}: --contenders is empty; choose from {', '.join(contenders.ALL)}")
    harness.require_contenders("--contenders", FLAGS.contenders, contenders.NEEDS)
    import keras_bert  # noqa: F401

    logging.set_verbosity(logging.ERROR)
    warnings.simplefilter("ignore")


def measure(contenders, setup, texts):
    """Builds the contenders asked for and times them (`time_batched`, `time_single` with
    the flags' sizes): ``(runners, texts/s per runner, batch-1 latencies, batched outputs,
    seconds each took to build)``."""
    runners, seconds = build_runners(FLAGS.contenders, contenders.ALL, setup, texts,
                                     FLAGS.batch_size)
    rates, outputs = time_batched(runners, texts, FLAGS.batch_size, FLAGS.rounds)
    latency = time_single(runners, texts[:FLAGS.latency_texts], FLAGS.latency_block)
    return runners, rates, latency, outputs, seconds


@contextlib.contextmanager
def scratch_dir(script):
    """A new local directory for ``script``'s exports (~0.5 GB a full run), removed at the end
    however the run ends; one left by a killed run is swept by the next
    (`keras_bert.tempdirs`)."""
    from keras_bert import storage

    prefix = f".tmp-keras_bert_{os.path.splitext(script)[0]}_"
    with storage.staging_dir(tempfile.gettempdir(), prefix=prefix) as path:
        yield path


def print_cpu(threads):
    """Prints the CPU, its int8-relevant flags and the threads per runtime; returns the
    CPU's name and flags (for the JSON summary)."""
    cpu, have = harness.cpu_description()
    print(f"CPU: {cpu}; {os.cpu_count()} logical CPUs; threads per runtime: {threads}")
    print("CPU flags: " + ", ".join(f"{name} {'yes' if on else 'no'}"
                                     for name, on in have.items()))
    return cpu, have


def build_runners(names, table, setup, texts, batch_size):
    """The runner of each contender of ``names`` (``table[name](setup)``), each called once
    on a batch and on one text (first calls: tracing, delegates); and the seconds each took
    to build."""
    from keras_bert import backend

    runners, seconds = {}, {}
    for name in names:
        start = time.perf_counter()
        with backend.quiet_native_stderr():  # TF's and ORT's one-off notices
            runners[name] = table[name](setup)
        seconds[name] = time.perf_counter() - start
        print(f"ready: {name} ({seconds[name]:.1f} s)", flush=True)
    with backend.quiet_native_stderr():  # first calls: LiteRT's delegate notice
        for run in runners.values():
            run(texts[:batch_size])
            run(texts[:1])
    return runners, seconds


def batches(texts, size):
    return [texts[i:i + size] for i in range(0, len(texts), size)]


def time_batched(runners, texts, batch_size, rounds):
    """texts/s of each runner over ``texts`` in batches of ``batch_size``, the best of
    ``rounds`` interleaved rounds (each runs every runner, the order reversed every round),
    after an untimed warm-up of three batches each; and each runner's outputs (concatenated)
    from its last round."""
    chunks = batches(texts, batch_size)
    best = {name: 0.0 for name in runners}
    outputs = {}
    order = list(runners)
    for name in order:  # warm-up: traces, compiles, first allocations
        for chunk in chunks[:3]:
            runners[name](chunk)
    for _ in range(rounds):
        order.reverse()
        for name in order:
            run = runners[name]
            outs = []
            start = time.perf_counter()
            for chunk in chunks:
                outs.append(run(chunk))
            seconds = time.perf_counter() - start
            best[name] = max(best[name], len(texts) / seconds)
            outputs[name] = np.concatenate(outs, axis=0)
    return best, outputs


def time_single(runners, texts, block):
    """Median milliseconds of one text per call. The texts go in blocks of ``block``: each
    runner runs a block in turn (the order reversed every block), after one untimed call, so
    that every timed call follows a call of the same runtime, as on a server, while load
    drifts evenly over all of them."""
    if block < 1:
        raise SystemExit(f"--latency_block must be at least 1, got {block}.")
    times = {name: [] for name in runners}
    order = list(runners)
    for i, chunk in enumerate(batches(texts, block)):
        for name in (order if i % 2 else reversed(order)):
            if block > 1:
                runners[name]([chunk[0]])
            for text in chunk:
                start = time.perf_counter()
                runners[name]([text])
                times[name].append((time.perf_counter() - start) * 1e3)
    return {name: statistics.median(t) for name, t in times.items()}


def target_line(label, value, bar, higher=True):
    """One line of a script's targets: ``value`` against its ``bar`` (at least it, or with
    ``higher=False`` at most), met or not; "not measured" for None."""
    if value is None:
        return f"  {label}: not measured"
    met = value >= bar if higher else value <= bar
    return f"  {label}: {value} ({'met' if met else 'not met'}; bar {bar})"
