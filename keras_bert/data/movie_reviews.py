"""Movie-review sentiment: 10,605 real review snippets with human ratings, for fine-tuning.

The data is ``movieReviewSnippets_GroundTruth.txt`` of Hutto & Gilbert (ICWSM 2014), shipped
inside the ``vaderSentiment==3.3.2`` source distribution on PyPI
(``additional_resources/hutto_ICWSM_2014.tar.gz``): one line per snippet, ``id <tab> mean
rating <tab> text``, ratings from -4 to 4 averaged over 20 people. `load` labels a snippet 1
when its mean rating is positive and 0 when negative, drops the 37 rated exactly 0, and splits
the 10,568 left with a fixed seed.

The sdist is fetched once with pip (which knows this machine's package index and proxies),
checked against its sha256 and cached under ``$KERAS_BERT_HOME/datasets``
(`keras_bert.data.pypi_files`);
``KERAS_BERT_VADER_SDIST`` points at a copy fetched beforehand. pip's own configuration
(``pip.conf``, ``PIP_INDEX_URL``) says where it downloads from; ``index_url`` (an argument
of `fetch_sdist` and `load`) names another PEP 503 "simple" index, such as a mirror.
"""

import io
import os
import random
import tarfile

from keras_bert import storage
from keras_bert.data import pypi_files
from keras_bert.presets import download

PACKAGE = "vaderSentiment==3.3.2"
SDIST = "vaderSentiment-3.3.2.tar.gz"
SHA256 = "5d7c06e027fc8b99238edb0d53d970cf97066ef97654009890b83703849632f9"
OUTER_MEMBER = "vaderSentiment-3.3.2/additional_resources/hutto_ICWSM_2014.tar.gz"
INNER_MEMBER = "hutto_ICWSM_2014/movieReviewSnippets_GroundTruth.txt"
SPLITS = ("train", "dev", "test")

DatasetError = pypi_files.DatasetError
default_cache_dir = pypi_files.default_cache_dir


def fetch_sdist(cache_dir=None, index_url=None):
    """The path of the verified vaderSentiment sdist, downloading it with pip if needed.

    Args:
        cache_dir: where the sdist is kept (default ``$KERAS_BERT_HOME/datasets``).
        index_url: the package index pip downloads from (``pip download --index-url``), e.g.
            ``"https://pypi.org/simple"`` or a mirror; default: pip's own configuration.
    """
    def fetch(cache_dir, target):
        hint = (f"Offline, fetch it elsewhere with `pip download --no-deps --no-binary :all: "
                f"{PACKAGE}` and copy {SDIST} to {cache_dir}, or set KERAS_BERT_VADER_SDIST.")
        with pypi_files.pip_download(PACKAGE, cache_dir, "the movie-review data", hint,
                                     index_url=index_url, sdist=True,
                                     prefix=".tmp-vader-") as fetched:
            if os.path.basename(fetched) != SDIST:
                raise DatasetError(f"pip fetched {os.path.basename(fetched)} for {PACKAGE}, "
                                   f"not {SDIST}. Nothing was cached.")
            download.check_sha256(fetched, SHA256, what=fetched,
                                  consequence=" Nothing was cached.")
            os.replace(fetched, target)  # the cache is a local directory (pip writes there)

    return pypi_files.cached_file(SDIST, SHA256, "KERAS_BERT_VADER_SDIST", fetch, cache_dir,
                                  index_url)


