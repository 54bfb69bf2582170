"""Config files of each checkpoint format (`google.config_from_json`,
`huggingface.config_from_json`): activation spellings, ignored fields, errors naming the file,
reading through tf.io.gfile. `BertConfig` itself knows no file format."""

import json

import pytest
import tensorflow as tf

from keras_bert import BertConfig
from keras_bert.checkpoints import CheckpointError, google, huggingface

SMALL = dict(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
             intermediate_size=64)


def test_google_gelu_is_the_tanh_approximation(tmp_path):
    path = tmp_path / "bert_config.json"
    path.write_text(json.dumps({**SMALL, "hidden_act": "gelu", "directionality": "bidi"}))
    config = google.config_from_json(str(path))
    assert config.hidden_act == "gelu_tanh"
    # Written back, Google's spelling returns; an erf-GELU model gets a name Google cannot misread.
    assert google.config_to_json(config)["hidden_act"] == "gelu"
    exact = config.replace(hidden_act="gelu")
    google.write_config(exact, str(path))
    assert json.loads(path.read_text())["hidden_act"] == "gelu_exact"
    assert google.config_from_json(str(path)) == exact


def test_hf_gelu_is_exact(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**SMALL, "hidden_act": "gelu", "model_type": "bert"}))
    assert huggingface.config_from_json(str(path)).hidden_act == "gelu"
    path.write_text(json.dumps({**SMALL, "hidden_act": "gelu_new"}))
    config = huggingface.config_from_json(str(path))
    assert config.hidden_act == "gelu_tanh"
    values = huggingface.config_to_json(config)
    assert (values["hidden_act"], values["model_type"]) == ("gelu_new", "bert")
    assert huggingface.config_from_json(values) == config


def test_hf_config_of_another_model_or_activation(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**SMALL, "model_type": "roberta"}))
    with pytest.raises(CheckpointError, match=rf"{path}: model_type is 'roberta', not 'bert'"):
        huggingface.config_from_json(str(path))
    with pytest.raises(CheckpointError, match=r"<dict>: hidden_act 'mish' is not supported"):
        huggingface.config_from_json({**SMALL, "hidden_act": "mish"})


def test_bad_files_are_named(tmp_path):
    with pytest.raises(CheckpointError, match=r"Google BERT config not found: .*nope\.json"):
        google.config_from_json(str(tmp_path / "nope.json"))
    bad = tmp_path / "bert_config.json"
    bad.write_text("{not json")
    with pytest.raises(CheckpointError, match=r"Cannot read the Google BERT config .*bert_config"):
        google.config_from_json(str(bad))
    bad.write_text(json.dumps({**SMALL, "hidden_size": 33}))
    with pytest.raises(CheckpointError, match=r"bert_config.json: .*divisible"):
        google.config_from_json(str(bad))
    bad.write_text(json.dumps({**SMALL, "hidden_act": "swish"}))
    with pytest.raises(CheckpointError, match=r"hidden_act 'swish' is not one Google's"):
        google.config_from_json(str(bad))


def test_bert_config_json_is_read_through_gfile():
    # ram:// stands for gs://: the file is read with tf.io.gfile, not open().
    path = "ram://keras_bert_test_config/bert_config.json"
    values = google.config_to_json(BertConfig(vocab_size=7, hidden_size=8, num_hidden_layers=1,
                                              num_attention_heads=2, intermediate_size=16))
    with tf.io.gfile.GFile(path, "w") as f:
        f.write(json.dumps(values))
    assert google.config_to_json(google.config_from_json(path)) == values


def test_every_format_module_has_the_same_functions():
    from keras_bert.checkpoints.formats import FORMATS

    for name, module in FORMATS.items():
        for function in ("detect", "read_config", "read_metadata", "check_files",
                         "recorded_casing", "vocab_file", "vocabulary", "check_weights",
                         "list_variables", "read_weights"):
            assert callable(getattr(module, function, None)), (name, function)
        assert isinstance(module.FILES, tuple) and module.FILES, name
