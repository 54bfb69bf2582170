"""BertEncoder.from_preset / save_to_preset and round trips through every writer."""

import os

import numpy as np
import pytest

import keras
from keras_bert import BertConfig, BertEncoder
from keras_bert.checkpoints import google, huggingface, open_directory
from keras_bert.checkpoints.common import CheckpointError


def _inputs(vocab_size, seq=9, batch=3, seed=0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(5, vocab_size, size=(batch, seq)).astype("int32")
    ids[:, 0] = 2
    mask = np.ones_like(ids)
    mask[0, seq // 2:] = 0  # one padded row
    ids[mask == 0] = 0
    segments = np.zeros_like(ids)
    segments[1, seq // 2:] = 1
    return {"input_word_ids": ids, "input_mask": mask, "input_type_ids": segments}


def _outputs(encoder, inputs):
    out = encoder(inputs)
    return {k: np.asarray(out[k]) for k in ("sequence_output", "pooled_output")}


def _assert_identical(a, b):
    for key in a:
        np.testing.assert_array_equal(a[key], b[key], err_msg=key)


@pytest.fixture(scope="module")
def minilm():
    return BertEncoder.from_preset("minilm_l6")


def test_hf_to_google_writer_and_back_is_identical(minilm, tmp_path):
    inputs = _inputs(minilm.bert_config.vocab_size)
    before = _outputs(minilm, inputs)
    google.write_directory(str(tmp_path), minilm.bert_config, minilm.get_canonical_weights(),
                           vocab_path=minilm.vocab_path)
    checkpoint = open_directory(tmp_path)
    assert checkpoint.format == "google"
    # erf GELU survives bert_config.json as "gelu_exact" (Google's "gelu" is the tanh form).
    assert checkpoint.config == minilm.bert_config
    again = BertEncoder.from_preset(str(tmp_path))
    _assert_identical(before, _outputs(again, inputs))


def test_save_to_preset_from_preset_is_identical(minilm, tmp_path):
    inputs = _inputs(minilm.bert_config.vocab_size)
    minilm.save_to_preset(str(tmp_path / "saved"))
    files = sorted(p.name for p in (tmp_path / "saved").iterdir())
    assert files == ["bert_config.json", "bert_model.ckpt.data-00000-of-00001",
                     "bert_model.ckpt.index", "keras_bert.json", "vocab.txt"]
    again = BertEncoder.from_preset(str(tmp_path / "saved"))
    assert again.bert_config == minilm.bert_config
    assert again.do_lower_case is True
    assert open(again.vocab_path).read() == open(minilm.vocab_path).read()
    _assert_identical(_outputs(minilm, inputs), _outputs(again, inputs))


def test_hf_writer_round_trip_is_identical(minilm, tmp_path):
    inputs = _inputs(minilm.bert_config.vocab_size)
    huggingface.write_directory(str(tmp_path), minilm.bert_config,
                                minilm.get_canonical_weights(), minilm.vocab_path)
    again = BertEncoder.from_preset(str(tmp_path))
    _assert_identical(_outputs(minilm, inputs), _outputs(again, inputs))


def _small_encoder(seed=0):
    config = BertConfig(vocab_size=40, hidden_size=16, num_hidden_layers=2,
                        num_attention_heads=4, intermediate_size=32, max_position_embeddings=16)
    encoder = BertEncoder(config)
    rng = np.random.default_rng(seed)
    encoder.set_canonical_weights({k: rng.normal(0, 0.5, v.shape).astype("float32")
                                   for k, v in encoder.get_canonical_weights().items()})
    return encoder


def test_keras_file_round_trip_is_identical(tmp_path):
    encoder = _small_encoder()
    inputs = _inputs(40)
    path = str(tmp_path / "encoder.keras")
    encoder.save(path)
    again = keras.models.load_model(path)
    assert isinstance(again, BertEncoder)
    _assert_identical(_outputs(encoder, inputs), _outputs(again, inputs))


def test_from_preset_overrides_and_no_weights(tmp_path):
    encoder = _small_encoder()
    encoder.save_to_preset(str(tmp_path))
    fresh = BertEncoder.from_preset(str(tmp_path), load_weights=False, hidden_dropout_prob=0.3,
                                    name="fresh")
    assert fresh.name == "fresh"
    assert fresh.bert_config.hidden_dropout_prob == 0.3
    assert fresh.bert_config.hidden_size == 16
    assert not np.array_equal(fresh.get_canonical_weights()["bert/pooler/dense/kernel"],
                              encoder.get_canonical_weights()["bert/pooler/dense/kernel"])


def test_from_preset_without_weights_needs_no_weights_file(tmp_path):
    encoder = _small_encoder()
    encoder.save_to_preset(str(tmp_path))
    for name in os.listdir(tmp_path):
        if name.startswith("bert_model.ckpt"):
            os.remove(tmp_path / name)
    fresh = BertEncoder.from_preset(str(tmp_path), load_weights=False)
    assert fresh.bert_config.hidden_size == encoder.bert_config.hidden_size
    # Asking for the weights still fails at once, naming what is missing.
    with pytest.raises(CheckpointError, match=r"No TF checkpoint in .*bert_model\.ckpt\.index"):
        BertEncoder.from_preset(str(tmp_path))


def test_sequence_longer_than_max_position_embeddings(tmp_path):
    encoder = _small_encoder()
    encoder.save_to_preset(str(tmp_path))
    loaded = BertEncoder.from_preset(str(tmp_path))
    too_long = _inputs(40, seq=17)
    with pytest.raises(Exception, match="max_position_embeddings=16"):
        loaded(too_long)
    loaded(_inputs(40, seq=16))  # the limit itself is fine


def test_from_preset_under_mixed_precision(tmp_path):
    encoder = _small_encoder()
    encoder.save_to_preset(str(tmp_path))
    mixed = BertEncoder.from_preset(str(tmp_path), dtype="mixed_bfloat16")
    inputs = _inputs(40)
    want = _outputs(encoder, inputs)
    got = mixed(inputs)
    pooled = np.asarray(keras.ops.cast(got["pooled_output"], "float32"))
    assert np.abs(pooled - want["pooled_output"]).max() < 0.1
    np.testing.assert_array_equal(mixed.get_canonical_weights()["bert/pooler/dense/kernel"],
                                  encoder.get_canonical_weights()["bert/pooler/dense/kernel"])


def _computing_layers(model):
    """Every layer inside ``model`` but its Input layers (they compute nothing)."""
    return [layer for layer in model._flatten_layers(include_self=False)
            if not isinstance(layer, keras.layers.InputLayer)]


def _assert_policy(model, name):
    assert model.dtype_policy.name == name
    for layer in _computing_layers(model):
        assert layer.dtype_policy.name == name, layer.path
    assert {v.dtype for v in model.weights} == {"float32"}  # variables stay float32


@pytest.mark.parametrize("made_by", ["constructor", "from_preset"])
def test_mixed_policy_is_reported_and_survives_a_keras_round_trip(tmp_path, made_by):
    encoder = _small_encoder()
    if made_by == "from_preset":
        encoder.save_to_preset(str(tmp_path / "preset"))
        mixed = BertEncoder.from_preset(str(tmp_path / "preset"), dtype="mixed_bfloat16")
    else:
        mixed = BertEncoder(encoder.bert_config, dtype="mixed_bfloat16")
        mixed.set_canonical_weights(encoder.get_canonical_weights())
    _assert_policy(mixed, "mixed_bfloat16")
    inputs = _inputs(40)
    before = mixed(inputs)
    path = str(tmp_path / "mixed.keras")
    mixed.save(path)
    again = keras.models.load_model(path)
    _assert_policy(again, "mixed_bfloat16")
    after = again(inputs)
    for out in (before, after):
        assert [str(t.dtype.name) for t in [out["sequence_output"], out["pooled_output"]]
                + out["encoder_outputs"]] == ["bfloat16"] * 4
    for key in ("sequence_output", "pooled_output"):
        np.testing.assert_array_equal(np.asarray(keras.ops.cast(before[key], "float32")),
                                      np.asarray(keras.ops.cast(after[key], "float32")), key)


def test_misspelled_constructor_argument_is_a_type_error_naming_it():
    config = _small_encoder().bert_config
    with pytest.raises(TypeError, match=r"BertEncoder\(\) got unknown keyword argument 'nme' "
                                        r"\(did you mean 'name'\?\)\. It accepts BertEncoder "
                                        r"arguments: config, dtype, name, trainable\.$"):
        BertEncoder(config, nme="x")
    frozen = BertEncoder(config, name="x", trainable=False)
    assert (frozen.name, frozen.trainable) == ("x", False)
