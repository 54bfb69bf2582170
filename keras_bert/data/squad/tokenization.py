"""Many strings through `keras_bert.text.BertTokenizer` in few TensorFlow calls.

SQuAD tokenizes every whitespace word of every paragraph on its own (run_squad.py calls the
tokenizer once per word). Here the distinct strings go through the in-graph tokenizer in
chunks, and the results are handed back per string as Python lists.
"""

import tensorflow as tf

from keras_bert.text import BertTokenizer

_CHUNK = 32768  # strings per TensorFlow call
# get_final_text uses BERT's BasicTokenizer, which never turns a long word into [UNK] as
# BertTokenizer.words does.
_NO_WORD_LIMIT = 2**20
_UNK = "[UNK]"


def check_tokenizer(tokenizer):
    if not isinstance(tokenizer, BertTokenizer):
        raise TypeError(
            "tokenizer must be a keras_bert.text.BertTokenizer, got "
            f"{type(tokenizer).__name__}"
        )
    return tokenizer


def _encode(texts):
    encoded = []
    for text in texts:
        try:
            encoded.append(text.encode("utf-8"))
        except UnicodeEncodeError as error:  # a lone surrogate such as "\ud800"
            raise ValueError(
                f"text {text[:80]!r} is not valid Unicode: lone surrogate "
                f"{text[error.start]!r} at character {error.start}"
            ) from None
        except AttributeError:
            raise TypeError(f"expected a str, got {type(text).__name__}: {text!r}") from None
    return tf.constant(encoded, dtype=tf.string)


def _chunks(texts):
    unique = list(dict.fromkeys(texts))
    for start in range(0, len(unique), _CHUNK):
        yield unique[start : start + _CHUNK]


def _rows(ragged):
    """Ragged [n, (k)] -> n Python lists."""
    values = ragged.flat_values.numpy().tolist()
    splits = ragged.row_splits.numpy().tolist()
    return [values[a:b] for a, b in zip(splits[:-1], splits[1:])]


def wordpiece_ids(tokenizer, texts):
    """Strings -> {string: [WordPiece ids]} (basic tokenization + WordPiece, as FullTokenizer).

    >>> wordpiece_ids(BertTokenizer.from_preset("tiny_random"), ["The foxes.", "fox", "fox"])
    {'The foxes.': [13, 68, 81, 5], 'fox': [68]}
    """
    check_tokenizer(tokenizer)
    out = {}
    for chunk in _chunks(texts):
        out.update(zip(chunk, _rows(tokenizer.tokenize(_encode(chunk)))))
    return out


def basic_words(tokenizer, texts):
    """Strings -> {string: [words]}: BERT's BasicTokenizer with the tokenizer's casing.

    >>> tokenizer = BertTokenizer.from_preset("tiny_random", max_chars_per_word=5)
    >>> basic_words(tokenizer, ["Steve Smith's", "Ça"])
    {"Steve Smith's": ['steve', 'smith', "'", 's'], 'Ça': ['ca']}
    """
    check_tokenizer(tokenizer)
    out = _words(tokenizer, texts)
    # `words` turns a word over max_chars_per_word into [UNK] (text never gives that word:
    # "[" and "]" split off); BasicTokenizer keeps it. Those few texts go again, unlimited.
    long_words = [text for text, words in out.items() if _UNK in words]
    if long_words:
        unlimited = BertTokenizer(
            tokenizer.vocabulary,
            do_lower_case=tokenizer.do_lower_case,
            max_chars_per_word=_NO_WORD_LIMIT,
        )
        out.update(_words(unlimited, long_words))
    return out


def _words(tokenizer, texts):
    out = {}
    for chunk in _chunks(texts):
        rows = _rows(tokenizer.words(_encode(chunk)))
        out.update((text, [w.decode("utf-8") for w in row]) for text, row in zip(chunk, rows))
    return out
