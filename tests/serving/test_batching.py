"""keras_bert/serving/batching.py: concurrent requests share model calls, each gets its
own rows back, and the limits answer as TF Serving's batching does.

`run` here is a plain numpy function (the Batcher's contract is "dict of arrays in, dict of
arrays out"); the server tests batch the real SavedModels over gRPC and REST.
"""

import threading
import time

import numpy as np
import pytest

from keras_bert.serving import Batcher, BatchingOptions, ServingError

WAIT = 60  # seconds any thread of these tests may take before the test fails


class Recorder:
    """`run` that records each call's batch size and may hold calls until released."""

    def __init__(self, hold=False):
        self.sizes = []
        self.release = threading.Event()
        if not hold:
            self.release.set()
        self.started = threading.Event()

    def __call__(self, inputs):
        self.started.set()
        assert self.release.wait(WAIT)
        self.sizes.append(len(inputs["x"]))
        return {"y": inputs["x"] * 10, "n": np.full(len(inputs["x"]), len(inputs["x"]))}


def _clients(batcher, requests):
    """Submits each request from its own thread at once; returns answers (or errors) in order."""
    answers = [None] * len(requests)
    barrier = threading.Barrier(len(requests))

    def client(i):
        barrier.wait(WAIT)
        try:
            answers[i] = batcher.submit(requests[i], timeout=WAIT)
        except ServingError as error:
            answers[i] = error

    threads = [threading.Thread(target=client, args=(i,)) for i in range(len(requests))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT)
        assert not thread.is_alive(), "a client hung"
    return answers


@pytest.fixture
def batchers():
    made = []

    def make(run, merge=True, **options):
        made.append(Batcher(run, BatchingOptions(**options), merge=merge))
        return made[-1]

    yield make
    for batcher in made:
        batcher.stop()


def test_concurrent_requests_share_one_call_and_get_their_own_rows(batchers):
    run = Recorder()
    batcher = batchers(run, max_batch_size=10, batch_timeout_micros=WAIT * 10**6)
    requests = [{"x": np.arange(i, i + rows)} for i, rows in enumerate([1, 2, 3, 4])]
    answers = _clients(batcher, requests)
    assert run.sizes == [10]  # full: ran at once, without waiting out the timeout
    for request, answer in zip(requests, answers):
        np.testing.assert_array_equal(answer["y"], request["x"] * 10)
        np.testing.assert_array_equal(answer["n"], [10] * len(request["x"]))
    assert (batcher.calls, batcher.rows, dict(batcher.batch_sizes)) == (1, 10, {10: 1})


def test_a_batch_closes_at_the_timeout(batchers):
    run = Recorder()
    batcher = batchers(run, max_batch_size=100, batch_timeout_micros=50_000)
    start = time.monotonic()
    answer = batcher.submit({"x": np.array([7])}, timeout=WAIT)
    assert time.monotonic() - start >= 0.05
    assert run.sizes == [1] and answer["y"].tolist() == [70]