def read_snippets(sdist):
    """``[(text, mean_rating)]`` of every movie-review snippet in the sdist, in file order."""
    try:
        with tarfile.open(fileobj=io.BytesIO(storage.read_bytes(sdist))) as outer:
            inner_bytes = outer.extractfile(OUTER_MEMBER).read()
        with tarfile.open(fileobj=io.BytesIO(inner_bytes)) as inner:
            raw = inner.extractfile(INNER_MEMBER).read()
    except (tarfile.TarError, KeyError, OSError, EOFError) as e:
        raise DatasetError(f"{sdist}: cannot read {OUTER_MEMBER} -> {INNER_MEMBER} ({e}).") \
            from None
    where = f"{sdist}:{INNER_MEMBER}"
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        raise DatasetError(f"{where} line {line}: not UTF-8 ({e.reason}).") from None
    snippets = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        parts = line.split("\t", 2)
        if len(parts) != 3 or not parts[2].strip():
            raise DatasetError(f"{where} line {number}: expected 'id<TAB>rating<TAB>text', got "
                               f"{line[:80]!r}.")
        try:
            rating = float(parts[1])
        except ValueError:
            raise DatasetError(f"{where} line {number}: rating {parts[1]!r} is not a number.") \
                from None
        snippets.append((parts[2].strip(), rating))
    return snippets


def load(cache_dir=None, seed=0, fractions=(0.8, 0.1, 0.1), index_url=None):
    """Movie-review sentiment, split into train, dev and test.

    Returns ``{"train": (texts, labels), "dev": ..., "test": ...}``: lists of str and lists of
    int (1 positive, 0 negative), shuffled with ``random.Random(seed)`` and cut by
    ``fractions`` (the test split takes the rest). ``cache_dir`` and ``index_url``: where the
    sdist is kept and fetched from, as for `fetch_sdist`.

    Example (needs the sdist: it is fetched from PyPI on first use):

    >>> splits = load()                                  # doctest: +SKIP
    >>> {name: len(texts) for name, (texts, _) in splits.items()}   # doctest: +SKIP
    {'train': 8454, 'dev': 1057, 'test': 1057}
    """
    if len(fractions) != 3 or any(f <= 0 for f in fractions) or abs(sum(fractions) - 1) > 1e-6:
        raise ValueError(f"fractions must be three positive shares of 1 (train, dev, test); got "
                         f"{fractions!r}.")
    sdist = fetch_sdist(cache_dir, index_url=index_url)
    examples = [(text, int(rating > 0)) for text, rating in read_snippets(sdist) if rating != 0]
    random.Random(seed).shuffle(examples)
    n = len(examples)
    cut1 = int(fractions[0] * n)
    cut2 = int((fractions[0] + fractions[1]) * n)
    parts = (examples[:cut1], examples[cut1:cut2], examples[cut2:])
    return {name: ([t for t, _ in part], [label for _, label in part])
            for name, part in zip(SPLITS, parts)}


def sentiment_pairs(texts, labels, num_pairs, seed=0):
    """A sentence-pair task from one split: pairs of snippets labelled 1 when both have the
    same sentiment, 0 otherwise, half of each, drawn with ``random.Random(seed)``.

    Returns ``((texts_a, texts_b), pair_labels)``, the form a `BertClassifier` with a
    `BertPreprocessor` takes for pairs.

    >>> (a, b), y = sentiment_pairs(["good", "fine", "bad", "awful"], [1, 1, 0, 0], 4)
    >>> len(a), len(b), sorted(y)
    (4, 4, [0, 0, 1, 1])
    """
    by_label = {0: [t for t, y in zip(texts, labels) if y == 0],
                1: [t for t, y in zip(texts, labels) if y == 1]}
    if min(len(v) for v in by_label.values()) < 2:
        raise ValueError("sentiment_pairs needs at least two snippets of each sentiment.")
    rng = random.Random(seed)
    a, b, y = [], [], []
    for i in range(num_pairs):
        same = i % 2 == 0
        first = rng.choice((0, 1))
        second = first if same else 1 - first
        i1 = rng.randrange(len(by_label[first]))
        i2 = rng.randrange(len(by_label[second]))
        if same and i2 == i1:  # never a snippet paired with itself
            i2 = (i2 + 1) % len(by_label[second])
        x1, x2 = by_label[first][i1], by_label[second][i2]
        a.append(x1)
        b.append(x2)
        y.append(int(same))
    order = list(range(num_pairs))
    rng.shuffle(order)
    return ([a[i] for i in order], [b[i] for i in order]), [y[i] for i in order]
