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

    def make(run, **options):
        made.append(Batcher(run, BatchingOptions(**options)))
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


@pytest.mark.parametrize("group_by_length, calls", [(True, 2), (False, 1)])
def test_text_requests_share_a_call_only_with_texts_of_their_length_class(
        batchers, group_by_length, calls):
    # Five requests queued together: three of short texts (class 0 and 1 mixed within a
    # request count by its longest), two of long ones (class 4: 129-256 bytes).
    batcher = batchers(_text_lengths, max_batch_size=16, batch_timeout_micros=200_000,
                       group_by_length=group_by_length, num_batch_threads=1)
    requests = [_texts(5, 20), _texts(200), _texts(30), _texts(150, 3), _texts(17)]
    answers = _clients(batcher, requests)
    assert [a["y"].tolist() for a in answers] == [[5, 20], [200], [30], [150, 3], [17]]
    assert batcher.calls == calls
    if group_by_length:  # 4 short rows in one call, 3 long ones in the other
        assert [a["n"].tolist()[0] for a in answers] == [4, 3, 4, 3, 4]


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
