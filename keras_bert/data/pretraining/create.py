"""Text files -> sharded TFRecords of BERT pre-training instances (masked LM + next sentence).

What google-research/bert's `create_pretraining_data.py` makes, the same records (feature
names, dtypes, lengths, the algorithm; see `pretraining_instances`, `pretraining_masking`,
`pretraining_records`), made in a stream: the input is read in chunks of whole documents
(`pretraining_files.read_chunks`), each chunk becomes its instances (``dupe_factor`` passes,
random next segments from the chunk's documents, shuffled within the chunk) and is written
before more is read, so memory stays flat however large the corpus.

This process reads and tokenizes each chunk (our in-graph tokenizer, TensorFlow) and writes
the records; with ``num_workers`` > 1, worker processes make the records of the chunks in
between (instances, masking, serialization: numpy). Chunk ``k`` is seeded by
``(random_seed, k)``, and records are written in chunk order, so the output is the same for
any number of workers. Records go round-robin over the output files, each written under a
temporary name and renamed into place only when all of them are complete.

Differences from the original, all for bounded memory: the shuffle and the "other document"
of random next segments are within a chunk (~``chunk_lines`` lines), not the whole corpus;
a document ends at the end of its file; documents longer than half a chunk are cut.
"""

import concurrent.futures
import dataclasses
import multiprocessing
import os
import queue
import signal
import threading
import time

from keras_bert import storage
from keras_bert.data.pretraining import records as pretraining_records
from keras_bert.data.pretraining import text_files as pretraining_files
from keras_bert.data.pretraining.chunks import ChunkEncoder
from keras_bert.data.pretraining.data_options import PretrainingDataOptions
from keras_bert.data.pretraining.text_files import PretrainingDataError

CHUNK_LINES = 10_000


@dataclasses.dataclass
class PretrainingDataStats:
    """What a `create_pretraining_data` run did. ``max_lines_held``: the most input lines
    held at once in chunks read and not yet written: one chunk tokenized ahead, one waiting
    for it, and the chunks being made (one in this process, two per worker), bounded by the
    chunk size, not the corpus.

    >>> stats = PretrainingDataStats(["in.txt"], ["out.tfrecord"], instances=500, seconds=2.0)
    >>> stats.instances_per_second
    250.0
    """

    input_files: list
    output_files: list
    documents: int = 0
    lines: int = 0
    chunks: int = 0
    instances: int = 0
    seconds: float = 0.0
    worker_processes: int = 0
    max_lines_held: int = 0

    @property
    def instances_per_second(self):
        return self.instances / self.seconds if self.seconds else 0.0


def output_paths(output_file, num_output_shards=1):
    """The output files: a comma-separated list means exactly those files; one name with
    ``num_output_shards`` N > 1 means ``<name>-00000-of-0000N`` ... ``<name>-0000{N-1}-of-0000N``.

    >>> output_paths("out.tfrecord", 2)
    ['out.tfrecord-00000-of-00002', 'out.tfrecord-00001-of-00002']
    >>> output_paths("a.tfrecord,b.tfrecord")
    ['a.tfrecord', 'b.tfrecord']
    """
    names = [p.strip() for p in str(output_file or "").split(",") if p.strip()]
    if not names:
        raise PretrainingDataError("no output file given (--output_file is empty)")
    if not isinstance(num_output_shards, int) or num_output_shards < 1:
        raise PretrainingDataError(
            f"--num_output_shards must be an integer >= 1, got {num_output_shards!r}")
    if num_output_shards == 1:
        return names
    if len(names) > 1:
        raise PretrainingDataError(
            f"--num_output_shards={num_output_shards} takes one --output_file name to number, "
            f"but --output_file lists {len(names)} files; give one or the other")
    return [f"{names[0]}-{i:05d}-of-{num_output_shards:05d}" for i in range(num_output_shards)]


