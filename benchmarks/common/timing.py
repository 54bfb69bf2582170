"""Interleaved timing of the benchmarks' runners (benchmarks/encoder.py, finetune.py,
pretrain.py): every runner is warmed up, then timed rounds alternate who goes first, so a
noisy machine hurts every model alike."""

import time


def interleaved_rates(runs, units_per_step, rounds, steps, warmup, finish=None):
    """Rates of each of ``runs`` (callables doing one step) in every timed round.

    Each run is called ``warmup + 1`` times untimed (the 1: tracing or compiling), then
    ``rounds`` times ``steps`` times, timed, in an order reversed every round. ``finish``
    (optional) takes what a run returns and waits for it (asynchronous frameworks).

    Returns one list per run: ``units_per_step * steps / seconds`` of each round.
    """
    finish = finish or (lambda _: None)
    for run in runs:
        for _ in range(warmup + 1):
            finish(run())
    rates = [[] for _ in runs]
    order = list(enumerate(runs))
    for _ in range(rounds):
        order.reverse()  # alternate who goes first
        for i, run in order:
            start = time.perf_counter()
            for _ in range(steps):
                finish(run())
            rates[i].append(units_per_step * steps / (time.perf_counter() - start))
    return rates
