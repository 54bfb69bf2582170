"""Wikipedia retrieval pairs: the dump fetched from gensim's wheel with pip (from a package
index on 127.0.0.1, never the internet), verified, cleaned to prose, split by article."""

import bz2
import os
import zipfile

import pytest

from keras_bert.data import wikipedia_pairs
from keras_bert.presets import download
from tests.text.corpus import wiki_dump_path

WHEEL = "gensim-4.4.0-py3-none-any.whl"


@pytest.fixture(scope="module")
def dump():
    """The real dump, from the gensim installed with the tests (the same file as the wheel's)."""
    return str(wiki_dump_path())


def _wheel(path, members):
    """A wheel of gensim 4.4.0 (the metadata pip reads) holding ``members``."""
    info = "gensim-4.4.0.dist-info/"
    members = {**members,
               info + "METADATA": "Metadata-Version: 2.1\nName: gensim\nVersion: 4.4.0\n",
               info + "WHEEL": "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
               info + "RECORD": ""}
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


@pytest.fixture
def gensim_index(dump, tmp_path, package_index, monkeypatch):
    """An index serving a gensim wheel whose only file is the real dump."""
    monkeypatch.delenv(wikipedia_pairs.ENV, raising=False)
    with open(dump, "rb") as f:
        wheel = _wheel(tmp_path / WHEEL, {wikipedia_pairs.MEMBER: f.read()})
    return package_index("gensim", wheel)


def test_fetch_keeps_only_the_verified_dump(tmp_path, gensim_index):
    index_url, requests = gensim_index
    cache = tmp_path / "cache"
    path = wikipedia_pairs.fetch_dump(str(cache), index_url=index_url)
    assert path == str(cache / wikipedia_pairs.DUMP)
    assert sorted(os.listdir(cache)) == [wikipedia_pairs.DUMP]  # no wheel, no leftovers
    assert download.check_sha256(path, wikipedia_pairs.SHA256) is None
    assert requests == ["/simple/gensim/", f"/files/{WHEEL}"]
    assert wikipedia_pairs.fetch_dump(str(cache), index_url=index_url) == path  # cached
    assert len(requests) == 2


def test_an_index_without_gensim_is_a_dataset_error(tmp_path, gensim_index):
    index_url, _ = gensim_index
    with pytest.raises(wikipedia_pairs.DatasetError,
                       match=r"(?s)Could not download gensim==4\.4\.0 \(the Wikipedia sample\) "
                             r"with pip from .*/empty: .*No matching distribution.*Offline, "
                             r"fetch the wheel elsewhere"):
        wikipedia_pairs.fetch_dump(str(tmp_path / "cache"), index_url=index_url + "/empty")
    assert os.listdir(tmp_path / "cache") == []


def test_a_wheel_without_the_dump_or_with_another_caches_nothing(tmp_path, package_index,
                                                                 monkeypatch):
    monkeypatch.delenv(wikipedia_pairs.ENV, raising=False)
    index_url, _ = package_index("gensim", _wheel(tmp_path / WHEEL, {"gensim/x.py": b""}))
    with pytest.raises(wikipedia_pairs.DatasetError, match=r"cannot read gensim/test/test_data/"
                                                           r"enwiki.*Nothing was cached"):
        wikipedia_pairs.fetch_dump(str(tmp_path / "cache"), index_url=index_url)
    assert os.listdir(tmp_path / "cache") == []


def test_a_wheel_with_another_dump_caches_nothing(tmp_path, package_index, monkeypatch):
    monkeypatch.delenv(wikipedia_pairs.ENV, raising=False)
    wheel = _wheel(tmp_path / WHEEL, {wikipedia_pairs.MEMBER: bz2.compress(b"<mediawiki/>")})
    index_url, _ = package_index("gensim", wheel)
    with pytest.raises(download.DownloadError, match=r"sha256 of gensim/test/test_data/.* of "
                                                     r"gensim-4\.4\.0-py3-none-any\.whl is .*"
                                                     r"Nothing was cached"):
        wikipedia_pairs.fetch_dump(str(tmp_path / "cache"), index_url=index_url)
    assert os.listdir(tmp_path / "cache") == []


def test_a_given_copy_is_verified(tmp_path, dump, monkeypatch):
    monkeypatch.setenv(wikipedia_pairs.ENV, dump)
    assert wikipedia_pairs.fetch_dump(str(tmp_path / "unused")) == dump
    bad = tmp_path / "bad.bz2"
    bad.write_bytes(b"not the dump")
    monkeypatch.setenv(wikipedia_pairs.ENV, str(bad))
    with pytest.raises(download.DownloadError, match="sha256 of .*bad.bz2 is"):
        wikipedia_pairs.fetch_dump()
    monkeypatch.setenv(wikipedia_pairs.ENV, str(tmp_path / "missing.bz2"))
    with pytest.raises(wikipedia_pairs.DatasetError, match="missing.bz2 is not a file"):
        wikipedia_pairs.fetch_dump()


def test_an_index_url_that_is_no_url_is_refused():
    with pytest.raises(ValueError, match=r"index_url must be the URL of a package index"):
        wikipedia_pairs.fetch_dump(index_url="pypi.org/simple")


def test_markup_is_removed_down_to_prose():
    text = (
        "{{Infobox country|name={{lang|fr|Andorre}}}}\n"
        "<!-- a comment -->\n"
        "'''Andorra''' is a [[Sovereign state|country]] in the [[Pyrenees]]<ref name=a>A "
        "[http://example.org source]</ref> between [[France]] and [[Spain]], with "
        "''Catalan''&nbsp;as its language.[[File:Flag.svg|thumb|The [[flag]] of it]]\n"
        "== History ==\n"
        "* a list item that is long enough to count as a paragraph if it were prose text\n"
        "{| class=wikitable\n| a table cell || with many words in it that never count here\n|}\n"
        "See [https://example.org the page] for more; [[Category:Europe]]")
    assert wikipedia_pairs.wikitext_paragraphs(text, min_words=5) == [
        'Andorra is a country in the Pyrenees between France and Spain, with "Catalan" as its '
        "language.",
        "See the page for more;"]


def test_real_articles_and_pairs(dump):
    articles = wikipedia_pairs.read_articles(dump)
    assert len(articles) == 106 and articles[0][0] == "Anarchism"
    paragraphs = wikipedia_pairs.wikitext_paragraphs(articles[0][1])
    assert paragraphs[0].startswith("Anarchism is a political philosophy that advocates "
                                    "self-governed societies")
    assert not any(mark in p for p in paragraphs for mark in ("{{", "[[", "<ref", "'''"))
    pairs = wikipedia_pairs.paragraph_pairs(paragraphs)
    query, passage = pairs[0]
    assert paragraphs[0] == f"{query} {passage}"


def test_splits_are_by_article_and_fixed_by_the_seed(dump, monkeypatch):
    monkeypatch.setenv(wikipedia_pairs.ENV, dump)
    splits = wikipedia_pairs.load()
    assert {name: len(queries) for name, (queries, _) in splits.items()} == {
        "train": 3242, "test": 846}
    assert splits["test"][0][0].startswith("The aardvark ")  # the seed's first test article
    assert splits["train"][0][0].startswith("International Atomic Time (TAI, ")
    assert not set(splits["train"][1]) & set(splits["test"][1])
    assert wikipedia_pairs.load(seed=1)["test"][0] != splits["test"][0]
    with pytest.raises(ValueError, match="test_fraction must be between 0 and 1"):
        wikipedia_pairs.load(test_fraction=1)
