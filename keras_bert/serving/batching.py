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

A second addition (``max_batch_tokens``, off by default): a batch also closes before its
rows times its longest sequence would pass a token budget, as text-embeddings-inference's
``--max-batch-tokens``. A request's sequence length is its ids' length, or for texts an
estimate from the longest text's UTF-8 bytes (`estimated_tokens`: the tokenizer runs in the
model).

The same queue, with ``merge=False``, serves a server without batching: each request runs
alone, on one of a few threads, and the queue is bounded in requests. In both, a request whose
client has gone (its ``alive()`` says False) or whose deadline has passed is dropped before it
runs, and a call of more than `SLICE_ROWS` rows runs in slices, stopped between two slices
once no request of it is still waited for.
"""

import collections
import dataclasses
import os
import threading
import time

import numpy as np

from keras_bert.serving.errors import ServingError, invalid

SLICE_ROWS = 64  # a longer call runs in slices of this many rows, stopped once nobody waits


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
      max_batch_tokens: close a batch before its rows times its longest sequence (in
        tokens; `estimated_tokens` for texts) pass this budget (0: no budget); keras_bert's
        addition.

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
    max_batch_tokens: int = 0

    def __post_init__(self):
        for name, low in (("max_batch_size", 1), ("batch_timeout_micros", 0),
                          ("max_enqueued_batches", 1), ("num_batch_threads", 0),
                          ("max_batch_tokens", 0)):
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


def estimated_tokens(inputs):
    """A request's sequence length in tokens: the second dimension of its ids, or for texts
    the longest text's UTF-8 bytes / 4 + 2 (about 4 bytes a WordPiece token in English, and
    [CLS], [SEP]); 1 for inputs of neither kind.

    >>> import numpy as np
    >>> estimated_tokens({"text": np.array([b"a great movie", b"dull"], dtype=object)})
    5
    >>> estimated_tokens({"input_word_ids": np.zeros((2, 16), "int32")})
    16
    """
    longest = None
    for value in inputs.values():
        if value.dtype.kind in "SOU":
            n = max((len(v) for v in value.flat), default=0)
            longest = n if longest is None else max(longest, n)
    if longest is not None:
        return longest // 4 + 2
    return max((a.shape[1] for a in inputs.values() if a.ndim > 1), default=1)


class _Task:
    __slots__ = ("inputs", "rows", "key", "length_class", "tokens", "queued", "deadline",
                 "alive", "done", "result", "error", "abandoned")

    def __init__(self, inputs, rows, group_by_length=False, tokens=False, deadline=None,
                 alive=None):
        self.inputs = inputs
        self.rows = rows
        # Requests can share a batch when they have the same inputs with the same dtypes and
        # the same shape past the batch dimension.
        self.key = tuple(sorted((name, a.dtype.str, np.shape(a)[1:])
                                for name, a in inputs.items()))
        self.length_class = length_class(inputs) if group_by_length else None
        self.tokens = estimated_tokens(inputs) if tokens else 0
        self.queued = time.monotonic()
        self.deadline = deadline
        self.alive = alive
        self.done = threading.Event()
        self.result = self.error = None
        self.abandoned = False

    def gone(self, now):
        """Why nobody waits for this request any more (a ServingError), or None."""
        if self.abandoned:
            return ServingError("DEADLINE_EXCEEDED", "the request timed out while queued")
        if self.deadline is not None and now >= self.deadline:
            return ServingError("DEADLINE_EXCEEDED", "the request's deadline passed before "
                                "it could run (the server is busy)")
        if self.alive is not None:
            try:
                alive = self.alive()
            except Exception:  # noqa: BLE001 - a connection that cannot be asked is gone
                alive = False
            if not alive:
                return ServingError("CANCELLED", "the client has gone")
        return None

    def fail(self, error):
        self.error = error
        self.done.set()


class Batcher:
    """Merges concurrent calls of ``run(inputs) -> outputs`` (dicts of numpy arrays whose
    first dimension is the batch) into fewer, larger calls; with ``merge=False``, runs each
    call alone, on one of ``num_batch_threads`` threads, at most ``max_enqueued_batches``
    requests waiting (see the module docstring).

    `submit` blocks until its rows of the outputs are ready. ``calls``, ``rows`` and
    ``batch_sizes`` count what was run, ``dropped`` the requests dropped unrun or stopped.

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

    def __init__(self, run, options, name="batcher", merge=True):
        self._run = run
        self.options = options
        self.name = name
        self.merge = merge
        self._queue = collections.deque()
        self._queued_rows = 0
        self._cond = threading.Condition()
        self._stopped = False
        self.calls = 0
        self.rows = 0
        self.dropped = 0
        self.batch_sizes = collections.Counter()
        self._threads = [threading.Thread(target=self._work, name=f"{name}-{i}", daemon=True)
                         for i in range(options.threads)]
        for thread in self._threads:
            thread.start()

    def submit(self, inputs, timeout=None, alive=None):
        """Queues a request (a dict of arrays with `rows` rows each) and waits for its outputs.

        `timeout`: seconds the caller waits; `alive`: a callable, False once the caller has
        gone (either drops the request from the queue, and stops a long one between slices).

        Raises `ServingError`: INVALID_ARGUMENT for more rows than ``max_batch_size``,
        UNAVAILABLE when the batching queue is full or the batcher stopped,
        RESOURCE_EXHAUSTED when the queue of requests that run alone is full,
        DEADLINE_EXCEEDED after `timeout` seconds, CANCELLED when the caller has gone, or
        what running the batch raised.
        """
        rows = _rows(inputs, required=self.merge)
        limit = self.options.max_batch_size
        if self.merge and rows > limit:
            raise invalid(f"Task size {rows} is larger than maximum input batch size {limit} "
                          f"(the batching max_batch_size): send at most {limit} rows per "
                          "request")
        deadline = None if timeout is None else time.monotonic() + timeout
        task = _Task(inputs, rows, self.merge and self.options.group_by_length,
                     self.merge and bool(self.options.max_batch_tokens), deadline, alive)
        with self._cond:
            if self._stopped:
                raise ServingError("UNAVAILABLE", f"{self.name} has stopped")
            if self._full(rows):
                self._drop_gone()  # the waiting requests nobody waits for make room
            if self._full(rows):
                raise self._full_error()
            self._queue.append(task)
            self._queued_rows += rows or 0
            self._cond.notify_all()
        if not task.done.wait(timeout):
            with self._cond:
                task.abandoned = True
            raise ServingError("DEADLINE_EXCEEDED",
                               f"no answer within {timeout:.3g} s (queued for "
                               f"{'batching' if self.merge else 'a model call'})")
        if task.error is not None:
            raise task.error
        return task.result

    def _full(self, rows):
        if self.merge:
            bound = self.options.max_enqueued_batches * self.options.max_batch_size
            return self._queued_rows + rows > bound
        return len(self._queue) >= self.options.max_enqueued_batches

    def _full_error(self):
        if self.merge:
            return ServingError(
                "UNAVAILABLE", "The batch scheduling queue to which this task was submitted is "
                f"full ({self._queued_rows} rows queued, max_enqueued_batches="
                f"{self.options.max_enqueued_batches})")
        return ServingError(
            "RESOURCE_EXHAUSTED", f"the server is busy: {len(self._queue)} requests wait for "
            f"{self.name} (--max_enqueued_requests={self.options.max_enqueued_batches}); try "
            "again later")

    def _drop_gone(self):
        """Drops (under the lock) the queued requests nobody waits for any more."""
        now = time.monotonic()
        for task in list(self._queue):
            error = task.gone(now)
            if error is not None:
                self._queue.remove(task)
                self._queued_rows -= task.rows or 0
                self.dropped += 1
                task.fail(error)

    def stop(self):
        """Stops the batch threads; requests still queued get UNAVAILABLE."""
        with self._cond:
            self._stopped = True
            left, self._queue = list(self._queue), collections.deque()
            self._queued_rows = 0
            self._cond.notify_all()
        for task in left:
            task.fail(ServingError("UNAVAILABLE", f"{self.name} stopped before running it"))

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
        timeout = self.options.batch_timeout_micros / 1e6 if self.merge else 0
        while True:
            if self._stopped:
                return None
            self._drop_gone()
            if not self._queue:
                self._cond.wait()
                continue
            first = self._queue[0]
            joining = self._joining(first, limit) if self.merge else [first]
            size = sum(t.rows or 0 for t in joining)
            left = first.queued + timeout - time.monotonic()
            full = size >= limit or len(joining) < self._joinable(first)
            if full or left <= 0:
                for task in joining:
                    self._queue.remove(task)
                self._queued_rows -= size
                return joining
            self._cond.wait(left)

    def _joinable(self, first):
        """How many queued tasks could join `first`'s batch by their key (a batch closed by
        the token budget leaves some of them out: it is full)."""
        return sum(1 for t in self._queue if t.key == first.key)

    def _joining(self, first, limit):
        """The queued tasks that would form a batch with `first` (in queue order), within
        ``max_batch_size`` rows and the token budget."""
        budget = self.options.max_batch_tokens
        batch, size, longest = [], 0, 0
        for task in self._queue:
            if task.key != first.key:
                continue
            if size + task.rows > limit:
                break
            tokens = max(longest, task.tokens)
            if budget and batch and (size + task.rows) * tokens > budget:
                break
            batch.append(task)
            size += task.rows
            longest = tokens
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
        now = time.monotonic()
        live = []
        for task in batch:
            error = task.gone(now)
            if error is None:
                live.append(task)
            else:
                self.dropped += 1
                task.fail(error)
        if not live:
            return
        batch = live
        if batch[0].rows is None:  # no batch dimension: run as it is
            return self._finish(batch, lambda: self._checked(self._run(batch[0].inputs), None))
        sizes = [t.rows for t in batch]
        total = sum(sizes)
        padded = next((s for s in self.options.allowed_batch_sizes if s >= total), total)
        names = list(batch[0].inputs)
        inputs = {n: np.concatenate([t.inputs[n] for t in batch]) for n in names}
        if padded > total:  # copies of the first row, as TF Serving pads
            inputs = {n: np.concatenate([a, np.repeat(a[:1], padded - total, axis=0)])
                      for n, a in inputs.items()}
        ends = np.cumsum(sizes)
        if padded > SLICE_ROWS and padded == total:
            run = lambda: self._sliced(inputs, batch, ends)  # noqa: E731
        else:
            run = lambda: self._checked(self._run(inputs), padded)  # noqa: E731
        self._finish(batch, run, sizes, total)

    def _sliced(self, inputs, batch, ends):
        """Runs `inputs` in slices of SLICE_ROWS rows; between two, stops when no request
        whose rows are still to run is waited for (None: dropped)."""
        total = int(ends[-1])
        pieces = []
        for start in range(0, total, SLICE_ROWS):
            if start:
                now = time.monotonic()
                waiting = [t for t, end in zip(batch, ends) if end > start]
                errors = [t.gone(now) for t in waiting]
                if all(e is not None for e in errors):
                    for task, error in zip(waiting, errors):
                        self.dropped += 1
                        task.fail(error)
                    return None
            stop = min(total, start + SLICE_ROWS)
            pieces.append(self._checked(self._run({n: a[start:stop] for n, a in inputs.items()}),
                                        stop - start))
        return {n: np.concatenate([p[n] for p in pieces]) for n in pieces[0]}

    def _checked(self, outputs, rows):
        if rows is None:
            return outputs
        for name, value in outputs.items():
            if np.ndim(value) == 0 or np.shape(value)[0] != rows:
                raise ServingError(
                    "INTERNAL", f"output {name!r} has shape {list(np.shape(value))} for a "
                    f"batch of {rows} rows: this signature cannot be batched (every "
                    "output needs the batch as its first dimension); run the server "
                    "without --enable_batching")
        return outputs

    def _finish(self, batch, run, sizes=None, total=None):
        try:
            outputs = run()
        except Exception as error:  # every request of the batch gets the error
            error = error if isinstance(error, ServingError) else ServingError(
                "INTERNAL", f"{type(error).__name__}: {error}")
            for task in batch:
                task.fail(error)
            return
        if outputs is None:  # stopped: nobody waited
            return
        with self._cond:
            self.calls += 1
            if total is not None:
                self.rows += total
                self.batch_sizes[total] += 1
        if sizes is None:
            batch[0].result = outputs
            batch[0].done.set()
            return
        start = 0
        for task, rows in zip(batch, sizes):
            task.result = {n: v[start:start + rows] for n, v in outputs.items()}
            start += rows
            task.done.set()


def _rows(inputs, required=True):
    sizes = {np.shape(a)[0] if np.ndim(a) else None for a in inputs.values()}
    if len(sizes) != 1 or None in sizes:
        if not required:
            return None
        raise invalid("batched requests need inputs that share their first (batch) dimension")
    return sizes.pop()
