"""Real English text for pre-training demos and tests, in the original corpus format.

Two sources that need no network beyond PyPI:

* `wikipedia_documents`: the English Wikipedia sample that ships in gensim's wheel
  (``gensim/test/test_data/enwiki-latest-pages-articles1.xml-p000000010p000030302-
  shortened.bz2``, 106 articles), cleaned with gensim's own ``extract_pages`` and
  ``filter_wiki``; one document per article.
* `editorial_documents`: the 5,190 New York Times editorial snippets of Hutto & Gilbert
  (ICWSM 2014) in the vaderSentiment 3.3.2 sdist (`keras_bert.data.movie_reviews` fetches
  and caches it); one document per snippet.

`write_corpus` writes documents as ``create_pretraining_data.py`` reads them: one sentence
per line (`split_sentences`), a blank line between documents.
"""

import bz2
import io
import os
import re
import tarfile

from keras_bert import storage
from keras_bert.data import movie_reviews

WIKI_DUMP = "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
EDITORIALS = "hutto_ICWSM_2014/nytEditorialSnippets_GroundTruth.txt"
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")


def split_sentences(text):
    """Splits prose into sentences at ``.``, ``!`` or ``?`` followed by a capital or digit.

    >>> split_sentences("BERT reads text. It was trained in 2018! Was it? yes.")
    ['BERT reads text.', 'It was trained in 2018!', 'Was it? yes.']
    """
    return [s.strip() for s in _SENTENCE_END.split(text.strip()) if s.strip()]


def wikipedia_documents(min_sentences=2):
    """The articles of gensim's English Wikipedia sample as lists of sentences (articles of
    fewer than ``min_sentences`` sentences, redirects and lists are dropped)."""
    try:
        import gensim
        from gensim.corpora.wikicorpus import extract_pages, filter_wiki
    except ImportError:
        raise ImportError("The Wikipedia sample comes from gensim's wheel: pip install gensim "
                          "(keras_bert's [test] extra has it)") from None
    path = os.path.join(os.path.dirname(gensim.__file__), "test", "test_data", WIKI_DUMP)
    documents = []
    with bz2.open(path, "rb") as f:
        for _title, text, _page in extract_pages(f, filter_namespaces=("0",)):
            if not text or text.lstrip().lower().startswith("#redirect"):
                continue
            sentences = []
            for paragraph in filter_wiki(text).split("\n"):
                paragraph = paragraph.replace("'''", "").replace("''", '"').strip()
                # Prose only: no table rows, list bullets, headings or file captions.
                if len(paragraph) < 40 or paragraph[0] in "|!*#=:{" or paragraph.count(" ") < 6:
                    continue
                sentences += [s for s in split_sentences(paragraph) if len(s.split()) >= 3]
            if len(sentences) >= min_sentences:
                documents.append(sentences)
    return documents


def editorial_documents(cache_dir=None):
    """The NYT editorial snippets of the vaderSentiment sdist, each a list of sentences."""
    sdist = movie_reviews.fetch_sdist(cache_dir)
    with tarfile.open(sdist) as outer:
        inner = outer.extractfile(movie_reviews.OUTER_MEMBER).read()
    with tarfile.open(fileobj=io.BytesIO(inner)) as archive:
        raw = archive.extractfile(EDITORIALS).read().decode("utf-8", "replace")
    documents = []
    for line in raw.splitlines():
        parts = line.split("\t", 2)
        if len(parts) == 3 and parts[2].strip():
            documents.append(split_sentences(parts[2]))
    return documents


def write_corpus(path, documents):
    """Writes ``documents`` (lists of sentences) to ``path``: one sentence per line, a blank
    line between documents (atomically; local paths, gs://, ram://). Returns the number of
    sentences written."""
    count = 0
    with storage.atomic_path(path) as tmp, storage.create(tmp) as f:
        for document in documents:
            for sentence in document:
                f.write((" ".join(sentence.split()) + "\n").encode("utf-8"))
                count += 1
            f.write(b"\n")
    return count
