"""Casing comes from metadata, the registry or the vocabulary; never from a folder's name."""

import collections
import json
import re

import pytest

from keras_bert import BertConfig
from keras_bert.checkpoints import CheckpointError, casing, google, huggingface, open_directory
from keras_bert.vocab import SPECIAL_TOKENS, load_vocabulary
from tests.dependencies import require

from tests.text import corpus

UNCASED = ["the", "cat", "sat", "on", "mat", "##s", "dog", "ran", "a", "park"]
CASED = ["The", "cat", "sat", "on", "Paris", "##s", "John", "ran", "A", "park"]


@pytest.fixture(scope="module")
def uncased_vocab(minilm_path):
    """The real uncased BERT vocabulary (all-MiniLM-L6-v2 ships bert-base-uncased's)."""
    return load_vocabulary(minilm_path / "vocab.txt")


@pytest.fixture(scope="module")
def cased_vocab():
    """A cased vocabulary derived from real text: the 8,000 most frequent words of the gensim
    English Wikipedia sample, case kept (27% of them are capitalised)."""
    counts = collections.Counter(w for line in corpus.wikipedia_lines()
                                 for w in re.findall(r"\w+", line))
    return list(SPECIAL_TOKENS) + [w for w, _ in counts.most_common(8000)]


def _google_dir(directory, tokens):
    """A Google-format directory (config and vocabulary only) holding ``tokens``."""
    directory.mkdir(parents=True)
    tokens = list(SPECIAL_TOKENS) + [t for t in tokens if t not in SPECIAL_TOKENS]
    (directory / "vocab.txt").write_text("\n".join(tokens) + "\n", encoding="utf-8")
    config = BertConfig(vocab_size=len(tokens), hidden_size=8, num_hidden_layers=1,
                        num_attention_heads=2, intermediate_size=16)
    (directory / "bert_config.json").write_text(json.dumps(google.config_to_json(config)))
    return directory


def _hf_dir(directory, tokens, tokenizer_config=None):
    directory.mkdir(parents=True)
    tokens = list(SPECIAL_TOKENS) + list(tokens)
    (directory / "vocab.txt").write_text("\n".join(tokens) + "\n", encoding="utf-8")
    config = BertConfig(vocab_size=len(tokens), hidden_size=8, num_hidden_layers=1,
                        num_attention_heads=2, intermediate_size=16)
    (directory / "config.json").write_text(json.dumps(huggingface.config_to_json(config)))
    if tokenizer_config is not None:
        (directory / "tokenizer_config.json").write_text(tokenizer_config)
    return directory


# ------------------------------------------------------------ the vocabulary rule
def _is_cased(tokens, directory):
    """Whether the vocabulary alone makes a checkpoint cased: `casing.resolve` with no other
    source (do_lower_case False for a cased vocabulary, else True)."""
    path = directory / "vocab.txt"
    path.write_text("\n".join(tokens) + "\n", encoding="utf-8")
    return not casing.resolve([], str(path))


def test_real_uncased_vocabulary_is_uncased(uncased_vocab, tmp_path):
    assert len(uncased_vocab) == 30522
    assert casing.capitalised_pieces(uncased_vocab) == ([], 26930)
    assert not _is_cased(uncased_vocab, tmp_path)


def test_derived_cased_vocabulary_is_cased(cased_vocab, tmp_path):
    capitalised, lettered = casing.capitalised_pieces(cased_vocab)
    assert len(capitalised) / lettered > 0.2
    assert _is_cased(cased_vocab, tmp_path)


@pytest.mark.parametrize("strays", [1, 30, 1000])
def test_stray_capitalised_tokens_do_not_make_a_vocabulary_cased(uncased_vocab, strays,
                                                                 tmp_path):
    assert not _is_cased(uncased_vocab + [f"Stray{i}" for i in range(strays)], tmp_path)


def test_a_small_cased_vocabulary_is_cased_and_one_capital_is_not(tmp_path):
    assert _is_cased(CASED, tmp_path)
    assert not _is_cased(UNCASED + ["Paris"], tmp_path)


# ------------------------------------------------------------ never from the folder name
def test_folder_named_cased_with_uncased_vocabulary_is_uncased(tmp_path, uncased_vocab):
    directory = _google_dir(tmp_path / "cased_L-12_H-768_A-12", uncased_vocab)
    assert open_directory(directory, require_weights=False).do_lower_case is True


