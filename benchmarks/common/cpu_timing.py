"""What the CPU serving benchmarks (benchmarks/serve_cpu.py, embed_cpu.py) share: the CPU
they report, their contenders built and warmed up, and the timing of the runners,
``texts (a list of str) -> numpy [len(texts), ...]``, on batches and on single texts,
interleaved so that a loaded machine hurts every runner alike."""

import os
import statistics
import time

import numpy as np

from benchmarks.common import harness


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
