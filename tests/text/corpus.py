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
