"""squad_text: many strings through the in-graph tokenizer, as FullTokenizer / BasicTokenizer."""

import pytest

from keras_bert.data.squad import tokenization as squad_text
from keras_bert.data.squad.tokenization import basic_words, wordpiece_ids


def test_wordpiece_ids_as_full_tokenizer(tokenizers, full_tokenizers, wiki_lines):
    words = [w for line in wiki_lines[:200] for w in line.split()] + ["", "Ærø", "北京", "x" * 300]
    for lower in (True, False):
        ids = wordpiece_ids(tokenizers[lower], words)
        full = full_tokenizers[lower]
        assert len(ids) == len(set(words))
        for word in set(words):
            assert ids[word] == full.convert_tokens_to_ids(full.tokenize(word)), word


def test_basic_words_as_basic_tokenizer(google_squad, tokenizers, wiki_lines):
    texts = wiki_lines[:100] + ["Steve Smith's", "a " + "y" * 250 + "! b", "\u200b"]
    for lower in (True, False):
        basic = google_squad.tokenization.BasicTokenizer(do_lower_case=lower)
        words = basic_words(tokenizers[lower], texts)
        assert all(words[text] == basic.tokenize(text) for text in texts)


def test_chunks_give_the_same_result(tokenizers, monkeypatch):
    words = ["The", "quick", "brown", "fox", "jumps", "the", "fox", "Ünïcödé"]
    whole = wordpiece_ids(tokenizers[True], words), basic_words(tokenizers[True], words)
    monkeypatch.setattr(squad_text, "_CHUNK", 3)
    assert (wordpiece_ids(tokenizers[True], words), basic_words(tokenizers[True], words)) == whole
    assert wordpiece_ids(tokenizers[True], []) == {}


def test_bad_texts(tokenizers):
    with pytest.raises(ValueError, match=r"text 'ab\\ud800' is not valid Unicode: lone "
                                         r"surrogate '\\ud800' at character 2"):
        wordpiece_ids(tokenizers[True], ["ok", "ab\ud800"])
    with pytest.raises(TypeError, match=r"expected a str, got bytes: b'ab'"):
        basic_words(tokenizers[True], [b"ab"])
    with pytest.raises(TypeError, match="tokenizer must be a keras_bert.text.BertTokenizer, "
                                        "got FullTokenizer"):
        wordpiece_ids(type("FullTokenizer", (), {})(), ["a"])