def check_outputs(paths, input_files=()):
    """Raises `PretrainingDataError` naming an output whose directory is missing or not
    writable, that is a directory, is named twice, or is one of the input files."""
    if len(set(paths)) != len(paths):
        raise PretrainingDataError(f"an output file is named twice in {paths}")
    inputs = {p if storage.is_remote(p) else os.path.abspath(p) for p in input_files}
    for path in paths:
        if not storage.is_remote(path):  # gs:// and the like: known to take writes by writing
            directory = os.path.dirname(os.path.abspath(path))
            if not os.path.isdir(directory):
                raise PretrainingDataError(f"output {path}: the directory {directory} does "
                                           "not exist; create it first")
            try:  # the real test (permissions, read-only file systems, root or not)
                with storage.staging_dir(directory):
                    pass
            except OSError as e:
                raise PretrainingDataError(f"output {path}: cannot write in {directory} "
                                           f"({e.strerror or e})") from None
        if storage.isdir(path):
            raise PretrainingDataError(f"output {path} is a directory")
        if (path if storage.is_remote(path) else os.path.abspath(path)) in inputs:
            raise PretrainingDataError(f"output {path} is also an input file")


# ---- worker processes -----------------------------------------------------------------------
# Workers run `RecordMaker.encode`, numpy only: forked from this process (TensorFlow included,
# but never used in them, so fork's hazards for TensorFlow's threads do not arise), they start
# at once and share its memory. Where fork does not exist, they are spawned.
_MAKER = None


def _start_worker(maker):
    global _MAKER
    _MAKER = maker
    # Ctrl-C reaches the whole process group: the main process stops the workers.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _encode(chunk, chunk_index):
    return _MAKER.encode(chunk, chunk_index)


class _InProcess:
    def __init__(self, maker):
        self.maker = maker

    def submit(self, chunk, chunk_index):
        return self.maker.encode(chunk, chunk_index)

    @staticmethod
    def result(handle):
        return handle

    def close(self):
        pass


def _died(error):
    return PretrainingDataError(f"a worker process died ({error}); if it ran out of memory, "
                                "lower --num_workers or --chunk_lines")


class _Workers:
    def __init__(self, count, maker):
        methods = multiprocessing.get_all_start_methods()
        context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
        self.pool = concurrent.futures.ProcessPoolExecutor(
            max_workers=count, mp_context=context, initializer=_start_worker,
            initargs=(maker,))
        self.pool.submit(int).result()  # fork them now, before this process starts threads

    def submit(self, chunk, chunk_index):
        try:
            return self.pool.submit(_encode, chunk, chunk_index)
        except concurrent.futures.process.BrokenProcessPool as e:
            raise _died(e) from None

    @staticmethod
    def result(future):
        try:
            return future.result()
        except concurrent.futures.process.BrokenProcessPool as e:
            raise _died(e) from None

    def close(self):
        self.pool.shutdown(wait=True, cancel_futures=True)


