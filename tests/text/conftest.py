"""Fixtures of the text tests: real text and the reference tokenizers."""

import sys

import pytest

from tests.text import corpus


@pytest.fixture(scope="session")
def wiki_lines():
    lines = corpus.wikipedia_lines()
    assert len(lines) >= 2000, len(lines)
    return lines


@pytest.fixture(scope="session")
def minilm_vocab(minilm_path):
    path = minilm_path / "vocab.txt"
    assert path.is_file(), path
    return str(path)


@pytest.fixture(scope="session")
def google_tokenization(google_bert_path):
    """google-research/bert's own `tokenization` module (PyPI bert-tensorflow==1.0.4)."""
    import absl.flags
    import tensorflow as tf

    if str(google_bert_path) not in sys.path:
        sys.path.insert(0, str(google_bert_path))
    from bert import tokenization

    tokenization.tf = tf.compat.v1  # it reads the vocab with tf.gfile
    absl.flags.FLAGS.mark_as_parsed()
    return tokenization


@pytest.fixture(scope="session")
def google_tokenizers(google_tokenization, minilm_vocab):
    return {
        lower: google_tokenization.FullTokenizer(minilm_vocab, do_lower_case=lower)
        for lower in (True, False)
    }


@pytest.fixture(scope="session")
def hf_tokenizers(minilm_vocab):
    """Hugging Face's Python BERT tokenizer (transformers 5 names it BertTokenizerLegacy)."""
    try:
        from transformers.models.bert.tokenization_bert_legacy import BertTokenizerLegacy as cls
    except ImportError:  # transformers 4: the Python one is BertTokenizer itself
        from transformers import BertTokenizer as cls
    return {lower: cls(minilm_vocab, do_lower_case=lower) for lower in (True, False)}
