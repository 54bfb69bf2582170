"""Retrieval pairs from real Wikipedia prose: each paragraph's first sentence (the query)
against the rest of the paragraph (its passage), to train and evaluate text embedders.

The text is the shortened English Wikipedia dump that ships inside gensim's wheel on PyPI
(``gensim/test/test_data/enwiki-latest-pages-articles1.xml-p000000010p000030302-
shortened.bz2``: 106 articles, from "Anarchism" to "Ernest Hemingway"). `fetch_dump` gets
it once with ``pip download --no-deps gensim`` (`keras_bert.data.pypi_files`), checks the
dump's sha256 and keeps only the dump (1.7 MB) in the cache (``$KERAS_BERT_HOME/datasets``);
``KERAS_BERT_WIKI_DUMP`` points at a copy fetched beforehand. gensim itself is not needed:
`read_articles` parses the XML and `wikitext_paragraphs` strips the markup (templates,
tables, references, links, files, lists and headings) down to prose paragraphs.

`load` splits the articles (not the paragraphs: no article is in two splits) with a fixed
seed and returns the pairs of each split; `load(...)["test"]` is the held-out set.
"""

import bz2
import html
import io
import os
import random
import re
import xml.etree.ElementTree as ElementTree
import zipfile

from keras_bert import storage
from keras_bert.data import pypi_files
from keras_bert.data.pretraining.corpus import split_sentences
from keras_bert.presets import download

PACKAGE = "gensim==4.4.0"
DUMP = "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
MEMBER = "gensim/test/test_data/" + DUMP
SHA256 = "a53f4648dec40467ebdcbc7a1307eddb51fe6e28e9309f6ebde81ba0d04bea2d"
ENV = "KERAS_BERT_WIKI_DUMP"
SPLITS = ("train", "test")

DatasetError = pypi_files.DatasetError

_COMMENT = re.compile(r"<!--.*?-->", re.S)
_REF = re.compile(r"<ref[^>/]*/>|<ref[^>]*>.*?</ref>", re.S | re.I)
_DROPPED_TAGS = re.compile(r"<(math|gallery|timeline|score|syntaxhighlight|code|pre)\b.*?</\1>",
                           re.S | re.I)
_TAG = re.compile(r"<[^<>]*>")
_TEMPLATE = re.compile(r"\{\{[^{}]*\}\}")
_TABLE = re.compile(r"\{\|[^{}]*?\|\}", re.S)
_LINK = re.compile(r"\[\[([^\[\]|]*)(?:\|([^\[\]]*))?\]\]")
_EXTERNAL = re.compile(r"\[(?:https?:)?//[^\s\]]*\s*([^\]]*)\]")
_NOT_PROSE = tuple("=*#:;|!{}")


def fetch_dump(cache_dir=None, index_url=None):
    """The path of the verified Wikipedia dump, downloading gensim's wheel with pip if needed.

    Args:
        cache_dir: where the dump is kept (default ``$KERAS_BERT_HOME/datasets``).
        index_url: the package index pip downloads from (``pip download --index-url``), e.g.
            ``"https://pypi.org/simple"`` or a mirror; default: pip's own configuration.
    """
    def fetch(cache_dir, target):
        hint = (f"Offline, fetch the wheel elsewhere with `pip download --no-deps {PACKAGE}`, "
                f"copy its {MEMBER} to {cache_dir}, or set {ENV} to it.")
        with pypi_files.pip_download(PACKAGE, cache_dir, "the Wikipedia sample", hint,
                                     index_url=index_url, prefix=".tmp-gensim-") as wheel:
            try:
                with zipfile.ZipFile(wheel) as archive:
                    data = archive.read(MEMBER)
            except (zipfile.BadZipFile, KeyError, OSError) as e:
                raise DatasetError(f"{os.path.basename(wheel)}: cannot read {MEMBER} ({e}). "
                                   f"Nothing was cached.") from None
            extracted = os.path.join(os.path.dirname(wheel), DUMP)
            storage.write_bytes(extracted, data)
            download.check_sha256(extracted, SHA256,
                                  what=f"{MEMBER} of {os.path.basename(wheel)}",
                                  consequence=" Nothing was cached.")
            os.replace(extracted, target)  # the cache is a local directory (pip writes there)

    return pypi_files.cached_file(DUMP, SHA256, ENV, fetch, cache_dir, index_url)


