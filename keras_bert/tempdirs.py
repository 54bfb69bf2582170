"""The temporary directories of local writers: locked while they work, swept when dead.

A writer works in a locked temporary directory beside its target
(`staging_dir`) and renames the result into place, a file with `os.replace`, a directory
with one rename, so the target is either as it was or complete. A process killed meanwhile
cannot clean up, so a writer holds an exclusive ``fcntl.flock`` on a lock file inside its
directory for as long as it works; the kernel releases it when the process ends, however it
ends. Before creating its own directory, a writer sweeps the parent (`sweep`): a ``.tmp-*``
directory whose lock it can take belongs to a dead writer and is removed (with the lock
held); a live writer's lock cannot be taken, so its directory stays, and concurrent
writers all succeed. The lock file is created under another name, locked, then renamed
into place, so a lock file is never seen unlocked by its live writer. A directory without
one is young (its writer is between ``mkdir`` and the rename) or was left by keras_bert
before these locks; in directories keras_bert owns (the preset cache, ``legacy=True``)
such directories and the ``<file>.part-<pid>`` / ``<file>.tmp-<pid>`` files of those
versions are removed once they are older than `STALE_AFTER`. Without ``fcntl`` (not
POSIX) nothing is locked and only that age rule applies.

`keras_bert.storage` writes through these on local paths (`storage.staging_dir`); on object
stores there are no locks.

>>> import tempfile
>>> from keras_bert.tempdirs import locked_tempdir, sweep
>>> parent = tempfile.mkdtemp()
>>> with locked_tempdir(parent) as path:
...     sweep(parent) == []  # a live writer's directory is kept
True
"""

import contextlib
import os
import re
import shutil
import tempfile
import time

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None

PREFIX = ".tmp-"
LOCK_FILE = ".keras_bert.lock"
STALE_AFTER = 3600.0  # seconds; for leftovers without a lock only
_LEGACY_FILE = re.compile(r".+\.(?:part|tmp)-\d+$")


@contextlib.contextmanager
def locked_tempdir(parent, prefix=PREFIX, legacy=False):
    """Yields a new local directory ``parent/<prefix>XXXXXXXX`` locked by this process,
    after sweeping ``parent`` (see `sweep`); removes it on exit, whatever happens."""
    parent = os.fspath(parent)
    os.makedirs(parent, exist_ok=True)
    sweep(parent, legacy=legacy)
    path = tempfile.mkdtemp(prefix=prefix, dir=parent)
    fd = None
    try:
        fd = _lock(path)
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)  # still locked: no sweeper races the removal
        if fd is not None:
            os.close(fd)


def _lock(path):
    """Creates ``path/LOCK_FILE`` already locked; returns its descriptor (keep it open)."""
    fresh = os.path.join(path, LOCK_FILE + ".new")
    fd = os.open(fresh, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, str(os.getpid()).encode())
        os.rename(fresh, os.path.join(path, LOCK_FILE))
    except BaseException:
        os.close(fd)
        raise
    return fd


def sweep(parent, legacy=False):
    """Removes from local directory ``parent`` the temporaries of writers that are gone.

    ``.tmp-*`` directories whose lock can be taken go at once; with ``legacy`` (a directory
    keras_bert owns), lock-less ``.tmp-*`` directories and ``*.part-<pid>`` /
    ``*.tmp-<pid>`` files go once older than `STALE_AFTER`. Returns the paths removed.
    """
    parent = os.fspath(parent)
    try:
        names = os.listdir(parent)
    except (FileNotFoundError, NotADirectoryError):
        return []
    removed = []
    for name in names:
        path = os.path.join(parent, name)
        if os.path.islink(path):
            continue
        if name.startswith(PREFIX) and os.path.isdir(path):
            if _remove_if_abandoned(path, legacy):
                removed.append(path)
        elif legacy and _LEGACY_FILE.match(name) and _is_old(path):
            with contextlib.suppress(OSError):
                os.remove(path)
                removed.append(path)
    return removed


def _remove_if_abandoned(path, legacy):
    try:
        fd = os.open(os.path.join(path, LOCK_FILE), os.O_RDWR)
    except FileNotFoundError:
        if legacy and _is_old(path):
            shutil.rmtree(path, ignore_errors=True)
            return True
        return False
    except OSError:
        return False
    try:
        if fcntl is None:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # a live writer holds it
            return False
        shutil.rmtree(path, ignore_errors=True)
        return True
    finally:
        os.close(fd)


def _is_old(path):
    try:
        return time.time() - os.lstat(path).st_mtime > STALE_AFTER
    except OSError:
        return False
