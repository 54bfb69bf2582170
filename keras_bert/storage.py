"""Every read and write of a path a user gives: local paths, ``gs://``, ``ram://``.

All of it goes through `tf.io.gfile`, so any file system TensorFlow knows works, and every
keras_bert module that reads or writes a user's path does it through the functions here.

Writes are atomic, in the sense each kind of store allows:

* Local paths: a writer works in a locked temporary directory beside its target
  (`staging_dir`, `keras_bert.tempdirs`) and renames the result into place, a file with
  `os.replace`, a directory with one rename, so the target is either as it was or complete.
* Object stores (any path with a scheme, ``gs://...``): a file is written under a temporary
  name in a ``.tmp-*`` directory beside it and renamed (object stores rename single files,
  not directories). A directory (`atomic_dir`) is written in such a temporary directory and
  its files are then moved into the target one by one, the file that marks it complete
  (``saved_model.pb``, a checkpoint's ``.index``, ``keras_bert.json``) last, so a reader
  that waits for that file never reads a half-written directory. A write that fails removes
  what it wrote. There are no locks on object stores: what a killed process left in a
  ``.tmp-*`` directory stays there (it is never mistaken for the target).

A directory that replaces another (`replacing_dir`: a preset saved over an earlier one) is
written beside it and, on a local Linux disk, swapped with it in one step
(`keras_bert.dir_swap`), so a reader finds the old directory or the new one, even when the
writer is killed. Elsewhere (object stores, file systems that cannot swap) the files are
replaced one by one, in an order the writer chooses, so that its own files tell a reader
that the directory is half-replaced (a keras_bert preset's ``keras_bert.json``, written
first, records the sha256 of the files it goes with).

>>> import tensorflow as tf
>>> path = write_json("ram://storage_doc/run/metrics.json", {"accuracy": 0.5})
>>> read_json(path)
{'accuracy': 0.5}
>>> listdir("ram://storage_doc/run")
['metrics.json']
"""

import contextlib
import errno
import fnmatch
import hashlib
import json
import os
import shutil
import uuid

import tensorflow as tf

from keras_bert import dir_swap
from keras_bert.tempdirs import LOCK_FILE, PREFIX, locked_tempdir


# ---- paths -----------------------------------------------------------------------------------

def is_remote(path):
    """Whether ``path`` names an object store or another file system by a scheme
    (``gs://``, ``ram://``, ``s3://``...), rather than a local path."""
    return "://" in os.fspath(path)


def file_system_schemes():
    """The schemes TensorFlow has a file system for here (``gs``, ``ram``, ``file``, and ``""``
    for local paths; more when a plugin such as tensorflow-io registers them)."""
    return tuple(tf.io.gfile.get_registered_schemes())


def _parent(path):
    """The directory of ``path`` (absolute for local paths)."""
    path = os.fspath(path)
    if is_remote(path):  # os.path.dirname("gs://bucket") would be "gs:"
        scheme, rest = path.split("://", 1)
        return f"{scheme}://{rest.rstrip('/').rpartition('/')[0]}"
    return os.path.dirname(os.path.abspath(path))


def same_file(a, b):
    """Whether ``a`` and ``b`` name the same file (spelled alike, or the same local file)."""
    a, b = os.fspath(a), os.fspath(b)
    if is_remote(a) or is_remote(b):
        return a.rstrip("/") == b.rstrip("/")
    return os.path.abspath(a) == os.path.abspath(b)


# ---- reading ---------------------------------------------------------------------------------

def exists(path):
    """Whether ``path`` is a file or a directory.

    On ``ram://`` (TensorFlow's in-memory file system, which tests use in place of gs://)
    any leading part of an existing file's name counts as a directory: ``ram://d/model``
    "exists" beside ``ram://d/model.keras``; name things apart there."""
    return tf.io.gfile.exists(os.fspath(path))


def isdir(path):
    """Whether ``path`` is a directory (see `exists` for a quirk of ``ram://``)."""
    return tf.io.gfile.isdir(os.fspath(path))


def isfile(path):
    """Whether ``path`` is a file."""
    path = os.fspath(path)
    return tf.io.gfile.exists(path) and not tf.io.gfile.isdir(path)