def read_articles(dump):
    """``[(title, wikitext)]`` of the articles (namespace 0, no redirects) in ``dump``."""
    articles = []
    try:
        with bz2.open(io.BytesIO(storage.read_bytes(dump))) as f:
            for _, element in ElementTree.iterparse(f):
                if not element.tag.endswith("}page"):
                    continue
                fields = {child.tag.rsplit("}", 1)[-1]: child for child in element}
                revision = fields.get("revision")
                text = revision.find("{*}text") if revision is not None else None
                if (fields.get("ns") is not None and fields["ns"].text == "0"
                        and "redirect" not in fields and text is not None and text.text):
                    articles.append((fields["title"].text, text.text))
                element.clear()
    except (OSError, EOFError, ElementTree.ParseError) as e:
        raise DatasetError(f"{dump}: cannot read the Wikipedia dump ({e}).") from None
    return articles


def wikitext_paragraphs(wikitext, min_words=20):
    """The prose paragraphs of an article's wikitext, markup removed: no templates, tables,
    references, files, categories, lists, headings or paragraphs under ``min_words`` words.

    >>> wikitext_paragraphs("{{Infobox}}'''BERT''' is a [[language model|model]]<ref>x</ref> "
    ...                     "for [[text]].\\n== History ==\\n* a list", min_words=3)
    ['BERT is a model for text.']
    """
    text = _COMMENT.sub("", wikitext)
    text = _REF.sub("", text)
    text = _DROPPED_TAGS.sub("", text)
    text = _repeat(_TEMPLATE, "", text)
    text = _repeat(_TABLE, "", text)
    text = _repeat(_LINK, _link_text, text)
    text = _EXTERNAL.sub(r"\1", text)
    text = _TAG.sub("", text)
    text = html.unescape(text.replace("'''", "").replace("''", '"')).replace("\xa0", " ")
    paragraphs = []
    for line in text.split("\n"):
        line = " ".join(line.split())
        if line and not line.startswith(_NOT_PROSE) and len(line.split()) >= min_words:
            paragraphs.append(line)
    return paragraphs


def _repeat(pattern, replacement, text):
    """``pattern.sub`` until nothing changes (nested markup goes from the inside out)."""
    while True:
        text, count = pattern.subn(replacement, text)
        if not count:
            return text


def _link_text(match):
    target, label = match.group(1), match.group(2)
    if ":" in target:  # File:, Image:, Category:, other languages' pages
        return ""
    return label if label is not None else target


def paragraph_pairs(paragraphs, min_query_words=5, min_passage_words=10):
    """``(query, passage)`` for each paragraph of two sentences or more: its first sentence
    and the rest.

    >>> paragraph_pairs(["Paris is the capital of France. It is on the Seine, a river that "
    ...                  "runs north."])
    [('Paris is the capital of France.', 'It is on the Seine, a river that runs north.')]
    """
    pairs = []
    for paragraph in paragraphs:
        sentences = split_sentences(paragraph)
        if len(sentences) < 2:
            continue
        query, passage = sentences[0], " ".join(sentences[1:])
        if len(query.split()) >= min_query_words and len(passage.split()) >= min_passage_words:
            pairs.append((query, passage))
    return pairs


def load(cache_dir=None, seed=0, test_fraction=0.2, index_url=None):
    """Query-passage pairs of the Wikipedia sample, split by article.

    Returns ``{"train": (queries, passages), "test": (queries, passages)}`` (lists of str,
    aligned): the articles are shuffled with ``random.Random(seed)``, the last
    ``test_fraction`` of them (at least one) are the test split. ``cache_dir`` and
    ``index_url``: where the dump is kept and fetched from, as for `fetch_dump`.

    Example (needs the dump: gensim's wheel is fetched from PyPI on first use):

    >>> splits = load()                                        # doctest: +SKIP
    >>> {name: len(queries) for name, (queries, _) in splits.items()}   # doctest: +SKIP
    """
    if not 0 < test_fraction < 1:
        raise ValueError(f"test_fraction must be between 0 and 1, got {test_fraction!r}.")
    articles = read_articles(fetch_dump(cache_dir, index_url=index_url))
    random.Random(seed).shuffle(articles)
    cut = len(articles) - max(1, round(test_fraction * len(articles)))
    out = {}
    for name, part in zip(SPLITS, (articles[:cut], articles[cut:])):
        pairs = [pair for _, text in part for pair in paragraph_pairs(wikitext_paragraphs(text))]
        out[name] = ([q for q, _ in pairs], [p for _, p in pairs])
    return out
