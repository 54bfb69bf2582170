"""The LiteRT export's tokenizer: its normalization table maps every code point (and every
piece of invalid UTF-8) as the reference does, and in the LiteRT interpreter it gives
`BertTokenizer`'s ids on real text, but for the stated cases."""

import random

import numpy as np
import pytest
import tensorflow as tf

from keras_bert import BertPreprocessor, BertTokenizer
from keras_bert.export import litert, litert_model, litert_text, modules
from keras_bert.text import normalization
from tests.dependencies import require
from tests.text import corpus
from tests.text.hard_cases import HARD_CASES

# The two kinds of text where the LiteRT tokenizer differs (keras_bert/export/litert_text.py).
# One word of 120 characters, 240 bytes: over 200 bytes, not characters.
LONG_CYRILLIC = "дом" * 40
FINAL_SIGMA_HARD_CASE = "ΟΔΟΣ ΟΔΟΣ. Σ ΣΑΣ ΑΣ' ΑΣ'Α ὈΔΥΣΣΕΎΣ σοφός"
FINAL_SIGMA_WIKI_LINE = "ΑΧΙΛΛΕΥΣ"  # the one Wikipedia line that differs holds this word
ADVERSARIAL = HARD_CASES + [
    "",
    "Ünïcödé ÀÉÎÕÜ façade Œuvre ǅemal ﬃ",
    "中文，日本語。한국어! (混合) text",
    "!!!???...,,,;;;:::---___***",
    "tabs\tnew\nlines\rreturns\x0bvt\x0cff\x1c\x1d\x1e\x1f\x85",
    "\u200e\u200f\u202a\u202e\u2066 bidi marks",
    "a" * 199 + " " + "b" * 200 + " " + "c" * 201,
    "long " * 2000,
    LONG_CYRILLIC,
    "дом" * 33,  # 99 characters, 198 bytes: the same ids
    "ภาษาไทย" * 12,  # 84 characters, 252 bytes, but no WordPiece covers it: [UNK] both
]


def _normalize(model_buffer, texts):
    import tensorflow_text as tf_text

    normalizer = tf_text.FastBertNormalizer(model_buffer=model_buffer)
    return normalizer.normalize(tf.constant(texts)).numpy()


@pytest.mark.parametrize("do_lower_case", [True, False])
def test_every_code_point_is_mapped_as_the_reference_maps_it(do_lower_case):
    classes = normalization.character_classes()
    code_points = [cp for cp in range(0x110000) if not 0xD800 <= cp <= 0xDFFF]
    out = _normalize(litert_text.normalizer_model(do_lower_case),
                     ["a" + chr(cp) + "b" for cp in code_points])
    wrong = [hex(cp) for cp, got in zip(code_points, out)
             if got.decode("utf-8") != "a" + litert_text.replacement(cp, do_lower_case,
                                                                      classes) + "b"]
    assert wrong == []
    # Spot checks of what the stock normalizer does otherwise.
    assert litert_text.replacement(ord("ß"), True) == "ß"  # not "ss"
    assert litert_text.replacement(ord("…"), True) == "…"  # not "..."
    assert litert_text.replacement(ord("É"), True) == "e"
    assert litert_text.replacement(ord("É"), False) == "É"
    assert litert_text.replacement(0x7F, True) == ""  # a control character: dropped
    assert litert_text.replacement(0x3000, False) == " "  # ideographic space


def test_invalid_utf8_is_dropped_as_the_reference_drops_it():
    rng = random.Random(0)
    pieces = litert_text.invalid_utf8_pieces()
    texts = [b"x" + rng.choice(pieces) + rng.choice([b"", b"y", b"\xc3\xa9", b"\x80"]) + b"z"
             for _ in range(5000)]
    texts += [bytes(rng.randrange(256) for _ in range(rng.randrange(1, 12)))
              for _ in range(5000)]
    out = _normalize(litert_text.normalizer_model(True), texts)
    want = ["".join(litert_text.replacement(ord(c), True)
                    for c in t.decode("utf-8", "ignore")).encode("utf-8") for t in texts]
    assert [t for t, got, w in zip(texts, out, want) if got != w] == []