def listdir(path):
    """The names in directory ``path``, sorted (without a trailing ``/``)."""
    return sorted(name.rstrip("/") for name in tf.io.gfile.listdir(os.fspath(path)))


def glob(pattern):
    """The paths matching ``pattern``, sorted."""
    return sorted(tf.io.gfile.glob(os.fspath(pattern)))


def size(path):
    """The size of file ``path`` in bytes."""
    return tf.io.gfile.stat(os.fspath(path)).length


def stat(path):
    """`tf.io.gfile.stat` of ``path``: ``length``, ``mtime_nsec``, ``is_directory``."""
    return tf.io.gfile.stat(os.fspath(path))


def walk_files(top):
    """The files under directory ``top``, as paths relative to it (``/``-separated), sorted."""
    top = os.fspath(top).rstrip("/")
    found = []
    for directory, _, files in tf.io.gfile.walk(top):
        relative = os.path.relpath(directory, top) if not is_remote(top) else \
            directory.rstrip("/")[len(top):].lstrip("/")
        relative = "" if relative in (".", "") else relative
        found += [f"{relative}/{name}" if relative else name for name in files]
    return sorted(found)


def _os_error(error, path):
    """A `tf.errors.OpError` as the `OSError` a local file function would raise."""
    if isinstance(error, tf.errors.NotFoundError):
        return FileNotFoundError(errno.ENOENT, "No such file or directory", path)
    if isinstance(error, tf.errors.PermissionDeniedError):
        return PermissionError(errno.EACCES, "Permission denied", path)
    return OSError(errno.EIO, error.message, path)


def open(path, mode="r"):  # noqa: A001 - the file-reading verb, as tf.io.gfile.GFile
    """A file object to read ``path`` (``mode`` "r" or "rb"); `FileNotFoundError` when there
    is no such file. Writes go through `atomic_path` and the ``write_*`` functions."""
    if mode not in ("r", "rb"):
        raise ValueError(f"storage.open reads (mode 'r' or 'rb'), got mode={mode!r}; write "
                         "with storage.write_bytes/write_text/write_json or atomic_path.")
    path = os.fspath(path)
    if isdir(path):
        raise IsADirectoryError(errno.EISDIR, "Is a directory, not a file", path)
    if not tf.io.gfile.exists(path):
        raise FileNotFoundError(errno.ENOENT, "No such file or directory", path)
    return tf.io.gfile.GFile(path, mode)


def read_bytes(path):
    """The contents of file ``path``."""
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            return f.read()
    except tf.errors.OpError as e:
        raise _os_error(e, path) from None


def read_text(path):
    """The contents of file ``path`` decoded as UTF-8."""
    return read_bytes(path).decode("utf-8")


def read_json(path):
    """The JSON value in file ``path``."""
    return json.loads(read_text(path))


