"""keras_bert's own layout: what save_to_preset writes loads back, vocabulary included."""

import json
import os

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


# ------------------------------------------------------------ bert_config.json must agree
def _saved(tmp_path, config=CONFIG, tokens=None):
    encoder = BertEncoder(config)
    encoder.vocabulary = tokens
    return encoder.save_to_preset(str(tmp_path / "saved"))


def _edit_google_config(path, **changes):
    config_file = os.path.join(path, "bert_config.json")
    with open(config_file) as f:
        values = json.load(f)
    values.update(changes)
    with open(config_file, "w") as f:
        json.dump(values, f)


@pytest.mark.parametrize("changes, message", [
    # Google's "gelu" is the tanh approximation; keras_bert.json's "gelu" is the exact one.
    ({"hidden_act": "gelu"}, r"hidden_act 'gelu' \(keras_bert's 'gelu_tanh'\) in "
                             r"bert_config\.json, 'gelu' in keras_bert\.json"),
    ({"layer_norm_eps": 1e-3, "num_attention_heads": 4},
     r"num_attention_heads 4 in bert_config\.json, 2 in keras_bert\.json; layer_norm_eps "
     r"0\.001 in bert_config\.json, 1e-12 in keras_bert\.json"),
])
def test_a_bert_config_json_that_builds_another_model_is_an_error_naming_both(
        tmp_path, changes, message):
    path = _saved(tmp_path)
    _edit_google_config(path, **changes)
    with pytest.raises(CheckpointError, match=(
            rf"{path}/bert_config\.json disagrees with {path}/keras_bert\.json: {message}\. "
            r"Google's scripts would build another model")):
        BertEncoder.from_preset(path)


@pytest.mark.parametrize("text, reason", [
    ("{oops", r"not valid JSON"),
    ("[]", r"expected a JSON object"),
])
def test_a_bert_config_json_that_is_not_a_config_is_an_error_naming_both(tmp_path, text, reason):
    path = _saved(tmp_path)
    with open(os.path.join(path, "bert_config.json"), "w") as f:
        f.write(text)
    with pytest.raises(CheckpointError, match=(
            rf"{path}/bert_config\.json disagrees with {path}/keras_bert\.json, which records "
            rf"the config: Google's scripts cannot build a model from it \(.*{reason}")):
        open_directory(path)


def test_the_configs_are_compared_as_models_not_as_text(tmp_path):
    """keras_bert.json's "gelu_tanh" is Google's "gelu"; key order, spacing and fields
    Google's file has and BertConfig does not (the multilingual "directionality") differ
    freely."""
    path = _saved(tmp_path, CONFIG.replace(hidden_act="gelu_tanh"))
    with open(os.path.join(path, "bert_config.json")) as f:
        values = json.load(f)
    assert values["hidden_act"] == "gelu"
    values["directionality"] = "bidi"
    with open(os.path.join(path, "bert_config.json"), "w") as f:
        json.dump(dict(reversed(list(values.items()))), f, indent=4)
    assert open_directory(path).config.hidden_act == "gelu_tanh"


# ------------------------------------------------------------ files of one save
def test_files_of_another_save_are_refused_and_the_metadata_names_them(tmp_path):
    path = _saved(tmp_path, tokens=TOKENS)
    other = _saved(tmp_path / "other", tokens=TOKENS[:5] + TOKENS[5:][::-1])
    metadata = json.loads(open(os.path.join(path, "keras_bert.json")).read())
    assert sorted(metadata["files"]) == ["bert_model.ckpt.index", "vocab.txt"]
    for name in ("vocab.txt", "bert_model.ckpt.index"):
        with open(os.path.join(other, name), "rb") as f:
            data = f.read()
        with open(os.path.join(path, name), "wb") as f:
            f.write(data)
    with pytest.raises(CheckpointError, match=(
            rf"{path} holds files of two different saves: bert_model\.ckpt\.index, vocab\.txt "
            r"are not what keras_bert\.json was written with\. A save_to_preset over this "
            r"directory was interrupted \(or is still running\)")):
        open_directory(path)
    os.remove(os.path.join(path, "vocab.txt"))
    with pytest.raises(CheckpointError, match=r"bert_model\.ckpt\.index, vocab\.txt \(missing\)"):
        open_directory(path)
    del metadata["files"]  # written without the sums: read as it is
    with open(os.path.join(path, "keras_bert.json"), "w") as f:
        json.dump(metadata, f)
    assert open_directory(path).vocab_path is None


def test_weights_read_after_a_save_over_the_directory_are_refused(tmp_path):
    """A reader that opened the preset, then reads its weights after another save replaced
    them, gets an error, not the new weights under the config it read first."""
    path = _saved(tmp_path)
    opened = open_directory(path)
    _saved(tmp_path, CONFIG.replace(hidden_act="relu"))
    with pytest.raises(CheckpointError, match="holds files of two different saves"):
        opened.weights()
    assert open_directory(path).weights().keys() == opened.variable_shapes().keys()
