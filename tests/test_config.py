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