def test_folder_named_bert_base_cased_with_cased_vocabulary_is_cased(tmp_path, cased_vocab):
    directory = _google_dir(tmp_path / "bert-base-cased", cased_vocab)
    assert open_directory(directory, require_weights=False).do_lower_case is False


def test_no_metadata_and_no_vocabulary_is_uncased(tmp_path):
    directory = _google_dir(tmp_path / "cased_model", UNCASED)
    (directory / "vocab.txt").unlink()
    assert open_directory(directory, require_weights=False).do_lower_case is True


# ------------------------------------------------------------ metadata and its conflicts
def test_tokenizer_config_decides_when_the_vocabulary_has_no_capitals(tmp_path):
    directory = _hf_dir(tmp_path / "hf", UNCASED, json.dumps({"do_lower_case": False}))
    assert open_directory(directory, require_weights=False).do_lower_case is False


def test_tokenizer_config_uncased_but_vocabulary_cased_is_an_error(tmp_path):
    directory = _hf_dir(tmp_path / "hf", CASED, json.dumps({"do_lower_case": True}))
    with pytest.raises(CheckpointError, match=(
            r"contradictory casing: .*tokenizer_config\.json \(do_lower_case\) says "
            r"do_lower_case=True \(uncased\) but the vocabulary .*vocab\.txt is cased "
            r"\(4 of its 10 pieces .* e\.g\. The, Paris, John, A\)")):
        open_directory(directory, require_weights=False)


def test_explicit_do_lower_case_overrides_a_conflict(tmp_path):
    directory = _hf_dir(tmp_path / "hf", CASED, json.dumps({"do_lower_case": True}))
    assert open_directory(directory, do_lower_case=False, require_weights=False).do_lower_case \
        is False


def test_keras_bert_metadata_against_the_registry(tmp_path):
    directory = _google_dir(tmp_path / "p", UNCASED)
    (directory / "keras_bert.json").write_text(json.dumps(
        {"format": "keras_bert", "format_version": 1, "do_lower_case": False}))
    registry = ("the registry entry of preset 'base'", True)
    with pytest.raises(CheckpointError, match=(
            r"keras_bert\.json \(do_lower_case\) says do_lower_case=False \(cased\) but the "
            r"registry entry of preset 'base' says do_lower_case=True \(uncased\)")):
        open_directory(directory, require_weights=False, known_casing=registry)
    assert open_directory(directory, require_weights=False).do_lower_case is False


def test_registry_decides_over_a_vocabulary_without_capitals(tmp_path):
    directory = _google_dir(tmp_path / "p", UNCASED)
    registry = ("the registry entry of preset 'x'", False)
    assert open_directory(directory, require_weights=False,
                          known_casing=registry).do_lower_case is False


def test_keras_hub_tokenizer_lowercase_against_cased_vocabulary(tmp_path):
    keras_hub = require("keras_hub")
    vocab = list(SPECIAL_TOKENS) + CASED
    keras_hub.models.BertBackbone(
        vocabulary_size=len(vocab), num_layers=1, num_heads=2, hidden_dim=8,
        intermediate_dim=16, max_sequence_length=16).save_to_preset(str(tmp_path))
    keras_hub.models.BertTokenizer(vocabulary=vocab, lowercase=True).save_to_preset(str(tmp_path))
    with pytest.raises(CheckpointError,
                       match=r"tokenizer\.json \(lowercase\) says do_lower_case=True .* is cased"):
        open_directory(tmp_path)
    values = json.loads((tmp_path / "tokenizer.json").read_text())
    values["config"]["lowercase"] = False
    (tmp_path / "tokenizer.json").write_text(json.dumps(values))
    assert open_directory(tmp_path).do_lower_case is False


@pytest.mark.parametrize("content, message", [
    ("{not json", r"Cannot read the Hugging Face tokenizer config .*tokenizer_config\.json"),
    ("[true]", r"tokenizer_config\.json: expected a JSON object; it holds a JSON list"),
    ('{"do_lower_case": "yes"}', r"tokenizer_config\.json: do_lower_case is 'yes'; expected "
                                 r"true or false"),
])
def test_bad_tokenizer_config_is_named(tmp_path, content, message):
    directory = _hf_dir(tmp_path / "hf", UNCASED, content)
    with pytest.raises(CheckpointError, match=message):
        open_directory(directory, require_weights=False)
