"""The graph-op basic tokenization against google-research/bert's, on every code point."""

import sys
import unicodedata

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.text import normalization

# Where TensorFlow's ICU and Python 3.11's Unicode 14 tables disagree (found by the exhaustive
# test below, which pins the list so that any change shows):
# - `tf.strings.lower` (older ICU data) does not lower-case capitals added in Unicode 14;
# - `tensorflow_text.normalize_utf8` (newer ICU data) decomposes characters that are still
#   unassigned (Cn) in Unicode 14.
# None of these characters is in a BERT vocabulary, so a word holding one is [UNK] either way
# (test_tokenizer checks the ids on them).
ICU_UNICODE_VERSION_DIFFERENCES = frozenset(
    [0x2C2F, 0xA7C0, 0xA7D0, 0xA7D6, 0xA7D8]
    + [c for c in range(0x10570, 0x10596) if c not in (0x1057B, 0x1058B, 0x10593)]
    + [0x105C9, 0x105E4, 0x11383, 0x11385, 0x1138E, 0x11391, 0x113C5, 0x113C7, 0x113C8]
    + list(range(0x16121, 0x16129))
    + [0x16D68, 0x16D69, 0x16D6A]
)

# Characters new in Unicode 14 that are cased or case-ignorable there, unknown to the ICU of
# `tf.strings.lower`: next to one of them, a capital sigma's final form can differ.
ICU_CASE_CONTEXT_DIFFERENCES = (
    (2184, 2184), (2192, 2193), (2200, 2207), (2249, 2258), (3132, 3132), (5940, 5940),
    (6159, 6159), (6849, 6862), (7674, 7674), (11359, 11359), (42945, 42945), (42961, 42961),
    (42963, 42963), (42965, 42965), (42967, 42967), (42969, 42969), (42994, 42996),
    (64450, 64450), (66967, 66977), (66979, 66993), (66995, 67001), (67003, 67004),
    (67456, 67461), (67463, 67504), (67506, 67514), (69506, 69509), (69744, 69744),
    (69747, 69748), (69826, 69826), (110576, 110579), (110581, 110587), (110589, 110590),
    (118528, 118573), (118576, 118598), (122624, 122633), (122635, 122654), (123566, 123566),
)


