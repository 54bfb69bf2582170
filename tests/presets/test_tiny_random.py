"""The built-in ``tiny_random`` preset: registered, offline, the same weights on every load,
outputs that depend on the text, and the same loader and saver as every preset."""

import socket

import keras
import numpy as np
import pytest

import keras_bert
from keras_bert.checkpoints import CheckpointError
from keras_bert.checkpoints.common import check_shapes
from keras_bert.presets import PRESETS, list_presets, load_preset, tiny_random
from keras_bert.vocab import load_vocabulary
from tests.preset_harness import check_preset

TEXTS = ["a great movie", "dull", "paris is big", "he ran home", "the cat sat on the mat"]


def test_registered_and_listed_as_random_for_examples_and_tests():
    spec = PRESETS["tiny_random"]
    assert spec.source == "builtin" and spec.config == tiny_random.CONFIG
    row = {r["name"]: r for r in list_presets()}["tiny_random"]
    assert (row["layers"], row["hidden_size"], row["heads"], row["casing"], row["source"]) == (
        1, 16, 2, "uncased", "built in")
    assert row["parameters"] == f"{spec.num_parameters / 1e3:.0f}K"
    assert "Random weights" in row["description"] and "examples and tests" in row["description"]
    assert "tiny_random" in str(list_presets())


def test_loads_offline_with_its_vocabulary_and_casing(monkeypatch, tmp_path):
    def no_network(*args, **kwargs):
        raise AssertionError("tiny_random must not touch the network")

    monkeypatch.setattr(socket, "getaddrinfo", no_network)
    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setenv("KERAS_BERT_HOME", str(tmp_path / "cache"))
    preset = load_preset("tiny_random", require_vocab=True)
    assert (preset.name, preset.path, preset.do_lower_case) == ("tiny_random", None, True)
    tokens = load_vocabulary(preset.vocab_path)
    assert len(tokens) == preset.config.vocab_size == 92
    assert len(set(tokens)) == len(tokens)
    assert not (tmp_path / "cache").exists()  # nothing downloaded or cached
    tokenizer = keras_bert.BertTokenizer.from_preset("tiny_random")
    ids = tokenizer(["Paris is biggest", "a great movie", "he ran home", "dull"])
    assert tokenizer.unk_token_id not in ids.flat_values.numpy().tolist()
    assert [tokens[i] for i in ids[0].numpy()] == ["paris", "is", "big", "##gest"]


def test_weights_are_the_same_on_every_load_and_fit_the_config():
    a, b = tiny_random.weights(), load_preset("tiny_random").weights()
    assert sorted(a) == sorted(b)
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)
    check_shapes({k: v.shape for k, v in a.items()}, tiny_random.CONFIG, "tiny_random")
    assert any(k.startswith("cls/") for k in a)  # the pre-training heads, as Google's have
    other = tiny_random.weights(seed=tiny_random.SEED + 1)
    assert not np.array_equal(a["bert/pooler/dense/bias"], other["bert/pooler/dense/bias"])
    kernel = a["bert/encoder/layer_0/attention/self/query/kernel"]
    assert kernel.std() == pytest.approx(0.2, rel=0.1)  # the spread the config records
    encoder = keras_bert.BertEncoder.from_preset("tiny_random")
    got = encoder.get_canonical_weights()
    for name, value in got.items():
        np.testing.assert_array_equal(value, a[name], err_msg=name)


def test_outputs_depend_on_the_text():
    """Its point: a test that tells two texts (or a pair and its swap) apart by the outputs
    has a signal far above float32 noise (BERT's 0.02 init gives ~3e-5)."""
    encoder = keras_bert.BertEncoder.from_preset("tiny_random")
    preprocessor = keras_bert.BertPreprocessor.from_preset("tiny_random", seq_length=16)
    pooled = encoder(preprocessor(TEXTS))["pooled_output"].numpy()
    assert np.ptp(pooled, axis=0).max() > 0.1
    ab = encoder(preprocessor((["a great movie"], ["dull"])))["pooled_output"].numpy()
    ba = encoder(preprocessor((["dull"], ["a great movie"])))["pooled_output"].numpy()
    assert np.abs(ab - ba).max() > 0.05
    keras.utils.set_random_seed(0)
    model = keras_bert.BertClassifier.from_preset("tiny_random", num_classes=2)
    assert model.encoder.bert_config.initializer_range == 0.2  # the fresh head is spread too
    logits = model.predict(TEXTS, verbose=0)
    assert np.ptp(logits, axis=0).max() > 0.02


def test_config_overrides_without_weights_and_errors_with_them():
    encoder = keras_bert.BertEncoder.from_preset("tiny_random", num_hidden_layers=2,
                                                 load_weights=False)
    assert encoder.bert_config.num_hidden_layers == 2
    with pytest.raises(CheckpointError, match=r"tiny_random: missing variable.*layer_1.*the "
                                              r"checkpoint has 1 layers, the config says "
                                              r"num_hidden_layers=2"):
        keras_bert.BertEncoder.from_preset("tiny_random", num_hidden_layers=2)
    with pytest.raises(CheckpointError, match="built into keras_bert; it has no URL"):
        load_preset("tiny_random", url="https://example.com/tiny_random.zip")


def test_misspelt_it_is_suggested_and_never_for_a_size():
    from keras_bert.presets.aliases import suggestions

    assert suggestions("tiny_randm")[0] == "tiny_random"
    assert "tiny_random" not in suggestions("bert_tiny_en_uncased")
    assert "tiny_random" not in suggestions("tiny_uncased")


# ------------------------------------------------------------------ every route, every class
def test_the_encoder_loads_by_name_and_directory_with_the_same_weights(tmp_path, monkeypatch):
    from keras_bert.presets import aliases

    # The registry gives tiny_random no other name; one put there resolves like any alias.
    monkeypatch.setitem(aliases.KERAS_HUB_NAMES, "bert_tiny_random_en", "tiny_random")
    preprocessor = keras_bert.BertPreprocessor.from_preset("tiny_random", seq_length=8)
    packed = {k: v.numpy() for k, v in preprocessor(TEXTS).items()}
    check_preset(keras_bert.BertEncoder, "tiny_random", packed, tmp_path=tmp_path,
                 config={"num_hidden_layers": 1, "hidden_size": 16, "vocab_size": 92,
                         "initializer_range": 0.2},
                 # the first block's output for "a great movie": the weights drawn are the
                 # ones they were (a change of the generator shows here)
                 expected_partial_output=[0.5303, 0.0929, 0.4679, 0.8980, -1.2359, 0.0973],
                 aliases=["bert_tiny_random_en"])


@pytest.mark.parametrize("cls, kwargs, shape", [
    (keras_bert.BertClassifier, {"num_classes": 2, "seq_length": 8}, (5, 2)),
    (keras_bert.BertPreprocessor, {"seq_length": 8}, {"input_word_ids": (5, 8),
                                                      "input_mask": (5, 8),
                                                      "input_type_ids": (5, 8)}),
    (keras_bert.BertTokenizer, {}, (5, 6)),
], ids=["classifier", "preprocessor", "tokenizer"])
def test_tasks_and_text_layers_load_by_name_and_directory(cls, kwargs, shape, tmp_path):
    check_preset(cls, "tiny_random", TEXTS, tmp_path=tmp_path, config={"vocab_size": 92},
                 output_shape=shape, **kwargs)
