"""Real pre-training text, prepared offline: Wikipedia pages as documents (no keras_bert imports).

`wikipedia_documents()` reads the shortened English Wikipedia dump that ships inside the gensim
wheel (the same source as `tests.text.corpus.wikipedia_lines`) and keeps the page boundaries:
each article is one document, each non-empty line of gensim's `filter_wiki` output one
"sentence". `write_corpus` writes documents in create_pretraining_data.py's input format (one
sentence per line, a blank line between documents). `nyt_editorial_documents()` adds the NYT
editorial snippets of the vaderSentiment sdist, one editorial sentence group per document.
"""

import bz2
import os
import pathlib

from tests.text import corpus


def _cache_dir(cache_dir=None):
    return pathlib.Path(
        cache_dir or os.environ.get("KERAS_BERT_TEXT_CACHE", "/tmp/keras_bert_text_cache")
    )


def _extract_documents():
    from gensim.corpora.wikicorpus import extract_pages, filter_wiki

    documents = []
    with bz2.open(corpus.wiki_dump_path(), "rb") as f:
        for _title, text, _pageid in extract_pages(f, filter_namespaces=("0",)):
            if not text or text.lstrip().lower().startswith("#redirect"):
                continue
            lines = [line.strip() for line in filter_wiki(text).split("\n")]
            lines = [line for line in lines if line]
            if lines:
                documents.append(lines)
    return documents


def wikipedia_documents(cache_dir=None):
    """The articles of the gensim enwiki sample: a list of documents, each a list of lines."""
    cache = _cache_dir(cache_dir) / "enwiki_gensim_documents.txt"
    if not cache.is_file():
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache.with_suffix(".tmp%d" % os.getpid())
        write_corpus(tmp, _extract_documents())
        os.replace(tmp, cache)
    return read_corpus(cache)


def wikipedia_sections(cache_dir=None):
    """The same text with each article cut at its section headings (``==History==``): many
    shorter documents (2,300 from 106 articles), for statistics over many documents."""
    sections = []
    for article in wikipedia_documents(cache_dir):
        for line in article:
            if line.startswith("==") or not sections:
                sections.append([])
            sections[-1].append(line)
    return [section for section in sections if section]


def nyt_editorial_documents(cache_dir=None, sentences_per_document=8):
    """The 5,190 NYT editorial sentences of the vaderSentiment sdist, grouped in documents of
    ``sentences_per_document`` consecutive sentences (the sdist keeps no article ids)."""
    sentences = corpus.vader_lines(cache_dir)["nytEditorialSnippets"]
    return [sentences[i:i + sentences_per_document]
            for i in range(0, len(sentences), sentences_per_document)]


def write_corpus(path, documents):
    """Writes documents (lists of lines) as one line per sentence, a blank line between them."""
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n\n".join("\n".join(document) for document in documents))
        f.write("\n")


def read_corpus(path):
    """The documents of a file in that format."""
    documents = [[]]
    for line in pathlib.Path(path).read_text(encoding="utf-8").split("\n"):
        line = line.strip()
        if not line:
            if documents[-1]:
                documents.append([])
        else:
            documents[-1].append(line)
    return [d for d in documents if d]