def all_code_points():
    return [c for c in range(sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF]


def exhaustive_code_points():
    """Every assigned code point and all of plane 0-2 and 14: planes 0-2 and 14 whole, every
    31st of the rest (planes 3 to 13 beyond CJK extension G, all Cn; private use planes 15-16).
    """
    cps = [c for c in range(0x31400) if not 0xD800 <= c <= 0xDFFF]
    cps += list(range(0x31400, 0xE0000, 31))
    cps += list(range(0xE0000, 0xF0000))
    cps += list(range(0xF0000, sys.maxunicode + 1, 31))
    return cps


def _check_class(pattern, predicate):
    cps = exhaustive_code_points()
    got = tf.strings.regex_full_match(_all_chars_tensor(), pattern).numpy()
    want = np.array([predicate(chr(c)) for c in cps])
    bad = [hex(c) for c, g, w in zip(cps, got, want) if g != w]
    assert not bad, bad[:20]


_CHARS = []


def _all_chars_tensor():
    if not _CHARS:
        cps = exhaustive_code_points()
        _CHARS.append(tf.constant([chr(c).encode("utf-8") for c in cps]))
    return _CHARS[0]


def test_character_classes_match_reference_on_all_code_points(google_tokenization):
    tok = google_tokenization
    p = normalization.patterns()
    _check_class(
        p["removed"], lambda c: ord(c) in (0, 0xFFFD) or tok._is_control(c)
    )
    _check_class(p["marks"], lambda c: unicodedata.category(c) == "Mn")
    # The reference's whitespace, plus what str.split() splits on among what it keeps.
    _check_class(
        p["whitespace"],
        lambda c: c != " "
        and (tok._is_whitespace(c) or (c.isspace() and not tok._is_control(c))),
    )
    bt = tok.BasicTokenizer()
    _check_class(
        p["split_off"], lambda c: tok._is_punctuation(c) or bt._is_chinese_char(ord(c))
    )


def test_icu_lower_and_nfd_match_python_on_all_code_points():
    cps = [c for c in range(1, sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF]
    strings = ["x" + chr(c) + "x" for c in cps]
    t = tf.constant([s.encode("utf-8") for s in strings])
    lower = tf.strings.lower(t, encoding="utf-8").numpy()
    import tensorflow_text as tf_text

    nfd = tf_text.normalize_utf8(t, "NFD").numpy()
    bad_lower = {c for c, s, g in zip(cps, strings, lower) if g.decode() != s.lower()}
    bad_nfd = {
        c for c, s, g in zip(cps, strings, nfd) if g.decode() != unicodedata.normalize("NFD", s)
    }
    assert bad_lower | bad_nfd == ICU_UNICODE_VERSION_DIFFERENCES
    assert all(unicodedata.category(chr(c)) == "Cn" for c in bad_nfd)


def test_final_sigma_in_every_context():
    """Python lowers U+03A3 to final 'ς' by context; ICU must agree next to every character."""
    cps = [c for c in all_code_points()[1:] if c not in ICU_UNICODE_VERSION_DIFFERENCES]
    expected = {c for lo, hi in ICU_CASE_CONTEXT_DIFFERENCES for c in range(lo, hi + 1)}
    contexts = (lambda ch: "ΑΣ" + ch + "Α", lambda ch: "Α" + ch + "Σ", lambda ch: "Σ" + ch)
    for context in contexts:
        strings = [context(chr(c)) for c in cps]
        got = tf.strings.lower(tf.constant([s.encode() for s in strings]), encoding="utf-8")
        bad = {c for c, s, g in zip(cps, strings, got.numpy()) if g.decode() != s.lower()}
        assert bad <= expected, [hex(c) for c in sorted(bad - expected)][:20]


@pytest.mark.parametrize("lower_case", [True, False], ids=["uncased", "cased"])
def test_basic_tokenize_matches_reference_on_all_code_points(google_tokenization, lower_case):
    reference = google_tokenization.BasicTokenizer(do_lower_case=lower_case)
    cps = exhaustive_code_points()
    # Context on both sides: a cased letter before, a capital sigma after (final-sigma rule).
    strings = ["Ax" + chr(c) + "xΣ" for c in cps]
    words_fn = tf.function(lambda s: normalization.basic_tokenize(s, lower_case=lower_case))
    bad = []
    for i in range(0, len(strings), 100_000):
        chunk = strings[i : i + 100_000]
        got = words_fn(tf.constant([s.encode("utf-8") for s in chunk])).to_list()
        for cp, s, words in zip(cps[i : i + 100_000], chunk, got):
            if [w.decode("utf-8") for w in words] != reference.tokenize(s):
                bad.append(cp)
    expected = ICU_UNICODE_VERSION_DIFFERENCES if lower_case else frozenset()
    assert set(bad) == expected, [hex(c) for c in sorted(set(bad) ^ expected)][:40]


def test_invalid_utf8_is_dropped_like_decode_ignore(google_tokenization):
    samples = [
        b"caf\xc3",  # truncated 2-byte sequence at the end
        b"\xff\xfeabc",
        b"ab\x80cd",
        b"\xe2\x82 euro",  # truncated 3-byte sequence
        b"\xed\xa0\x80x",  # an encoded surrogate
        b"\xf0\x9f\x98\x80 ok \xc0\xaf",  # a valid emoji, then an overlong '/'
        b"\xf4\x90\x80\x80z",  # beyond U+10FFFF
    ]
    reference = google_tokenization.BasicTokenizer(do_lower_case=True)
    got = normalization.basic_tokenize(tf.constant(samples)).to_list()
    for raw, words in zip(samples, got):
        assert [w.decode("utf-8") for w in words] == reference.tokenize(raw), raw


def test_valid_utf8_check_and_random_bytes_match_decode_ignore(google_tokenization):
    """Random byte strings (UTF-8 lead/continuation bytes mixed with ASCII) come out as the
    reference's `decode("utf-8", "ignore")` of them; the validity pattern agrees with Python."""
    import random

    rng = random.Random(0)
    alphabet = [0x41, 0x20, 0x2E, 0x80, 0x9F, 0xA0, 0xBF, 0xC2, 0xC3, 0xDF, 0xE0, 0xE1, 0xED,
                0xEE, 0xEF, 0xF0, 0xF1, 0xF4, 0xF5, 0xFF, 0x61, 0xCE, 0xA3]
    samples = [bytes(rng.choice(alphabet) for _ in range(rng.randrange(1, 12)))
               for _ in range(20000)]

    def is_valid(b):
        try:
            b.decode("utf-8")
            return True
        except UnicodeDecodeError:
            return False

    valid = tf.strings.regex_full_match(tf.constant(samples), normalization.VALID_UTF8)
    assert valid.numpy().tolist() == [is_valid(b) for b in samples]
    reference = google_tokenization.BasicTokenizer(do_lower_case=True)
    got = normalization.basic_tokenize(tf.constant(samples)).to_list()
    bad = [b for b, words in zip(samples, got)
           if [w.decode("utf-8") for w in words] != reference.tokenize(b)]
    assert not bad, bad[:10]
