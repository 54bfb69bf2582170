import json

import pytest

from keras_bert.config import BertConfig, BertConfigError

SMALL = dict(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
             intermediate_size=64)


def test_defaults_are_bert_base():
    config = BertConfig()
    assert (config.hidden_size, config.num_hidden_layers, config.num_attention_heads) == (768, 12, 12)
    assert config.hidden_act == "gelu"
    # BERT-base without the MLM/NSP heads has 109,482,240 weights (Google's and HF's count).
    assert config.num_parameters() == 109_482_240


def test_dict_round_trip_and_replace():
    config = BertConfig(**SMALL)
    assert BertConfig.from_dict(config.to_dict()) == config
    assert config.replace(hidden_act="relu").hidden_act == "relu"
    assert config.hidden_act == "gelu"


@pytest.mark.parametrize(
    "changes, message",
    [
        (dict(hidden_size=30), "divisible by num_attention_heads"),
        (dict(hidden_act="swishy"), "hidden_act 'swishy'"),
        (dict(num_hidden_layers=0), "num_hidden_layers must be a positive int"),
        (dict(hidden_dropout_prob=1.5), "hidden_dropout_prob"),
        (dict(layer_norm_eps=0), "layer_norm_eps"),
    ],
)
def test_invalid_configs_name_the_field(changes, message):
    with pytest.raises(BertConfigError, match=message):
        BertConfig(**{**SMALL, **changes})


def test_unknown_field():
    with pytest.raises(BertConfigError, match="hiden_size"):
        BertConfig(hiden_size=12)


def test_unknown_field_is_also_a_type_error_suggesting_the_field():
    # A misspelled keyword argument is a TypeError, as for every keras_bert constructor.
    with pytest.raises(TypeError, match=r"Unknown BertConfig field\(s\) \['hiden_size'\] "
                                        r"\(did you mean 'hidden_size'\?\); known fields: "):
        BertConfig(hiden_size=12)


def test_google_gelu_is_the_tanh_approximation(tmp_path):
    path = tmp_path / "bert_config.json"
    path.write_text(json.dumps({**SMALL, "hidden_act": "gelu", "directionality": "bidi"}))
    config = BertConfig.from_bert_config_json(path)
    assert config.hidden_act == "gelu_tanh"
    # Written back, Google's spelling returns; an erf-GELU model gets a name Google cannot misread.
    assert config.to_bert_config_json()["hidden_act"] == "gelu"
    exact = config.replace(hidden_act="gelu")
    exact.save_bert_config_json(path)
    assert BertConfig.from_bert_config_json(path) == exact


def test_hf_gelu_is_exact(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**SMALL, "hidden_act": "gelu", "model_type": "bert"}))
    assert BertConfig.from_hf_config(path).hidden_act == "gelu"
    path.write_text(json.dumps({**SMALL, "hidden_act": "gelu_new"}))
    config = BertConfig.from_hf_config(path)
    assert config.hidden_act == "gelu_tanh"
    config.save_hf_config(path)
    assert BertConfig.from_hf_config(path) == config


def test_hf_config_of_another_model_type(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**SMALL, "model_type": "roberta"}))
    with pytest.raises(BertConfigError, match="model_type is 'roberta'"):
        BertConfig.from_hf_config(path)


def test_bad_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.json"):
        BertConfig.from_bert_config_json(tmp_path / "nope.json")
    bad = tmp_path / "bert_config.json"
    bad.write_text("{not json")
    with pytest.raises(BertConfigError, match="not valid JSON"):
        BertConfig.from_bert_config_json(bad)
    bad.write_text(json.dumps({**SMALL, "hidden_size": 33}))
    with pytest.raises(BertConfigError, match=r"bert_config.json: .*divisible"):
        BertConfig.from_bert_config_json(bad)


def test_bert_config_json_is_read_through_gfile():
    # ram:// stands for gs://: the file is read with tf.io.gfile, not open().
    import json

    import tensorflow as tf

    path = "ram://keras_bert_test_config/bert_config.json"
    values = BertConfig(vocab_size=7, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=16).to_bert_config_json()
    with tf.io.gfile.GFile(path, "w") as f:
        f.write(json.dumps(values))
    assert BertConfig.from_bert_config_json(path).to_bert_config_json() == values