def test_with_timeout_zero_requests_queued_while_busy_share_the_next_call(batchers):
    run = Recorder(hold=True)
    batcher = batchers(run, max_batch_size=100, batch_timeout_micros=0, num_batch_threads=1)
    first = threading.Thread(target=batcher.submit, args=({"x": np.array([0])},),
                             kwargs={"timeout": WAIT})
    first.start()
    assert run.started.wait(WAIT)  # the only batch thread is busy with the first request
    others = []
    threads = [threading.Thread(target=lambda i=i: others.append(
        batcher.submit({"x": np.array([i])}, timeout=WAIT))) for i in range(1, 6)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + WAIT
    while batcher._queued_rows < 5 and time.monotonic() < deadline:
        time.sleep(0.01)
    run.release.set()
    for thread in [first, *threads]:
        thread.join(WAIT)
    assert run.sizes == [1, 5]
    assert sorted(a["y"].item() for a in others) == [10, 20, 30, 40, 50]


def test_requests_of_different_shapes_never_share_a_call(batchers):
    def run(inputs):
        return {"y": inputs["x"].sum(axis=1)}

    batcher = batchers(run, max_batch_size=8, batch_timeout_micros=200_000)
    requests = [{"x": np.ones((1, 3))}, {"x": np.ones((2, 5))}, {"x": np.ones((1, 3))}]
    answers = _clients(batcher, requests)
    assert [a["y"].tolist() for a in answers] == [[3.0], [5.0, 5.0], [3.0]]
    assert batcher.calls == 2 and batcher.batch_sizes == {2: 2}


def _texts(*lengths):
    return {"text": np.array([b"x" * n for n in lengths], dtype=object)}


def _text_lengths(inputs):
    return {"y": np.array([len(t) for t in inputs["text"]]),
            "n": np.full(len(inputs["text"]), len(inputs["text"]))}


@pytest.mark.parametrize("group_by_length", [True, False])
def test_a_batch_of_texts_runs_one_call_per_length_class(batchers, group_by_length):
    # Five requests in one batch (it fills up: no waiting): three of short texts (classes 0
    # and 1; a request counts by its longest text), two of long ones (class 4: 129-256
    # bytes). Grouped: the short ones in one call, the long ones in another, shortest first.
    calls = []

    def run(inputs):
        calls.append(sorted(len(t) for t in inputs["text"]))
        return _text_lengths(inputs)

    batcher = batchers(run, max_batch_size=7, batch_timeout_micros=WAIT * 10**6,
                       group_by_length=group_by_length, num_batch_threads=1)
    requests = [_texts(5, 20), _texts(200), _texts(30), _texts(150, 3), _texts(17)]
    answers = _clients(batcher, requests)
    assert [a["y"].tolist() for a in answers] == [[5, 20], [200], [30], [150, 3], [17]]
    if group_by_length:
        assert calls == [[5, 17, 20, 30], [3, 150, 200]]
        assert [a["n"].tolist()[0] for a in answers] == [4, 3, 4, 3, 4]
        assert (batcher.calls, batcher.rows) == (2, 7)
    else:
        assert calls == [[3, 5, 17, 20, 30, 150, 200]] and batcher.calls == 1


def test_requests_of_ids_are_one_call_whatever_the_grouping(batchers):
    batcher = batchers(Recorder(), max_batch_size=4, batch_timeout_micros=WAIT * 10**6)
    answers = _clients(batcher, [{"x": np.arange(i, i + 2)} for i in range(2)])
    assert batcher.calls == 1 and [a["n"].tolist() for a in answers] == [[4, 4], [4, 4]]


def test_length_classes_double():
    from keras_bert.serving.batching import length_class

    classes = [length_class(_texts(n)) for n in (0, 1, 16, 17, 32, 33, 64, 65, 128, 129)]
    assert classes == [0, 0, 0, 1, 1, 2, 2, 3, 3, 4]
    assert length_class({"a": np.array([b"x" * 40], dtype=object),
                         "b": np.array([b"x" * 3], dtype=object)}) == 2  # the longest input
    assert length_class({"x": np.ones((2, 3))}) is None


def test_a_request_larger_than_max_batch_size_is_refused(batchers):
    batcher = batchers(Recorder(), max_batch_size=4)
    with pytest.raises(ServingError, match=r"Task size 5 is larger than maximum input batch "
                                           r"size 4") as error:
        batcher.submit({"x": np.arange(5)})
    assert error.value.code == "INVALID_ARGUMENT"
    assert batcher.submit({"x": np.arange(4)}, timeout=WAIT)["y"].tolist() == [0, 10, 20, 30]


def test_a_full_queue_answers_unavailable(batchers):
    run = Recorder(hold=True)
    batcher = batchers(run, max_batch_size=2, max_enqueued_batches=1, num_batch_threads=1)
    busy = threading.Thread(target=batcher.submit, args=({"x": np.arange(2)},),
                            kwargs={"timeout": WAIT})
    busy.start()
    assert run.started.wait(WAIT)
    waiting = threading.Thread(target=batcher.submit, args=({"x": np.arange(2)},),
                               kwargs={"timeout": WAIT})
    waiting.start()
    deadline = time.monotonic() + WAIT
    while batcher._queued_rows < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    with pytest.raises(ServingError, match=r"batch scheduling queue .* is full") as error:
        batcher.submit({"x": np.arange(1)})
    assert error.value.code == "UNAVAILABLE"
    run.release.set()
    busy.join(WAIT)
    waiting.join(WAIT)
    assert run.sizes == [2, 2]


def test_allowed_batch_sizes_pad_with_the_first_row_and_drop_the_padding(batchers):
    run = Recorder()
    batcher = batchers(run, max_batch_size=8, allowed_batch_sizes=(4, 8))
    answer = batcher.submit({"x": np.array([5, 6, 7])}, timeout=WAIT)
    assert run.sizes == [4]
    assert answer["y"].tolist() == [50, 60, 70] and answer["n"].tolist() == [4, 4, 4]


def test_an_error_reaches_every_request_of_the_batch(batchers):
    def run(inputs):
        raise ServingError("INVALID_ARGUMENT", "the model refused row 3")

    batcher = batchers(run, max_batch_size=2, batch_timeout_micros=WAIT * 10**6)
    answers = _clients(batcher, [{"x": np.array([1])}, {"x": np.array([2])}])
    assert all(isinstance(a, ServingError) and "row 3" in a.message for a in answers)


def test_an_output_without_the_batch_dimension_cannot_be_batched(batchers):
    batcher = batchers(lambda inputs: {"total": inputs["x"].sum()}, max_batch_size=4)
    with pytest.raises(ServingError, match=r"output 'total' has shape \[\] for a batch of 2 "
                                           r"rows: this signature cannot be batched") as error:
        batcher.submit({"x": np.arange(2)}, timeout=WAIT)
    assert error.value.code == "INTERNAL"


def test_a_request_waits_no_longer_than_its_timeout(batchers):
    run = Recorder(hold=True)
    batcher = batchers(run, max_batch_size=4, num_batch_threads=1)
    with pytest.raises(ServingError, match=r"no answer within 0\.2 s") as error:
        batcher.submit({"x": np.arange(1)}, timeout=0.2)
    assert error.value.code == "DEADLINE_EXCEEDED"
    run.release.set()


def test_stop_answers_queued_requests_unavailable(batchers):
    run = Recorder(hold=True)
    batcher = batchers(run, max_batch_size=1, num_batch_threads=1)
    threading.Thread(target=lambda: batcher.submit({"x": np.arange(1)}, timeout=WAIT),
                     daemon=True).start()
    assert run.started.wait(WAIT)
    errors = []
    queued = threading.Thread(target=lambda: errors.append(
        pytest.raises(ServingError, batcher.submit, {"x": np.arange(1)}, timeout=WAIT)))
    queued.start()
    deadline = time.monotonic() + WAIT
    while batcher._queued_rows < 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    batcher.stop()
    queued.join(WAIT)
    run.release.set()
    assert errors and errors[0].value.code == "UNAVAILABLE"
    with pytest.raises(ServingError, match="has stopped"):
        batcher.submit({"x": np.arange(1)})


@pytest.mark.parametrize("options,match", [
    (dict(max_batch_size=0), r"max_batch_size must be an integer >= 1, got 0"),
    (dict(batch_timeout_micros=-1), r"batch_timeout_micros must be an integer >= 0"),
    (dict(group_by_length="yes"), r"group_by_length must be True or False"),
    (dict(max_batch_size=True), r"max_batch_size must be an integer"),
    (dict(max_batch_size=8, allowed_batch_sizes=(4, 2, 8)), r"positive and increasing"),
])
def test_bad_options_are_named(options, match):
    with pytest.raises(ValueError, match=match):
        BatchingOptions(**options)


# ---- the queue of requests that run alone, deadlines, clients gone, slices, token budget ---
def _wait_queued(batcher, count):
    deadline = time.monotonic() + WAIT
    while len(batcher._queue) < count and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(batcher._queue) >= count


def _queue(batchers, run, threads=1, queued=2):
    return batchers(run, max_batch_size=2**31 - 1, num_batch_threads=threads,
                    max_enqueued_batches=queued, group_by_length=False, merge=False)


def test_without_merging_each_request_runs_alone_and_a_full_queue_is_refused_at_once(batchers):
    run = Recorder(hold=True)
    queue = _queue(batchers, run, threads=1, queued=2)
    running = threading.Thread(target=queue.submit, args=({"x": np.arange(3)},),
                               kwargs={"timeout": WAIT})
    running.start()
    assert run.started.wait(WAIT)
    waiting = [threading.Thread(target=queue.submit, args=({"x": np.arange(i + 1)},),
                                kwargs={"timeout": WAIT}) for i in range(2)]
    for thread in waiting:
        thread.start()
    _wait_queued(queue, 2)
    with pytest.raises(ServingError, match=r"the server is busy: 2 requests wait for .* "
                                           r"\(--max_enqueued_requests=2\)") as error:
        queue.submit({"x": np.arange(1)}, timeout=WAIT)
    assert error.value.code == "RESOURCE_EXHAUSTED"
    run.release.set()
    for thread in [running, *waiting]:
        thread.join(WAIT)
    assert sorted(run.sizes) == [1, 2, 3]  # never merged


def test_a_request_whose_client_left_or_whose_deadline_passed_never_runs(batchers):
    run = Recorder(hold=True)
    queue = _queue(batchers, run, threads=1, queued=8)
    threading.Thread(target=queue.submit, args=({"x": np.arange(1)},),
                     kwargs={"timeout": WAIT}, daemon=True).start()
    assert run.started.wait(WAIT)  # the only thread is busy
    client_here = threading.Event()
    client_here.set()
    errors = {}

    def submit(name, **kwargs):
        try:
            queue.submit({"x": np.array([7])}, **kwargs)
        except ServingError as error:
            errors[name] = error

    gone = threading.Thread(target=submit, args=("gone",),
                            kwargs={"timeout": WAIT, "alive": client_here.is_set})
    late = threading.Thread(target=submit, args=("late",), kwargs={"timeout": 0.05})
    for thread in (gone, late):
        thread.start()
    late.join(WAIT)  # its deadline passed while it waited: answered at its deadline
    client_here.clear()  # the other client hangs up
    run.release.set()
    gone.join(WAIT)
    assert errors["late"].code == "DEADLINE_EXCEEDED"
    assert errors["gone"].code == "CANCELLED" and "the client has gone" in errors["gone"].message
    assert run.sizes == [1]  # neither ran: only the first request was computed
    assert queue.dropped == 2


def test_a_full_queue_first_drops_the_requests_nobody_waits_for(batchers):
    run = Recorder(hold=True)
    queue = _queue(batchers, run, threads=1, queued=1)
    threading.Thread(target=queue.submit, args=({"x": np.arange(1)},),
                     kwargs={"timeout": WAIT}, daemon=True).start()
    assert run.started.wait(WAIT)
    here = threading.Event()
    here.set()
    threading.Thread(target=lambda: pytest.raises(ServingError, queue.submit,
                                                  {"x": np.arange(2)}, timeout=WAIT,
                                                  alive=here.is_set), daemon=True).start()
    _wait_queued(queue, 1)
    here.clear()  # its client left: its place is free for the next request
    answer = []
    served = threading.Thread(target=lambda: answer.append(
        queue.submit({"x": np.arange(4)}, timeout=WAIT)))
    served.start()
    _wait_queued(queue, 1)
    run.release.set()
    served.join(WAIT)
    assert answer and answer[0]["n"].tolist() == [4] * 4
    assert 2 not in run.sizes


def test_a_long_request_runs_in_slices_and_stops_once_nobody_waits(batchers):
    from keras_bert.serving.batching import SLICE_ROWS

    calls, here, leaving = [], threading.Event(), threading.Event()
    here.set()

    def run(inputs):
        calls.append(len(inputs["x"]))
        if leaving.is_set() and len(calls) == 2:
            here.clear()  # the client leaves during the second slice
        return {"y": inputs["x"] * 10}

    queue = _queue(batchers, run)
    whole = queue.submit({"x": np.arange(3 * SLICE_ROWS + 5)}, timeout=WAIT)
    assert calls == [SLICE_ROWS] * 3 + [5]
    assert whole["y"].tolist() == (np.arange(3 * SLICE_ROWS + 5) * 10).tolist()
    calls.clear()
    leaving.set()
    with pytest.raises(ServingError) as error:
        queue.submit({"x": np.arange(10 * SLICE_ROWS)}, timeout=WAIT, alive=here.is_set)
    assert error.value.code == "CANCELLED"
    assert calls == [SLICE_ROWS] * 2  # stopped after the slice the client left in


def test_a_token_budget_closes_a_batch_before_it_passes(batchers):
    from keras_bert.serving.batching import estimated_tokens

    calls, release = [], threading.Event()

    def run(inputs):
        calls.append(len(inputs["text"]))
        assert release.wait(WAIT)
        return _text_lengths(inputs)

    # Texts of 38 bytes: 11 tokens each by the estimate; a budget of 40 tokens takes 3 rows
    # (4 would be 44), while max_batch_size would take 8.
    assert estimated_tokens(_texts(38)) == 11
    batcher = batchers(run, max_batch_size=8, max_batch_tokens=40, group_by_length=False,
                       num_batch_threads=1)
    first = threading.Thread(target=batcher.submit, args=(_texts(38),), kwargs={"timeout": WAIT})
    first.start()
    deadline = time.monotonic() + WAIT
    while not calls and time.monotonic() < deadline:  # the only thread is busy with it
        time.sleep(0.01)
    answers = []
    threads = [threading.Thread(target=lambda: answers.append(
        batcher.submit(_texts(38), timeout=WAIT))) for _ in range(6)]
    for thread in threads:
        thread.start()
    while batcher._queued_rows < 6 and time.monotonic() < deadline:
        time.sleep(0.01)
    release.set()
    for thread in [first, *threads]:
        thread.join(WAIT)
    assert calls == [1, 3, 3]  # the six queued ones: two batches, closed by the budget
    assert [a["y"].tolist() for a in answers] == [[38]] * 6
    with pytest.raises(ValueError, match=r"max_batch_tokens must be an integer >= 0"):
        BatchingOptions(max_batch_tokens=-1)
