"""Real text for the tokenizer tests and benchmarks, prepared offline (no keras_bert imports).

`wikipedia_lines()` turns the shortened English Wikipedia dump that ships inside the gensim
wheel into plain prose lines with gensim's own `extract_pages` + `filter_wiki`, and caches them
as one UTF-8 file (one line per line) so the work is done once per cache directory.
"""

import bz2
import os
import pathlib

WIKI_DUMP = "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"


def wiki_dump_path():
    import gensim

    path = pathlib.Path(gensim.__file__).parent / "test" / "test_data" / WIKI_DUMP
    if not path.is_file():
        raise FileNotFoundError(f"the gensim wheel has no {WIKI_DUMP} at {path}")
    return path


def _extract_lines():
    from gensim.corpora.wikicorpus import extract_pages, filter_wiki

    lines = []
    with bz2.open(wiki_dump_path(), "rb") as f:
        for title, text, _pageid in extract_pages(f, filter_namespaces=("0",)):
            if not text or text.lstrip().lower().startswith("#redirect"):
                continue
            for line in filter_wiki(text).split("\n"):
                line = line.strip()
                if line:
                    lines.append(line)
    return lines


def wikipedia_lines(cache_dir=None):
    """Returns the non-empty prose lines (str) of the gensim enwiki sample, cached on disk."""
    cache_dir = pathlib.Path(
        cache_dir or os.environ.get("KERAS_BERT_TEXT_CACHE", "/tmp/keras_bert_text_cache")
    )
    cache = cache_dir / "enwiki_gensim_lines.txt"
    if cache.is_file():
        return cache.read_text(encoding="utf-8").split("\n")
    lines = _extract_lines()
    # No line contains "\n" (we split on it); other line breaks such as U+2028 stay inside lines.
    cache_dir.mkdir(parents=True, exist_ok=True)
    tmp = cache.with_suffix(".tmp%d" % os.getpid())
    tmp.write_text("\n".join(lines), encoding="utf-8")
    os.replace(tmp, cache)
    return lines


def _gensim_test_file(name):
    import gensim

    path = pathlib.Path(gensim.__file__).parent / "test" / "test_data" / name
    if not path.is_file():
        raise FileNotFoundError(f"the gensim wheel has no {name} at {path}")
    return path


def russian_novel_lines():
    """Crime and Punishment in Russian (a chapter; gensim's test data), non-empty lines."""
    text = _gensim_test_file("crime-and-punishment.txt").read_text(encoding="utf-8")
    return [line.strip() for line in text.split("\n") if line.strip()]


def bulgarian_wikipedia_lines():
    """The shortened Bulgarian Wikipedia dump in gensim's test data, as prose lines."""
    from gensim.corpora.wikicorpus import extract_pages, filter_wiki

    lines = []
    with bz2.open(_gensim_test_file("bgwiki-latest-pages-articles-shortened.xml.bz2"), "rb") as f:
        for _title, text, _pageid in extract_pages(f, filter_namespaces=("0",)):
            for line in filter_wiki(text or "").split("\n"):
                if line.strip():
                    lines.append(line.strip())
    return lines


def vader_lines(cache_dir=None):
    """Tweets, movie/Amazon reviews and NYT editorial sentences (Hutto & Gilbert, ICWSM 2014)
    plus VADER's emoji lexicon, from the PyPI sdist of vaderSentiment==3.3.2.

    Downloads the sdist with pip into the cache dir once; raises if that fails (offline).
    """
    import subprocess
    import sys
    import tarfile

    cache_dir = pathlib.Path(
        cache_dir or os.environ.get("KERAS_BERT_TEXT_CACHE", "/tmp/keras_bert_text_cache")
    )
    # A copy fetched beforehand (e.g. by an install step) is used as it is.
    sdist = pathlib.Path(
        os.environ.get("KERAS_BERT_VADER_SDIST", cache_dir / "vaderSentiment-3.3.2.tar.gz")
    )
    if not sdist.is_file():
        cache_dir.mkdir(parents=True, exist_ok=True)
        result = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
             "vaderSentiment==3.3.2", "-d", str(cache_dir)],
            capture_output=True, text=True,
        )
        if result.returncode != 0 or not sdist.is_file():
            raise RuntimeError(
                "could not download vaderSentiment==3.3.2 (PyPI sdist) into "
                f"{cache_dir}; offline, put the file there or point KERAS_BERT_VADER_SDIST "
                "at a copy: " + result.stderr[-500:]
            )
    corpora = {}
    with tarfile.open(sdist) as outer:
        inner_bytes = outer.extractfile(
            "vaderSentiment-3.3.2/additional_resources/hutto_ICWSM_2014.tar.gz").read()
        emoji = outer.extractfile("vaderSentiment-3.3.2/vaderSentiment/emoji_utf8_lexicon.txt")
        corpora["vader_emoji_lexicon"] = [
            line.strip() for line in emoji.read().decode("utf-8").split("\n") if line.strip()
        ]
    import io

    with tarfile.open(fileobj=io.BytesIO(inner_bytes)) as inner:
        for member in inner.getmembers():
            if member.name.endswith("_GroundTruth.txt"):
                raw = inner.extractfile(member).read().decode("utf-8", errors="replace")
                name = pathlib.Path(member.name).name.replace("_GroundTruth.txt", "")
                # id <tab> score <tab> text
                corpora[name] = [
                    line.split("\t", 2)[2].strip() for line in raw.splitlines()
                    if line.count("\t") >= 2 and line.split("\t", 2)[2].strip()
                ]
    return corpora