def _ahead(items):
    """Yields ``items``, computed one ahead on a thread (its errors raised here, in turn)."""
    results = queue.Queue(maxsize=1)
    stop = threading.Event()
    done = object()

    def run():
        try:
            for item in items:
                while not stop.is_set():
                    try:
                        results.put((item, None), timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
            results.put((done, None))
        except BaseException as error:  # noqa: B036 - handed to the consumer
            results.put((done, error))

    thread = threading.Thread(target=run, name="read-and-tokenize", daemon=True)
    thread.start()
    try:
        while True:
            item, error = results.get()
            if error is not None:
                raise error
            if item is done:
                return
            yield item
    finally:
        stop.set()
        while thread.is_alive():
            try:
                results.get_nowait()
            except queue.Empty:
                pass
            thread.join(timeout=0.05)


def create_pretraining_data(input_files, output_files, vocabulary, *, do_lower_case=True,
                            options=PretrainingDataOptions(), num_workers=1,
                            chunk_lines=CHUNK_LINES, progress=None):
    """Makes pre-training TFRecords from text files, as the original script does.

    Args:
      input_files: globs or paths (a list, or a comma-separated string), read through
        `tf.io.gfile`: one sentence per line, a blank line between documents.
      output_files: the output files (a list; see `output_paths`), written round-robin.
      vocabulary: the `vocab.txt` path (or list of tokens) of the model's tokenizer.
      do_lower_case: the tokenizer's casing (uncased models: True).
      options: `PretrainingDataOptions` (the original's flags: lengths, probabilities, dupe
        factor, whole-word masking, seed).
      num_workers: processes making records (1: this process alone).
      chunk_lines: lines per chunk (the pool of random next documents, the shuffle window,
        and what bounds memory).
      progress: called with the running `PretrainingDataStats` after each chunk is written.

    Returns:
      `PretrainingDataStats`.

    Raises:
      PretrainingDataError: a bad option, vocabulary, input (missing, empty, unreadable) or
        output (missing or read-only directory); nothing is written then.

    Example:

    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> corpus = os.path.join(folder, "corpus.txt")
    >>> with open(corpus, "w") as f:
    ...     _ = f.write("The cat sat.\\nThe dog ran.\\n\\nThe dog sat.\\nThe cat ran.\\n")
    >>> from keras_bert.presets import load_preset
    >>> vocab = load_preset("tiny_random").vocab_path  # a vocab.txt
    >>> stats = create_pretraining_data(
    ...     corpus, [os.path.join(folder, "out.tfrecord")], vocab,
    ...     options=PretrainingDataOptions(max_seq_length=16, max_predictions_per_seq=3,
    ...                                dupe_factor=3))
    >>> stats.instances, stats.documents
    (9, 2)
    """
    started = time.perf_counter()
    options.check()
    if not isinstance(num_workers, int) or isinstance(num_workers, bool) or num_workers < 1:
        raise PretrainingDataError(f"--num_workers must be an integer >= 1, got {num_workers!r}")
    if not isinstance(chunk_lines, int) or isinstance(chunk_lines, bool) or chunk_lines < 2:
        raise PretrainingDataError(f"--chunk_lines must be an integer >= 2, got {chunk_lines!r}")
    files = pretraining_files.expand_input_files(input_files)
    output_files = list(output_files)
    check_outputs(output_files, files)
    encoder = ChunkEncoder(vocabulary, do_lower_case, options)  # checks the vocabulary
    stats = PretrainingDataStats(input_files=files, output_files=output_files)
    held = [0]  # lines of the chunks read and not yet written
    lock = threading.Lock()

    def read_and_tokenize():
        for chunk in pretraining_files.read_chunks(files, chunk_lines):
            lines = sum(len(document) for document in chunk)
            with lock:
                held[0] += lines
                stats.max_lines_held = max(stats.max_lines_held, held[0])
                stats.documents += len(chunk)
                stats.lines += lines
            yield lines, encoder.tokenize(chunk)

    maker = _Workers(num_workers, encoder.maker) if num_workers > 1 else _InProcess(
        encoder.maker)
    stats.worker_processes = num_workers if num_workers > 1 else 0
    window = 2 * num_workers if num_workers > 1 else 1
    in_flight = []  # (lines, handle), oldest first
    try:
        with pretraining_records.RecordShards(output_files) as shards:
            def write_oldest():
                lines, handle = in_flight.pop(0)
                data, offsets = maker.result(handle)
                shards.write_batch(data, offsets)
                with lock:
                    held[0] -= lines
                stats.chunks += 1
                stats.instances = shards.written
                stats.seconds = time.perf_counter() - started
                if progress is not None:
                    progress(stats)

            # Reading and tokenizing (TensorFlow, without the GIL) run a chunk ahead, on a
            # thread, while this one makes (or waits for) and writes records.
            for index, (lines, chunk) in enumerate(_ahead(read_and_tokenize())):
                in_flight.append((lines, maker.submit(chunk, index)))
                del chunk
                while len(in_flight) >= window:
                    write_oldest()
            while in_flight:
                write_oldest()
            if shards.written == 0:
                raise PretrainingDataError(
                    f"no instances: the input files {files} hold no tokens of this vocabulary")
    finally:
        maker.close()
    stats.seconds = time.perf_counter() - started
    return stats