def sha256(path):
    """The sha256 of file ``path``, in hex."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


# ---- writing ---------------------------------------------------------------------------------

def makedirs(path):
    """Creates directory ``path`` and its parents (nothing to do when it exists)."""
    tf.io.gfile.makedirs(os.fspath(path))


def remove(path):
    """Removes file ``path``; nothing to do when there is none."""
    path = os.fspath(path)
    try:
        tf.io.gfile.remove(path)
    except tf.errors.NotFoundError:
        pass


def rmtree(path):
    """Removes directory ``path`` with everything in it; nothing to do when there is none."""
    path = os.fspath(path)
    if not is_remote(path):
        shutil.rmtree(path, ignore_errors=True)
        return
    with contextlib.suppress(tf.errors.NotFoundError):
        if tf.io.gfile.isdir(path):
            tf.io.gfile.rmtree(path)


def _move_file(source, target):
    if is_remote(source) or is_remote(target):
        tf.io.gfile.rename(source, target, overwrite=True)
    else:
        os.replace(source, target)


def create(path):
    """A binary file object that writes ``path`` anew: for the temporary names that
    `atomic_path` and `staging_dir` give (a writer that streams its bytes). The file is
    created at once, as `open` does, not at the first write."""
    f = tf.io.gfile.GFile(os.fspath(path), "wb")
    f.write(b"")  # tf.io.gfile opens the file on the first write
    return f


@contextlib.contextmanager
def atomic_path(path, legacy=False):
    """Yields a temporary name (same basename, in a `staging_dir` beside ``path``) for any
    writer to write; moves it to ``path`` when the ``with`` block ends without an error and
    removes it whatever happens, so ``path`` is never half-written and nothing is left.
    ``legacy``: ``path``'s directory is keras_bert's own (see `sweep`)."""
    path = os.fspath(path)
    with staging_dir(_parent(path), legacy=legacy) as work:
        tmp = os.path.join(work, os.path.basename(path.rstrip("/")))
        yield tmp
        _move_file(tmp, path)


def write_bytes(path, data):
    """Writes ``data`` to ``path`` atomically (see `atomic_path`); returns ``path``."""
    with atomic_path(path) as tmp:
        with create(tmp) as f:
            f.write(data)
    return os.fspath(path)


def write_text(path, text):
    """Writes ``text`` as UTF-8 to ``path`` atomically; returns ``path``."""
    return write_bytes(path, text.encode("utf-8"))


def write_json(path, values):
    """Writes ``values`` as indented, key-sorted JSON (and a final newline) to ``path``,
    atomically; returns ``path``."""
    return write_text(path, json.dumps(values, indent=2, sort_keys=True) + "\n")


def write_lines(path, lines):
    """Writes ``lines`` (strings, each given its newline) to ``path`` atomically."""
    with atomic_path(path) as tmp:
        with create(tmp) as f:
            for line in lines:
                f.write((line + "\n").encode("utf-8"))
    return os.fspath(path)


def append_text(path, text):
    """Appends ``text`` to file ``path`` (created when missing). Not atomic: for logs that
    grow a line at a time (an object store rewrites the whole object)."""
    path = os.fspath(path)
    makedirs(_parent(path))
    with tf.io.gfile.GFile(path, "a") as f:
        f.write(text)


def copy(source, target):
    """Copies file ``source`` to ``target`` atomically (any store to any store); nothing to do
    when they are the same file. Returns ``target``."""
    if same_file(source, target):
        return os.fspath(target)
    if not isfile(source):
        raise FileNotFoundError(errno.ENOENT, "No such file or directory", os.fspath(source))
    with atomic_path(target) as tmp:
        tf.io.gfile.copy(os.fspath(source), tmp, overwrite=True)
    return os.fspath(target)


def move_files(source, target, last=()):
    """Moves every file under directory ``source`` to the same place under ``target``,
    the files named in ``last`` (relative paths) after all others, in that order; returns
    the paths written. A move that fails removes the files already moved. A lock file of
    `staging_dir` at the top of ``source`` stays where it is; empty directories are not
    recreated (object stores have none)."""
    source, target = os.fspath(source), os.fspath(target)
    files = [f for f in walk_files(source) if not f.startswith(LOCK_FILE)]
    order = {name: i for i, name in enumerate(last)}
    files.sort(key=lambda f: order.get(f, -1))  # stable: the others first, in their order
    moved = []
    try:
        for directory in sorted({os.path.dirname(f) for f in files}):
            makedirs(os.path.join(target, directory) if directory else target)
        for name in files:
            destination = os.path.join(target, name)
            _move_file(os.path.join(source, name), destination)
            moved.append(destination)
    except BaseException:
        for path in reversed(moved):
            with contextlib.suppress(Exception):
                remove(path)
        raise
    return moved


@contextlib.contextmanager
def atomic_dir(path, last=()):
    """Yields a temporary directory name for a writer that makes a whole directory, and
    puts it at ``path`` (which must be absent or empty) once the ``with`` block ends without
    an error: locally by one rename; on an object store by moving its files one by one,
    those named in ``last`` (relative paths: the files that mark the directory complete)
    at the end. A failure removes what was written, at the temporary name and at ``path``."""
    path = os.fspath(path).rstrip("/")
    with staging_dir(_parent(path)) as work:
        tmp = os.path.join(work, os.path.basename(path))
        yield tmp
        if isdir(path) and listdir(path):
            raise FileExistsError(errno.EEXIST, f"{path} appeared meanwhile and is not empty",
                                  path)
        if not is_remote(path):
            if os.path.isdir(path):
                os.rmdir(path)  # empty (checked): the rename takes its place
            os.replace(tmp, path)
            return
        created = not exists(path)
        try:
            move_files(tmp, path, last=last)
        except BaseException:
            if created:
                rmtree(path)
            raise


@contextlib.contextmanager
def replacing_dir(path, first=(), last=(), replaces=()):
    """Yields a temporary directory name for a writer that makes a whole directory, and puts
    what it wrote at ``path`` in place of what is there, once the ``with`` block ends without
    an error (an error leaves ``path`` as it was).

    Files of ``path`` that the new directory does not have are kept, unless they match one
    of the glob patterns ``replaces`` (relative paths): the files of the kind the writer
    writes, such as an earlier save's ``vocab.txt`` when this one has none. ``.tmp-*``
    entries (writers' temporaries) are never kept.

    * A local directory, on Linux: written beside ``path`` and swapped with it in one step
      (`keras_bert.dir_swap`), the kept files hard-linked in first; ``path`` absent or
      empty: renamed into place. A reader finds the old directory or the new one, complete,
      even when the writer is killed (what it leaves beside ``path`` is swept by the next
      writer).
    * An object store, or a local file system that cannot swap: written in a ``.tmp-*``
      directory inside ``path``, then moved into place file by file: those named in
      ``first`` (relative paths), then the ``replaces`` files the new directory lacks
      removed, then the others, those named in ``last`` at the end. A writer killed or
      failing in the middle leaves a mix of old and new files: what it writes ``first``
      must let a reader tell (a keras_bert preset's ``keras_bert.json`` records the sha256
      of the files it goes with).
    """
    path = os.fspath(path)
    if is_remote(path) or os.path.ismount(path):
        path = path.rstrip("/") or path
        makedirs(path)
        with staging_dir(path) as work:
            new = os.path.join(work, "new")
            yield new
            _replace_in_place(new, path, first, last, replaces)
        return
    path = os.path.realpath(path)  # a link to a directory: the directory is replaced
    with staging_dir(_parent(path)) as work:
        new = os.path.join(work, os.path.basename(path))
        yield new
        makedirs(new)
        if not dir_swap.replace(new, path, keep=lambda f: _kept(f, replaces)):
            _replace_in_place(new, path, first, last, replaces)


def _kept(relative, replaces):
    """Whether the file ``relative`` of a directory being replaced stays."""
    if relative.split("/", 1)[0].startswith(PREFIX):
        return False
    return not any(fnmatch.fnmatchcase(relative, pattern) for pattern in replaces)


def _replace_in_place(new, path, first, last, replaces):
    """`replacing_dir` file by file: the files of ``new`` moved into ``path`` in the order
    `replacing_dir` gives."""
    files = walk_files(new)
    head = [f for f in first if f in files]
    tail = [f for f in last if f in files and f not in head]
    middle = sorted(set(files) - set(head) - set(tail))
    stale = sorted({match[len(path.rstrip("/")) + 1:]
                    for pattern in replaces for match in glob(os.path.join(path, pattern))}
                   - set(files))
    for name in head:
        _move_file(os.path.join(new, name), os.path.join(path, name))
    for name in stale:
        remove(os.path.join(path, name))
    for directory in sorted({os.path.dirname(f) for f in middle + tail} - {""}):
        makedirs(os.path.join(path, directory))
    for name in middle + tail:
        _move_file(os.path.join(new, name), os.path.join(path, name))


@contextlib.contextmanager
def staging_dir(parent, prefix=PREFIX, legacy=False):
    """Yields a new empty directory ``parent/<prefix>XXXXXXXX`` for a writer's temporary
    files, removed on exit whatever happens. Locally it is a `locked_tempdir` (``parent`` is
    swept first); on an object store a directory of a random name."""
    parent = os.fspath(parent)
    if not is_remote(parent):
        with locked_tempdir(parent, prefix=prefix, legacy=legacy) as path:
            yield path
        return
    path = os.path.join(parent, f"{prefix}{os.getpid()}-{uuid.uuid4().hex[:12]}")
    makedirs(path)
    try:
        yield path
    finally:
        with contextlib.suppress(Exception):
            rmtree(path)
