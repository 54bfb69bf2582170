"""`PresetMixin.from_preset`: how its keyword arguments are sorted and checked."""

import socket

import pytest

from keras_bert import BertConfig, BertEncoder


@pytest.fixture(scope="module")
def preset_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("preset")
    config = BertConfig(vocab_size=40, hidden_size=16, num_hidden_layers=1,
                        num_attention_heads=4, intermediate_size=32, max_position_embeddings=16)
    BertEncoder(config).save_to_preset(str(path))
    return str(path)


def test_misspelled_config_field_is_a_type_error_listing_what_is_accepted(preset_dir):
    with pytest.raises(TypeError, match=r"BertEncoder\.from_preset\(\) got unknown keyword "
                                        r"argument 'hiden_dropout_prob' \(did you mean "
                                        r"'hidden_dropout_prob'\?\)\. It accepts BertConfig "
                                        r"fields: vocab_size, .*hidden_dropout_prob.*; loading "
                                        r"options: url, sha256, do_lower_case, progress; "
                                        r"BertEncoder arguments: dtype, name, trainable\.$"):
        BertEncoder.from_preset(preset_dir, hiden_dropout_prob=0.2)


def test_misspelled_argument_fails_before_anything_is_loaded(tmp_path, monkeypatch):
    # "base" is not cached and cannot be downloaded here: the TypeError must come first,
    # before the cache is looked at or a connection is attempted.
    cache = tmp_path / "cache"
    monkeypatch.setenv("KERAS_BERT_HOME", str(cache))
    network = []  # every host lookup and connection attempted

    def no_lookup(host, *args, **kwargs):
        network.append(("getaddrinfo", host))
        raise socket.gaierror(socket.EAI_NONAME, f"test: no lookup of {host}")

    def no_connection(sock, address):
        network.append(("connect", address))
        raise ConnectionRefusedError(f"test: no connection to {address}")

    monkeypatch.setattr(socket, "getaddrinfo", no_lookup)
    monkeypatch.setattr(socket.socket, "connect", no_connection)
    with pytest.raises(TypeError, match=r"got unknown keyword argument 'nme' \(did you mean "
                                        r"'name'\?\)"):
        BertEncoder.from_preset("base", nme="x")
    assert network == []
    assert not cache.exists()


def test_every_kind_of_argument_is_still_accepted(preset_dir):
    encoder = BertEncoder.from_preset(preset_dir, hidden_dropout_prob=0.2, do_lower_case=False,
                                      progress=False, dtype="mixed_bfloat16", name="e",
                                      trainable=False)
    assert encoder.bert_config.hidden_dropout_prob == 0.2
    assert encoder.do_lower_case is False
    assert (encoder.dtype_policy.name, encoder.name, encoder.trainable) == (
        "mixed_bfloat16", "e", False)
