"""keras_bert's own layout: what save_to_preset writes loads back, vocabulary included."""

import json

import pytest

from keras_bert import BertConfig, BertEncoder
from keras_bert.checkpoints import CheckpointError, open_directory

CONFIG = BertConfig(vocab_size=12, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                    intermediate_size=16, max_position_embeddings=16)
TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "c", "d", "e", "f", "g"]


def _encoder_with_vocab(tmp_path, tokens=TOKENS):
    (tmp_path / "vocab.txt").write_text("\n".join(tokens) + "\n")
    encoder = BertEncoder(CONFIG)
    encoder.vocab_path = str(tmp_path / "vocab.txt")
    return encoder


def test_vocabulary_and_casing_are_saved(tmp_path):
    _encoder_with_vocab(tmp_path).save_to_preset(str(tmp_path / "saved"))
    checkpoint = open_directory(tmp_path / "saved")
    assert checkpoint.vocab_path == str(tmp_path / "saved" / "vocab.txt")
    assert json.loads((tmp_path / "saved" / "keras_bert.json").read_text())["do_lower_case"] \
        is None
    assert checkpoint.do_lower_case is True  # unknown: the vocabulary has no capitals


def test_vocabulary_is_read_when_set_so_a_vanished_file_does_not_matter(tmp_path):
    encoder = _encoder_with_vocab(tmp_path)
    (tmp_path / "vocab.txt").unlink()
    encoder.save_to_preset(str(tmp_path / "saved"))
    assert (tmp_path / "saved" / "vocab.txt").read_text().split() == TOKENS


def test_vocabulary_of_another_size_is_refused_at_save(tmp_path):
    encoder = _encoder_with_vocab(tmp_path, TOKENS[:-1])
    with pytest.raises(CheckpointError, match=r"Saving to .*saved: .*vocab\.txt has 11 tokens "
                       r"but the config says vocab_size=12"):
        encoder.save_to_preset(str(tmp_path / "saved"))


def test_saving_without_a_vocabulary_removes_an_earlier_one(tmp_path):
    _encoder_with_vocab(tmp_path).save_to_preset(str(tmp_path / "saved"))
    BertEncoder(CONFIG).save_to_preset(str(tmp_path / "saved"))  # another model, no vocabulary
    assert not (tmp_path / "saved" / "vocab.txt").exists()
    assert open_directory(tmp_path / "saved").vocab_path is None


@pytest.mark.parametrize("config, message", [
    ({"bogus": 1}, r"Unknown BertConfig field\(s\) \['bogus'\]"),
    ({"hidden_size": -1}, r"hidden_size must be a positive int, got -1"),
    ("12 layers", r"\"config\" is a str, not an object"),
])
def test_bad_config_in_the_metadata_names_the_file(tmp_path, config, message):
    BertEncoder(CONFIG).save_to_preset(str(tmp_path))
    meta = json.loads((tmp_path / "keras_bert.json").read_text())
    meta["config"] = dict(meta["config"], **config) if isinstance(config, dict) else config
    (tmp_path / "keras_bert.json").write_text(json.dumps(meta))
    with pytest.raises(CheckpointError, match=rf"{tmp_path / 'keras_bert.json'}: .*{message}"):
        open_directory(tmp_path)
