"""Replacing a local directory by another in one step: Linux's ``renameat2`` with
``RENAME_EXCHANGE``.

`exchange` swaps two directories atomically: a reader that opens a file by path at any moment
finds it in the old directory or in the new one, and a process killed at any moment leaves
one of the two in place, complete. `carry_over` first gives the new directory the files of
the old one it does not replace (hard links: no copy, the same files), so that a directory
holding more than what is replaced (a training run's ``--model_dir`` with its checkpoints
and logs) keeps it. Where the system or the file system cannot do either (not Linux, a file
system that refuses the exchange, another file system mounted below), they raise
`SwapUnavailable` before changing anything a reader sees, and the caller replaces the files
one by one instead (`keras_bert.storage.replacing_dir`).

Local paths only, and no TensorFlow: `keras_bert.storage` is the module that writes a user's
path; it calls these.

>>> import os, tempfile
>>> root = tempfile.mkdtemp()
>>> for name, text in (("old", "1"), ("new", "2")):
...     os.mkdir(os.path.join(root, name))
...     with open(os.path.join(root, name, "weights"), "w") as f:
...         _ = f.write(text)
>>> with open(os.path.join(root, "old", "notes.txt"), "w") as f:
...     _ = f.write("kept")
>>> carry_over(os.path.join(root, "old"), os.path.join(root, "new"), skip=lambda path: False)
['notes.txt']
>>> try:
...     exchange(os.path.join(root, "old"), os.path.join(root, "new"))
... except SwapUnavailable:  # not Linux, or a file system without it
...     pass
... else:
...     print(sorted(os.listdir(os.path.join(root, "old"))),
...           open(os.path.join(root, "old", "weights")).read())
['notes.txt', 'weights'] 2
"""

import ctypes
import errno
import os
import sys

_AT_FDCWD = -100
_RENAME_EXCHANGE = 2
# What renameat2 answers when this kernel, file system or sandbox does not do the exchange
# (or the two paths are on different file systems): nothing was changed.
_UNAVAILABLE = {errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV,
                errno.EPERM}
# What os.link answers when a file cannot be linked where it is: another file system below,
# a file system without hard links, too many links, links not allowed to this user.
_NOT_LINKABLE = {errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP, errno.EOPNOTSUPP,
                 errno.EACCES}


class SwapUnavailable(OSError):
    """This system or file system cannot swap (or link) these paths; nothing was swapped.

    >>> error = SwapUnavailable(errno.ENOSYS, "renameat2 is not available here", "/data/bert")
    >>> isinstance(error, OSError), error.filename
    (True, '/data/bert')
    """


def _renameat2():
    if not sys.platform.startswith("linux"):
        return None
    try:
        function = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):  # a libc without it (glibc < 2.28, musl < 1.2.?)
        return None
    function.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p,
                         ctypes.c_uint]
    function.restype = ctypes.c_int
    return function


def exchange(a, b):
    """Swaps the local directories ``a`` and ``b`` in one step (both must exist).

    Raises `SwapUnavailable` (nothing swapped) where the system or file system cannot, and
    `OSError` for the other failures (no such directory, permission denied)."""
    a, b = os.fsencode(os.fspath(a)), os.fsencode(os.fspath(b))
    renameat2 = _renameat2()
    if renameat2 is None:
        raise SwapUnavailable(errno.ENOSYS, "renameat2 is not available here", os.fsdecode(a))
    if renameat2(_AT_FDCWD, a, _AT_FDCWD, b, _RENAME_EXCHANGE) != 0:
        error = ctypes.get_errno()
        kind = SwapUnavailable if error in _UNAVAILABLE else OSError
        raise kind(error, os.strerror(error), os.fsdecode(a), None, os.fsdecode(b))


def carry_over(old, new, skip):
    """Gives directory ``new`` every entry under directory ``old`` that it lacks and that
    ``skip(relative_path)`` (``/``-separated) does not name: files as hard links, symbolic
    links as links, directories made. Returns the relative paths added, sorted.

    Raises `SwapUnavailable` when a file cannot be linked (another file system mounted
    below ``old``, a file system without hard links); ``old`` is never changed."""
    old, new = os.fspath(old), os.fspath(new)
    added = []
    for root, dirs, files in os.walk(old):
        here = os.path.relpath(root, old).replace(os.sep, "/")
        walked = []
        for name in sorted(dirs) + sorted(files):
            relative = name if here == "." else f"{here}/{name}"
            source, target = os.path.join(root, name), os.path.join(new, relative)
            if skip(relative):
                continue
            if name in dirs and not os.path.islink(source):
                if not os.path.lexists(target):
                    os.mkdir(target)
                    added.append(relative)
                if os.path.isdir(target) and not os.path.islink(target):
                    walked.append(name)  # its entries next (new may have some of them)
                continue
            if os.path.lexists(target):
                continue  # new has its own
            if os.path.islink(source):
                os.symlink(os.readlink(source), target)
            else:
                try:
                    os.link(source, target, follow_symlinks=False)
                except OSError as e:
                    _remove(new, added)
                    if e.errno in _NOT_LINKABLE:
                        raise SwapUnavailable(e.errno, f"cannot link {source}: {e.strerror}",
                                              source) from None
                    raise
            added.append(relative)
        dirs[:] = walked
    return sorted(added)


def replace(new, path, keep):
    """Puts local directory ``new`` at ``path`` in one step: renamed there when ``path`` is
    absent or empty, else swapped with it after `carry_over` of the files ``keep(relative
    path)`` names. ``new`` then holds the old directory (or nothing): the caller removes it.

    Returns False, with ``path`` and ``new`` as they were, where this system cannot swap
    (see `SwapUnavailable`)."""
    for _ in range(2):  # again when another writer put a directory there meanwhile
        if not os.path.isdir(path) or not os.listdir(path):
            try:
                if os.path.isdir(path):
                    os.rmdir(path)  # empty: the rename takes its place
                os.rename(new, path)
                return True
            except OSError as e:
                if e.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                    raise
                continue
        try:
            carried = carry_over(path, new, lambda f: not keep(f))
        except SwapUnavailable:
            return False
        try:
            exchange(path, new)
            return True
        except SwapUnavailable:
            _remove(new, carried)
            return False
    raise FileExistsError(errno.EEXIST, "another writer keeps creating it", path)


def _remove(new, added):
    """Removes what `carry_over` added to ``new`` (links, and directories deepest first)."""
    for relative in sorted(added, reverse=True):
        path = os.path.join(new, relative)
        if os.path.isdir(path) and not os.path.islink(path):
            os.rmdir(path)
        else:
            os.remove(path)
