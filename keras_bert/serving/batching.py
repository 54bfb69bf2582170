"""Server-side batching as TF Serving's `BasicBatchScheduler` does it.

Requests to one signature of one model version wait in a queue; a batch thread takes the
oldest one and every later one that can join it (same inputs, same non-batch shapes and
dtypes) until the batch holds ``max_batch_size`` rows or ``batch_timeout_micros`` have passed
since the oldest was queued, runs the model once on the concatenation and hands each request
its own rows of the outputs. With the default timeout of 0 a batch is whatever queued up while
the batch threads were busy: no request waits for company that is not there.

One addition to TF Serving's scheduler (``group_by_length``, on by default): a batch of
requests with text inputs is run as one model call per length class of its requests (by
each request's longest text, in UTF-8 bytes: up to 16, 17-32, 33-64, ...), shortest first.
keras_bert's serving signatures pad each call to its longest sequence, so short texts then
cost what short texts cost, instead of what the longest text of the batch costs. Batches
form and close exactly as without it (same queue, size and timeout): no request waits
longer. Requests of ids (no text) run as one call: their sequence length is part of their
shape, which must match anyway.
"""

import collections
import dataclasses
import os
import threading
import time

import numpy as np

from keras_bert.serving.errors import ServingError, invalid


@dataclasses.dataclass(frozen=True)
class BatchingOptions:
    """TF Serving's ``BatchingParameters``, with its defaults.

    Args:
      max_batch_size: most rows in one model call; a request with more is refused.
      batch_timeout_micros: how long the oldest queued request may wait for others.
      max_enqueued_batches: queue bound, in batches of ``max_batch_size`` rows; beyond it
        requests are refused with UNAVAILABLE.
      num_batch_threads: batches run at the same time (default: the CPU count).
      allowed_batch_sizes: if given, each batch is padded (with copies of its first row,
        dropped from the answers) up to the next of these sizes; the last must equal
        ``max_batch_size``.
      group_by_length: run a batch of text requests as one model call per length class
        (`length_class`); keras_bert's addition, not one of TF Serving's parameters.

    Example:

    >>> BatchingOptions(max_batch_size=32, batch_timeout_micros=2000).max_batch_size
    32
    >>> BatchingOptions(max_batch_size=8, allowed_batch_sizes=(2, 4))
    Traceback (most recent call last):
    ...
    ValueError: allowed_batch_sizes must end with max_batch_size=8, got (2, 4)
    """

    max_batch_size: int = 1000
    batch_timeout_micros: int = 0
    max_enqueued_batches: int = 10
    num_batch_threads: int = 0  # 0: os.cpu_count()
    allowed_batch_sizes: tuple = ()
    group_by_length: bool = True

    def __post_init__(self):
        for name, low in (("max_batch_size", 1), ("batch_timeout_micros", 0),
                          ("max_enqueued_batches", 1), ("num_batch_threads", 0)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
        sizes = tuple(self.allowed_batch_sizes)
        if sizes:
            if any(b <= a for a, b in zip(sizes, sizes[1:])) or sizes[0] < 1:
                raise ValueError(f"allowed_batch_sizes must be positive and increasing, got "
                                 f"{sizes}")
            if sizes[-1] != self.max_batch_size:
                raise ValueError(f"allowed_batch_sizes must end with max_batch_size="
                                 f"{self.max_batch_size}, got {sizes}")
        if not isinstance(self.group_by_length, bool):
            raise ValueError(f"group_by_length must be True or False, got "
                             f"{self.group_by_length!r}")

    @property
    def threads(self):
        return self.num_batch_threads or os.cpu_count() or 1


def length_class(inputs):
    """The length class of a request: 0 for texts of at most 16 UTF-8 bytes, then one more
    for every doubling (17-32 bytes: 1, 33-64: 2, ...), by its longest text; None for a
    request without text inputs.

    >>> import numpy as np
    >>> length_class({"text": np.array([b"short", b"a little longer, still"])})
    1
    >>> length_class({"input_word_ids": np.zeros((2, 8), "int32")}) is None
    True
    """
    longest = None
    for value in inputs.values():
        if value.dtype.kind in "SOU" and value.size:
            n = max(len(v) for v in value.flat)
            longest = n if longest is None else max(longest, n)
        elif value.dtype.kind in "SOU":
            longest = longest or 0
    if longest is None:
        return None
    return max(0, (longest - 1) // 16).bit_length()


class _Task:
    __slots__ = ("inputs", "rows", "key", "length_class", "queued", "done", "result", "error",
                 "abandoned")

    def __init__(self, inputs, rows, group_by_length=False):
        self.inputs = inputs
        self.rows = rows
        # Requests can share a batch when they have the same inputs with the same dtypes and
        # the same shape past the batch dimension.
        self.key = tuple(sorted((name, a.dtype.str, a.shape[1:]) for name, a in inputs.items()))
        self.length_class = length_class(inputs) if group_by_length else None
        self.queued = time.monotonic()
        self.done = threading.Event()
        self.result = self.error = None
        self.abandoned = False


class Batcher:
    """Merges concurrent calls of ``run(inputs) -> outputs`` (dicts of numpy arrays whose
    first dimension is the batch) into fewer, larger calls.

    `submit` blocks until its rows of the outputs are ready. ``calls``, ``rows`` and
    ``batch_sizes`` count what was run.

    Example:

    >>> import threading
    >>> import numpy as np
    >>> def double(inputs):
    ...     return {"y": inputs["x"] * 2}
    >>> batcher = Batcher(double, BatchingOptions(max_batch_size=4,
    ...                                            batch_timeout_micros=10_000_000))
    >>> answers = {}
    >>> def client(i):
    ...     answers[i] = batcher.submit({"x": np.array([i])})["y"].tolist()
    >>> threads = [threading.Thread(target=client, args=(i,)) for i in range(4)]
    >>> for t in threads: t.start()
    >>> for t in threads: t.join()
    >>> answers == {0: [0], 1: [2], 2: [4], 3: [6]}, batcher.calls
    (True, 1)
    >>> batcher.stop()
    """

    def __init__(self, run, options, name="batcher"):
        self._run = run
        self.options = options
        self.name = name
        self._queue = collections.deque()
        self._queued_rows = 0
        self._cond = threading.Condition()
        self._stopped = False
        self.calls = 0
        self.rows = 0
        self.batch_sizes = collections.Counter()
        self._threads = [threading.Thread(target=self._work, name=f"{name}-{i}", daemon=True)
                         for i in range(options.threads)]
        for thread in self._threads:
            thread.start()

    def submit(self, inputs, timeout=None):
        """Queues a request (a dict of arrays with `rows` rows each) and waits for its outputs.

        Raises `ServingError`: INVALID_ARGUMENT for more rows than ``max_batch_size``,
        UNAVAILABLE when the queue is full or the batcher stopped, DEADLINE_EXCEEDED after
        `timeout` seconds, or what running the batch raised.
        """
        rows = _rows(inputs)
        limit = self.options.max_batch_size
        if rows > limit:
            raise invalid(f"Task size {rows} is larger than maximum input batch size {limit} "
                          f"(the batching max_batch_size): send at most {limit} rows per "
                          "request")
        task = _Task(inputs, rows, self.options.group_by_length)
        with self._cond:
            if self._stopped:
                raise ServingError("UNAVAILABLE", f"{self.name} has stopped")
            bound = self.options.max_enqueued_batches * limit
            if self._queued_rows + rows > bound:
                raise ServingError(
                    "UNAVAILABLE", "The batch scheduling queue to which this task was submitted "
                    f"is full ({self._queued_rows} rows queued, max_enqueued_batches="
                    f"{self.options.max_enqueued_batches})")
            self._queue.append(task)
            self._queued_rows += rows
            self._cond.notify_all()
        if not task.done.wait(timeout):
            with self._cond:
                task.abandoned = True
            raise ServingError("DEADLINE_EXCEEDED",
                               f"no answer within {timeout:.3g} s (queued for batching)")
        if task.error is not None:
            raise task.error
        return task.result

    def stop(self):
        """Stops the batch threads; requests still queued get UNAVAILABLE."""
        with self._cond:
            self._stopped = True
            left, self._queue = list(self._queue), collections.deque()
            self._queued_rows = 0
            self._cond.notify_all()
        for task in left:
            task.error = ServingError("UNAVAILABLE", f"{self.name} stopped before running it")
            task.done.set()

    # ---- batch threads -------------------------------------------------------------------
    def _work(self):
        while True:
            with self._cond:
                batch = self._next_batch()
            if batch is None:
                return
            self._process(batch)

    def _next_batch(self):
        """Waits for a batch (under the lock); None once stopped."""
        limit = self.options.max_batch_size
        timeout = self.options.batch_timeout_micros / 1e6
        while True:
            if self._stopped:
                return None
            if not self._queue:
                self._cond.wait()
                continue
            first = self._queue[0]
            joining = self._joining(first, limit)
            size = sum(t.rows for t in joining)
            left = first.queued + timeout - time.monotonic()
            if size >= limit or left <= 0:
                for task in joining:
                    self._queue.remove(task)
                self._queued_rows -= size
                return [t for t in joining if not t.abandoned]
            self._cond.wait(left)

    def _joining(self, first, limit):
        """The queued tasks that would form a batch with `first` (in queue order)."""
        batch, size = [], 0
        for task in self._queue:
            if task.key != first.key:
                continue
            if size + task.rows > limit:
                break
            batch.append(task)
            size += task.rows
        return batch

    def _process(self, batch):
        """Runs a closed batch: one model call, or one per length class of its texts."""
        groups = {}
        for task in batch:
            groups.setdefault(task.length_class, []).append(task)
        if None in groups:  # no text (or not grouping): the batch as it is
            groups = {None: batch}
        for length in sorted(groups):  # shortest first (None comes alone)
            self._run_group(groups[length])

    def _run_group(self, batch):
        if not batch:
            return
        sizes = [t.rows for t in batch]
        total = sum(sizes)
        padded = next((s for s in self.options.allowed_batch_sizes if s >= total), total)
        names = list(batch[0].inputs)
        inputs = {n: np.concatenate([t.inputs[n] for t in batch]) for n in names}
        if padded > total:  # copies of the first row, as TF Serving pads
            inputs = {n: np.concatenate([a, np.repeat(a[:1], padded - total, axis=0)])
                      for n, a in inputs.items()}
        try:
            outputs = self._run(inputs)
            for name, value in outputs.items():
                if np.ndim(value) == 0 or np.shape(value)[0] != padded:
                    raise ServingError(
                        "INTERNAL", f"output {name!r} has shape {list(np.shape(value))} for a "
                        f"batch of {padded} rows: this signature cannot be batched (every "
                        "output needs the batch as its first dimension); run the server "
                        "without --enable_batching")
        except Exception as error:  # every request of the batch gets the error
            error = error if isinstance(error, ServingError) else ServingError(
                "INTERNAL", f"{type(error).__name__}: {error}")
            for task in batch:
                task.error = error
                task.done.set()
            return
        with self._cond:
            self.calls += 1
            self.rows += total
            self.batch_sizes[total] += 1
        start = 0
        for task, rows in zip(batch, sizes):
            task.result = {n: v[start:start + rows] for n, v in outputs.items()}
            start += rows
            task.done.set()


def _rows(inputs):
    sizes = {np.shape(a)[0] if np.ndim(a) else None for a in inputs.values()}
    if len(sizes) != 1 or None in sizes:
        raise invalid("batched requests need inputs that share their first (batch) dimension")
    return sizes.pop()
