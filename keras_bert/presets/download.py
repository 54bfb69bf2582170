"""Downloading, verifying and caching preset archives.

Everything lands under the cache root, ``$KERAS_BERT_HOME`` (default ``~/.cache/keras_bert``)::

    downloads/<file>.zip        archives as fetched (removed once converted)
    <name>/                     the converted preset, in keras_bert's layout
    zips/<zip name>-<sha256[:16]>/  a local Google .zip passed to from_preset, converted

Each step writes in a locked temporary directory and renames into place, so an interrupted
download or conversion never leaves something that a later call would take for complete, and
what a killed process left is removed by the next one (`keras_bert.tempdirs.locked_tempdir`).
The cache is a local directory; its files are read and written through `keras_bert.storage`.
"""

import http.client
import os
import socket
import sys
import time
import urllib.error
import urllib.request
import zipfile
import zlib

from keras_bert import storage
from keras_bert.checkpoints.common import CheckpointError

DEFAULT_TIMEOUT = 10.0  # seconds to connect (and between reads); offline fails in seconds
_CHUNK = 1 << 20


class DownloadError(CheckpointError):
    """A preset archive could not be fetched or failed verification.

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "model.zip")
    >>> with open(path, "wb") as f:
    ...     _ = f.write(b"not the archive")
    >>> try:
    ...     check_sha256(path, "0" * 64, what="model.zip")
    ... except DownloadError as error:
    ...     print(error)
    sha256 of model.zip is ..., expected 000...; the file is corrupt or not the one expected.
    """


def cache_root():
    root = os.environ.get("KERAS_BERT_HOME") or os.path.join("~", ".cache", "keras_bert")
    return os.path.abspath(os.path.expanduser(root))


def timeout():
    try:
        return float(os.environ.get("KERAS_BERT_DOWNLOAD_TIMEOUT", DEFAULT_TIMEOUT))
    except ValueError:
        return DEFAULT_TIMEOUT


def check_sha256(path, expected, what=None, consequence=""):
    """Raises `DownloadError` unless the sha256 of ``path`` is ``expected`` (any case)."""
    actual = storage.sha256(path)
    if actual != expected.lower():
        raise DownloadError(
            f"sha256 of {what or path} is {actual}, expected {expected}; the file is corrupt "
            f"or not the one expected.{consequence}"
        )


def manual_instructions(url, zip_target):
    return (
        f"To install it by hand, download {url} on a machine with internet access and either "
        f"copy it to {zip_target} (it is verified and converted on the next call) or unzip it "
        "and pass the directory to from_preset()."
    )


class _Progress:
    """Progress on stderr: the label on a line of its own, then a bar redrawn in place."""

    def __init__(self, label, total, stream=None):
        self.total = total
        self.stream = stream or sys.stderr
        self.done, self.last = 0, 0.0
        self.stream.write(label + "\n")
        self.stream.flush()

    def update(self, n):
        self.done += n
        now = time.monotonic()
        if now - self.last < 0.2 and (self.total is None or self.done < self.total):
            return
        self.last = now
        mb = self.done / 1e6
        if self.total:
            frac = self.done / self.total
            bar = "#" * int(30 * frac)
            line = f"\r  [{bar:<30}] {100 * frac:5.1f}% {mb:.1f}/{self.total / 1e6:.1f} MB"
        else:
            line = f"\r  {mb:.1f} MB"
        self.stream.write(line)
        self.stream.flush()

    def close(self):
        self.stream.write("\n")
        self.stream.flush()