def _darts_lookup(units, key):
    """The value of ``key`` in a `litert_text.darts_trie`, or None: DartsCloneTrieWrapper's
    look-up, read from darts-clone's unit layout (label in bits 0-7, has-leaf bit 8, offset
    from bit 10, extended by bit 9; a value in bits 0-30)."""
    has_leaf = 0x100
    index, unit = 0, int(units[0])
    for byte in key:
        index ^= ((unit >> 10) << ((unit & 0x200) >> 6)) ^ byte
        if index >= len(units):
            return None
        unit = int(units[index])
        if unit & 0x800000FF != byte:
            return None
    if not unit & has_leaf:
        return None
    return int(units[index ^ ((unit >> 10) << ((unit & 0x200) >> 6))]) & 0x7FFFFFFF


def test_darts_trie_finds_its_keys_and_nothing_else():
    rng = random.Random(1)
    keys = sorted({bytes(rng.randrange(1, 256) for _ in range(rng.randrange(1, 5)))
                   for _ in range(3000)})
    values = [rng.randrange(2**31) for _ in keys]
    units = litert_text.darts_trie(keys, values)
    assert units.dtype == np.uint32
    assert [_darts_lookup(units, k) for k in keys] == values
    others = {bytes(rng.randrange(1, 256) for _ in range(rng.randrange(1, 6)))
              for _ in range(3000)} - set(keys)
    assert {_darts_lookup(units, k) for k in others} == {None}
    with pytest.raises(ValueError, match="distinct"):
        litert_text.darts_trie([b"ab", b"ab"], [1, 2])
    with pytest.raises(ValueError, match="non-empty with no NUL"):
        litert_text.darts_trie([b"a\x00"], [1])
    with pytest.raises(ValueError, match=r"\[0, 2\*\*31\)"):
        litert_text.darts_trie([b"a"], [2**31])


@pytest.fixture(scope="module")
def packers(minilm_path, tmp_path_factory):
    """The minilm vocabulary's `BertPreprocessor` at seq_length 512 and the same packing as
    a LiteRT model (the export's tokenizer), run in the interpreter."""
    require("ai_edge_litert")
    tokenizer = BertTokenizer(str(minilm_path / "vocab.txt"))
    preprocessor = BertPreprocessor(tokenizer, seq_length=512)
    fast = litert_text.fast_bert_tokenizer(tokenizer)
    root = modules.Module()
    root.pack = tf.function(lambda text: preprocessor.packer([litert._tokenize(fast, text)]),
                            input_signature=[tf.TensorSpec([None], tf.string)])
    data = litert.convert(root, {"serving_default": root.pack})
    return preprocessor, litert_model.load(data)


def _mismatches(packers, texts, batch=256):
    """The texts whose packed ids differ between the LiteRT model and BertPreprocessor."""
    preprocessor, lite = packers
    found = []
    for i in range(0, len(texts), batch):
        chunk = texts[i:i + batch]
        want = preprocessor(tf.constant(chunk))["input_word_ids"].numpy()
        got = lite(text=chunk)["input_word_ids"]
        found += [t for t, w, g in zip(chunk, want, got) if not np.array_equal(w, g)]
    return found


def test_movie_review_test_split_tokenizes_identically(packers):
    from keras_bert.data import movie_reviews

    texts = movie_reviews.load()["test"][0]
    assert len(texts) > 1000
    assert _mismatches(packers, texts) == []


def test_wikipedia_lines_differ_only_in_one_final_sigma(packers):
    lines = corpus.wikipedia_lines()
    assert len(lines) >= 19000
    mismatched = _mismatches(packers, lines)
    assert len(mismatched) == 1 and FINAL_SIGMA_WIKI_LINE in mismatched[0], mismatched


def test_adversarial_text_differs_only_where_stated(packers):
    mismatched = _mismatches(packers, ADVERSARIAL)
    assert mismatched == [FINAL_SIGMA_HARD_CASE, LONG_CYRILLIC]
    # Invalid UTF-8 and NUL bytes inside text, which JSON cannot carry but gRPC can.
    rng = random.Random(2)
    raw = [b"caf\xc3\xa9 \xff\xfe bad \xc3 bytes \xed\xa0\x80 end",
           b"nul\x00inside", b"\xf0\x9f\x98", b"\x80" * 10]
    raw += [bytes(rng.randrange(256) for _ in range(rng.randrange(0, 40))) for _ in range(300)]
    assert _mismatches(packers, raw) == []
