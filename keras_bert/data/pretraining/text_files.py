"""Pre-training text files as a stream of documents, in bounded chunks.

The input format of google-research/bert's `create_pretraining_data.py`: one sentence per
line, a blank line (empty or whitespace only) between documents. Files are read through
`tf.io.gfile` (local paths, ``gs://``) in blocks, never whole, and lines are kept as UTF-8
bytes (the tokenizer drops invalid bytes as the original's `convert_to_unicode` does).

Differences from the original, all for bounded memory: a document ends at the end of its
file (the original carries it into the next file), and a document longer than
``max_document_lines`` lines is cut into documents of that many lines (the original holds any
document whole; a file without blank lines is one document there).
"""

import tensorflow as tf

from keras_bert import storage
from keras_bert.data.pretraining.record_input import PretrainingDataError

BLOCK_BYTES = 1 << 20


def expand_input_files(patterns):
    """Files matching ``patterns`` (a comma-separated string or a list of globs or paths),
    in the order given (each glob's matches sorted), without repeats.

    Raises `PretrainingDataError` naming a pattern that matches nothing, and a file that is
    empty (0 bytes) or a directory.

    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> for name in ("b.txt", "a.txt"):
    ...     with open(os.path.join(folder, name), "w") as f:
    ...         _ = f.write("One sentence.\\n")
    >>> [os.path.basename(p) for p in expand_input_files(os.path.join(folder, "*.txt"))]
    ['a.txt', 'b.txt']
    """
    if isinstance(patterns, str):
        patterns = patterns.split(",")
    patterns = [p.strip() for p in patterns if p and p.strip()]
    if not patterns:
        raise PretrainingDataError("no input file given (--input_file is empty)")
    files = []
    for pattern in patterns:
        try:
            matches = storage.glob(pattern)
        except tf.errors.OpError as e:
            raise PretrainingDataError(f"input {pattern}: cannot list it ({e.message})") from None
        if not matches:
            raise PretrainingDataError(f"input {pattern}: no such file (nothing matches it)")
        for path in matches:
            if storage.isdir(path):
                raise PretrainingDataError(f"input {path} is a directory, not a text file")
            if storage.size(path) == 0:
                raise PretrainingDataError(f"input file {path} is empty")
            if path not in files:
                files.append(path)
    return files


def _lines(path):
    """The lines of ``path`` (bytes, without the newline), read in blocks."""
    try:
        with storage.open(path, "rb") as f:
            rest = b""
            while True:
                block = f.read(BLOCK_BYTES)
                if not block:
                    break
                lines = (rest + block).split(b"\n")
                rest = lines.pop()
                yield from lines
            if rest:
                yield rest
    except (OSError, tf.errors.OpError) as e:
        raise PretrainingDataError(f"input file {path}: cannot read it "
                                   f"({getattr(e, 'message', None) or e.strerror or e})") from None


def _is_blank(line):
    """Blank as the original sees it: nothing left after `str.strip()` (Unicode whitespace,
    invalid UTF-8 bytes ignored)."""
    return not line.decode("utf-8", "ignore").strip()


def read_documents(path, max_document_lines=10_000):
    """Yields the documents of one file, each a list of its non-blank lines (bytes).

    Raises `PretrainingDataError` naming the file when it holds no text at all.

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "corpus.txt")
    >>> with open(path, "w") as f:
    ...     _ = f.write("First doc, one.\\nFirst doc, two.\\n\\n\\nSecond doc.\\n")
    >>> list(read_documents(path))
    [[b'First doc, one.', b'First doc, two.'], [b'Second doc.']]
    """
    document = []
    any_text = False
    for line in _lines(path):
        if _is_blank(line):
            if document:
                yield document
                document = []
            continue
        any_text = True
        document.append(line.strip())
        if len(document) >= max_document_lines:
            yield document
            document = []
    if document:
        yield document
    if not any_text:
        raise PretrainingDataError(f"input file {path} holds no text (only blank lines)")


def read_chunks(paths, chunk_lines=20_000, max_document_lines=None):
    """Yields the documents of ``paths`` in chunks of whole documents of about
    ``chunk_lines`` lines: a chunk ends at the first document boundary after that many lines.
    A last chunk of less than half that joins the one before, so that random next segments
    always have a pool of documents to come from. At most two chunks are held at a time.

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "corpus.txt")
    >>> with open(path, "w") as f:
    ...     _ = f.write("\\n\\n".join(f"Doc {i}, a.\\nDoc {i}, b." for i in range(9)))
    >>> [len(chunk) for chunk in read_chunks([path], chunk_lines=8)]  # 4, 4, 1 -> 4, 5
    [4, 5]
    """
    if max_document_lines is None:
        max_document_lines = max(1, chunk_lines // 2)
    pending, chunk, lines = None, [], 0
    for path in paths:
        for document in read_documents(path, max_document_lines):
            chunk.append(document)
            lines += len(document)
            if lines >= chunk_lines:
                if pending is not None:
                    yield pending
                pending, chunk, lines = chunk, [], 0
    if chunk and pending is not None and lines < chunk_lines / 2:
        pending, chunk = pending + chunk, []
    if pending is not None:
        yield pending
    if chunk:
        yield chunk