def fetch(url, target, sha256=None, progress=True, label=None):
    """Downloads ``url`` to ``target`` atomically; checks ``sha256`` when given.

    The bytes go to a file in a locked ``.tmp-*`` directory beside ``target`` (see
    `keras_bert.storage.atomic_path`), moved into place once complete and verified.
    ``label`` starts the progress line (default: ``Downloading <file>``).
    """
    with storage.atomic_path(target, legacy=True) as part:
        try:
            response = urllib.request.urlopen(url, timeout=timeout())
        except (urllib.error.URLError, socket.timeout, OSError, http.client.HTTPException) as e:
            reason = getattr(e, "reason", e)
            raise DownloadError(
                f"Cannot download {url}: {reason}. {manual_instructions(url, target)}"
            ) from None
        with response, storage.create(part) as out:
            total = response.headers.get("Content-Length")
            total = int(total) if total and total.isdigit() else None
            label = label or f"Downloading {os.path.basename(target)}"
            bar = _Progress(label, total) if progress else None
            try:
                while True:
                    chunk = response.read(_CHUNK)
                    if not chunk:
                        break
                    out.write(chunk)
                    if bar:
                        bar.update(len(chunk))
            except (socket.timeout, OSError, http.client.HTTPException) as e:
                raise DownloadError(
                    f"Download of {url} broke off: {e}. {manual_instructions(url, target)}"
                ) from None
            finally:
                if bar:
                    bar.close()
        size = storage.size(part)
        if total is not None and size != total:
            raise DownloadError(f"Download of {url} is incomplete: {size} of {total} bytes.")
        if sha256:
            check_sha256(part, sha256, what=url, consequence=" Nothing was cached.")
    return target


def extract_zip(zip_path, into):
    """Checks the archive's integrity and extracts it into the new directory ``into``.

    Returns the directory inside that holds ``bert_config.json`` (Google's zips put the files
    either at the top or in one folder).
    """
    try:
        with storage.open(zip_path, "rb") as f, zipfile.ZipFile(f) as archive:
            bad = archive.testzip()
            if bad is not None:
                raise DownloadError(f"{zip_path} is corrupt: member {bad} fails its CRC check.")
            root = os.path.realpath(into)
            for member in archive.namelist():
                dest = os.path.realpath(os.path.join(into, member))
                if not (dest == root or dest.startswith(root + os.sep)):
                    raise DownloadError(f"{zip_path}: member {member!r} escapes the archive.")
            archive.extractall(into)
    except (zipfile.BadZipFile, zlib.error, EOFError) as e:
        raise DownloadError(f"{zip_path} is corrupt or not a zip archive ({e}).") from None
    for name in storage.walk_files(into):
        directory, file = os.path.split(name)
        if file == "bert_config.json" and "__MACOSX" not in directory:
            return os.path.join(into, directory) if directory else into
    raise DownloadError(f"{zip_path} holds no bert_config.json; not a Google BERT checkpoint zip.")


def convert_zip(zip_path, target, convert, expected_files=None):
    """Extracts ``zip_path``, lets ``convert(src_dir, tmp_dir)`` write the converted preset,
    and renames the result to ``target``. The work happens in a locked ``.tmp-*`` directory
    beside ``target``: removed whatever happens, and by the next writer if this process is
    killed (see `keras_bert.storage.staging_dir`)."""
    with storage.staging_dir(os.path.dirname(target), legacy=True) as work:
        src = extract_zip(zip_path, os.path.join(work, "extracted"))
        present = set(storage.listdir(src))
        missing = [f for f in (expected_files or ()) if f not in present]
        if not any(f.endswith(".index") for f in present):
            missing.append("bert_model.ckpt.index")
        if not any(".data-" in f for f in present):
            missing.append("bert_model.ckpt.data-00000-of-00001")
        if missing:
            raise DownloadError(
                f"{zip_path} lacks {', '.join(missing)} (found {sorted(present)})."
            )
        out = os.path.join(work, "converted")
        try:
            convert(src, out)
        except CheckpointError as e:  # name the archive's member, not the temporary copy
            extracted = os.path.join(work, "extracted") + os.sep
            raise DownloadError(str(e).replace(extracted, f"{zip_path}/")) from None
        try:
            os.rename(out, target)  # the cache is a local directory (see cache_root)
        except OSError:
            if not storage.isdir(target):  # another process finishing first is fine
                raise
    return target
