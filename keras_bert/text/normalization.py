"""Text cleaning and lower-casing in TensorFlow graph ops, identical to the original BERT.

The reference is `BasicTokenizer` of google-research/bert `tokenization.py` (the same steps as
Hugging Face's Python `BertTokenizer`):

1. drop U+0000, U+FFFD and control characters (categories Cc and Cf, except tab, newline and
   carriage return), map whitespace (space, tab, newline, carriage return, category Zs) to space;
2. put spaces around CJK ideographs;
3. split on whitespace (Python's `str.split()`, which also splits on U+2028 and U+2029);
4. if lower-casing: Python's `str.lower()`, then NFD, then drop category Mn (accents);
5. split off every punctuation character (ASCII 33-47, 58-64, 91-96, 123-126 and category P*).

The character classes below are built from Python's own `unicodedata` (the tables the
reference uses), written out as explicit code point ranges for RE2, so that the graph and the
reference agree on every code point. Step 4 uses ICU through `tf.strings.lower` and
`tensorflow_text.normalize_utf8`; the unit tests compare them with Python on all code points.

Invalid UTF-8 (bytes that are not valid UTF-8) is replaced by U+FFFD and hence dropped, which
is what the reference does with `bytes.decode("utf-8", "ignore")`.
"""

import functools
import sys
import unicodedata

import numpy as np
import tensorflow as tf

from keras_bert import checks

# CJK ideograph blocks, as listed in the reference's `_is_chinese_char`.
CJK_RANGES = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B820, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)


def _ranges_from_flags(flags):
    """Sorted (first, last) code point ranges where `flags[cp]` is true."""
    padded = np.concatenate([[False], np.asarray(flags, dtype=bool), [False]])
    edges = np.flatnonzero(padded[1:] != padded[:-1])  # starts and ends (exclusive), in turn
    return tuple((int(lo), int(hi) - 1) for lo, hi in zip(edges[::2], edges[1::2]))


def _re2_class(ranges):
    parts = []
    for lo, hi in ranges:
        parts.append("\\x{%X}" % lo if lo == hi else "\\x{%X}-\\x{%X}" % (lo, hi))
    return "[" + "".join(parts) + "]"


@tf.autograph.experimental.do_not_convert
@functools.lru_cache(maxsize=None)
def character_classes():
    """The reference's character classes, one bool array over all code points each
    (``removed``, ``marks``, ``whitespace``, ``split_off``), built once per process from
    `unicodedata`; `patterns` writes them as RE2 classes, and the LiteRT export's normalizer
    (`keras_bert.export.litert_text`) maps code points by them."""
    # The reference's tests, one category look-up per code point (over all code points at
    # once: surrogates are category Cs, which no test takes): `_clean_text` drops NUL, U+FFFD
    # and `_is_control` characters (Cc, Cf but tab, newline, return); `_is_whitespace` (plus
    # what `str.split()` splits on) separates words; `_is_punctuation` (ASCII
    # non-alphanumerics, category P*) and `_is_chinese_char` are split off; NFD's non-spacing
    # marks (Mn) are the accents dropped.
    n = sys.maxunicode + 1
    chars = list(map(chr, range(n)))
    # Every category name is two ASCII letters: one `S2` array of all of them, built at C speed.
    category = np.frombuffer(
        "".join(map(unicodedata.category, chars)).encode("ascii"), dtype="S2")
    isspace = np.fromiter(map(str.isspace, chars), dtype=bool, count=n)
    code = np.arange(n)
    tab_newline_return = np.isin(code, [9, 10, 13])
    removed = np.isin(code, [0, 0xFFFD]) | (
        np.isin(category, [b"Cc", b"Cf"]) & ~tab_newline_return)
    marks = category == b"Mn"
    # ASCII space is left out: it needs no rewriting, and matching it would cost time.
    whitespace = (code != 32) & (tab_newline_return | (category == b"Zs") | (isspace & ~removed))
    cjk = np.zeros(n, dtype=bool)
    for lo, hi in CJK_RANGES:
        cjk[lo : hi + 1] = True
    ascii_punctuation = ((33 <= code) & (code <= 47)) | ((58 <= code) & (code <= 64)) | (
        (91 <= code) & (code <= 96)) | ((123 <= code) & (code <= 126))
    split_off = cjk | (category.view(np.uint8)[::2] == ord("P")) | ascii_punctuation
    return {"removed": removed, "marks": marks, "whitespace": whitespace,
            "split_off": split_off}


@tf.autograph.experimental.do_not_convert
@functools.lru_cache(maxsize=None)
def patterns():
    """RE2 patterns of the character classes, built once per process from `unicodedata`."""
    classes = character_classes()
    patterns = {name: _re2_class(_ranges_from_flags(flags)) for name, flags in classes.items()}
    patterns["unicode_version"] = unicodedata.unidata_version
    return patterns


# Exactly the byte strings Python's `bytes.decode("utf-8")` accepts: no surrogates, nothing
# above U+10FFFF, no overlong forms (RE2 compiles this class into strict UTF-8 byte ranges).
VALID_UTF8 = "(?s)[\\x{0}-\\x{D7FF}\\x{E000}-\\x{10FFFF}]*"


def clean_text(text):
    """Makes the UTF-8 valid (invalid bytes -> U+FFFD) and drops the removed characters."""
    text = checks.string_tensor(text, "text")
    # Transcoding costs a quarter of the whole tokenizer; checking validity, a tenth of that.
    # Batches that are valid UTF-8 throughout (nearly all) skip it.
    text = tf.cond(
        tf.reduce_all(tf.strings.regex_full_match(text, VALID_UTF8)),
        lambda: text,
        lambda: tf.strings.unicode_transcode(
            text, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD
        ),
    )
    return tf.strings.regex_replace(text, patterns()["removed"], "")


def lower_strip_accents(text):
    """Python's `str.lower()`, NFD and dropping Mn, on cleaned text."""
    import tensorflow_text as tf_text

    text = tf.strings.lower(text, encoding="utf-8")
    text = tf_text.normalize_utf8(text, "NFD")
    return tf.strings.regex_replace(text, patterns()["marks"], "")


def split_words(text):
    """Splits cleaned text into words: on whitespace, and around punctuation and CJK.

    Every whitespace character becomes a space, every punctuation or CJK character gets a
    space on each side, and `tf.strings.split` (ASCII whitespace, no empty words) cuts there.
    Two plain rewrites and a split run ~3x faster than one `regex_split` with these classes.
    """
    p = patterns()
    text = tf.strings.regex_replace(text, p["whitespace"], " ")
    text = tf.strings.regex_replace(text, p["split_off"], " \\0 ")
    return tf.strings.split(text)


def basic_tokenize(text, lower_case=True):
    """The whole reference `BasicTokenizer` on a string tensor: returns ragged words."""
    text = clean_text(text)
    if lower_case:
        text = lower_strip_accents(text)
    return split_words(text)
