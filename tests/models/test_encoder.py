"""BertEncoder.from_preset / save_to_preset and round trips through every writer."""

import os
import re

import numpy as np
import pytest
import tensorflow as tf

import keras
from keras_bert import BertConfig, BertEncoder
from keras_bert.checkpoints import google, huggingface, open_directory
from keras_bert.checkpoints.common import CheckpointError
from tests import keras_files


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


def test_preset_state_survives_a_keras_round_trip(tmp_path):
    """What from_preset records (vocabulary, casing, name) is kept by a .keras file, so the
    loaded encoder's save_to_preset writes a preset that loads fully, as the original's."""
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"Tok{i}" for i in range(35)]
    (tmp_path / "vocab.txt").write_text("".join(t + "\n" for t in tokens), encoding="utf-8")
    encoder = _small_encoder()
    encoder.vocab_path = str(tmp_path / "vocab.txt")  # read at once
    encoder.do_lower_case = False
    encoder.save_to_preset(str(tmp_path / "preset"))
    preset = BertEncoder.from_preset(str(tmp_path / "preset"))  # named after its directory
    assert (preset.vocabulary, preset.do_lower_case, preset.preset_name) == (
        tokens, False, "preset")
    path = str(tmp_path / "encoder.keras")
    preset.save(path)
    config = preset.get_config()
    assert (config["do_lower_case"], config["preset_name"]) == (False, "preset")
    assert keras_files.assert_vocabulary_is_an_asset(path, tokens) == ["assets/vocabulary.txt"]
    again = keras.models.load_model(path)
    assert (again.vocabulary, again.do_lower_case, again.preset_name) == (
        tokens, False, "preset")
    assert again.vocab_path is None  # the tokens came from the archive
    again.save_to_preset(str(tmp_path / "again"))
    from keras_bert.text import BertTokenizer

    tokenizer = BertTokenizer.from_preset(str(tmp_path / "again"))
    assert tokenizer.get_vocabulary() == tokens and tokenizer.do_lower_case is False
    inputs = _inputs(40)
    _assert_identical(_outputs(encoder, inputs),
                      _outputs(BertEncoder.from_preset(str(tmp_path / "again")), inputs))
    # An encoder made from a config alone has none of it, and a .keras file adds none.
    plain = keras_files.round_trip(_small_encoder(), str(tmp_path / "plain.keras"))
    assert (plain.vocabulary, plain.do_lower_case, plain.preset_name) == (None, None, None)
    assert keras_files.vocabulary_assets(str(tmp_path / "plain.keras")) == {}
    encoder.vocab_path = None
    assert encoder.vocabulary is None
    with pytest.raises(FileNotFoundError, match=r"vocabulary file not found: .*nope\.txt"):
        encoder.vocab_path = str(tmp_path / "nope.txt")


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

def _tiny_inputs(batch=3, seq=5, **changes):
    ids = np.full((batch, seq), 7, "int32")
    inputs = {"input_word_ids": ids, "input_mask": np.ones_like(ids),
              "input_type_ids": np.zeros_like(ids)}
    inputs.update(changes)
    return inputs


@pytest.mark.parametrize("name", ["input_mask", "input_type_ids"])
def test_inputs_of_other_shapes_are_not_broadcast(name):
    """A 1-row input_mask or input_type_ids was broadcast over the whole batch."""
    encoder = _small_encoder()
    one_row = _tiny_inputs(**{name: np.ones((1, 5), "int32")})
    got = {"input_mask": "(3, 5)", "input_type_ids": "(3, 5)", name: "(1, 5)"}
    with pytest.raises(ValueError, match=re.escape(
            "input_word_ids, input_mask and input_type_ids must have the same shape; got "
            f"input_word_ids (3, 5), input_mask {got['input_mask']}, "
            f"input_type_ids {got['input_type_ids']}")):
        encoder(one_row)
    with pytest.raises(ValueError, match=r"input_mask \(3, 4\)"):
        encoder(_tiny_inputs(input_mask=np.ones((3, 4), "int32")))
    spec = {k: tf.TensorSpec([None, None], tf.int32) for k in one_row}
    graph = tf.function(lambda x: encoder(x)["pooled_output"], input_signature=[spec])
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"must have the same shape; got\] \[input_word_ids\] \[3 5\]"):
        graph({k: tf.constant(v) for k, v in one_row.items()})
    assert graph({k: tf.constant(v) for k, v in _tiny_inputs().items()}).shape == (3, 16)


def test_values_dtypes_ranks_and_keys():
    encoder = _small_encoder()
    bad_values = [
        ("input_word_ids", 40, r"input_word_ids must be in \[0, 40\) \(vocab_size\); it holds 40"),
        ("input_word_ids", -1, "it holds -1"),
        ("input_type_ids", 2, r"input_type_ids must be in \[0, 2\) \(type_vocab_size\)"),
        ("input_mask", 2, r"input_mask must be in \[0, 2\) \(0 or 1\); it holds 2"),
    ]
    for name, value, message in bad_values:
        with pytest.raises(ValueError, match=message):
            encoder(_tiny_inputs(**{name: np.full((3, 5), value, "int32")}))
    spec = {k: tf.TensorSpec([None, None], tf.int32) for k in _tiny_inputs()}
    graph = tf.function(lambda x: encoder(x)["pooled_output"], input_signature=[spec])
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"input_word_ids must be in \[0, 40\) \(vocab_size\); it holds "
                             r"values from\] \[7\] \[to\] \[99\]"):
        graph({k: tf.constant(v) for k, v in _tiny_inputs(
            input_word_ids=np.array([[7] * 4 + [99]] * 3, "int32")).items()})
    with pytest.raises(TypeError, match="input_word_ids must hold integer ids, got dtype float32"):
        encoder(_tiny_inputs(input_word_ids=np.full((3, 5), 7.7, "float32")))  # was cast to 7
    with pytest.raises(TypeError, match="input_word_ids must hold integer ids, got dtype string"):
        encoder(_tiny_inputs(input_word_ids=np.full((3, 5), "a")))
    for shape in ((5,), (1, 3, 5)):
        with pytest.raises(ValueError, match=r"inputs must be \[batch, seq\]; got input_word_ids "
                                             + re.escape(str(shape))):
            encoder({k: np.ones(shape, "int32") for k in _tiny_inputs()})
    with pytest.raises(ValueError, match=r"at least one token \(\[CLS\], which the pooler reads\)"):
        encoder(_tiny_inputs(seq=0))  # was a StridedSlice error from the pooler
    with pytest.raises(tf.errors.InvalidArgumentError, match="at least one token"):
        graph({k: tf.constant(v) for k, v in _tiny_inputs(seq=0).items()})
    with pytest.raises(ValueError, match="the inputs lack input_type_ids"):
        encoder({k: v for k, v in _tiny_inputs().items() if k != "input_type_ids"})
    with pytest.raises(TypeError, match="takes a dict with keys input_word_ids"):
        encoder([np.ones((3, 5), "int32")] * 3)
    # int64 ids, a bool mask and extra keys (the masker's) are fine
    want = encoder(_tiny_inputs())["pooled_output"]
    fine = _tiny_inputs(input_word_ids=np.full((3, 5), 7, "int64"),
                        input_mask=np.ones((3, 5), bool), masked_lm_ids=np.zeros((3, 2)))
    np.testing.assert_array_equal(encoder(fine)["pooled_output"], want)


def test_symbolic_inputs_and_nested_models(tmp_path):
    encoder = _small_encoder()
    inputs = {k: keras.Input(shape=(None,), dtype="int32", name=k) for k in _tiny_inputs()}
    outer = keras.Model(inputs, encoder(inputs)["pooled_output"])
    x = _tiny_inputs()
    np.testing.assert_array_equal(outer(x), encoder(x)["pooled_output"])
    with pytest.raises(ValueError, match="must be in"):  # the checks run inside the outer model
        outer(_tiny_inputs(input_word_ids=np.full((3, 5), 40, "int32")))
    path = str(tmp_path / "outer.keras")
    outer.save(path)
    np.testing.assert_array_equal(keras.models.load_model(path)(x), outer(x))
    mismatched = {"input_word_ids": keras.Input(batch_shape=(2, 5), dtype="int32"),
                  "input_mask": keras.Input(batch_shape=(1, 5), dtype="int32"),
                  "input_type_ids": keras.Input(batch_shape=(2, 5), dtype="int32")}
    with pytest.raises(ValueError, match=r"input_mask \(1, 5\)"):
        encoder(mismatched)


def test_output_positions_compute_those_rows_and_the_pooled_output():
    encoder = _small_encoder()
    x = _inputs(40, seq=5)
    full = encoder(x)
    positions = np.array([[4, 0], [1, 1], [3, 2]], "int32")
    rows = encoder(x, output_positions=positions)
    assert sorted(rows) == ["pooled_output", "sequence_output"]
    np.testing.assert_allclose(
        rows["sequence_output"],
        np.take_along_axis(full["sequence_output"].numpy(), positions[..., None], 1), atol=1e-6)
    np.testing.assert_allclose(rows["pooled_output"], full["pooled_output"], atol=1e-6)
    first = encoder(x, output_positions=1)
    assert first["sequence_output"].shape == (3, 1, 16)
    np.testing.assert_allclose(first["pooled_output"], full["pooled_output"], atol=1e-6)
    # Inside a model: positions as a second input, checked where they enter.
    inputs = {k: keras.Input(shape=(None,), dtype="int32", name=k) for k in x}
    where = keras.Input(shape=(None,), dtype="int32", name="where")
    outer = keras.Model([inputs, where], encoder(inputs, output_positions=where)["sequence_output"])
    assert outer.output.shape == (None, None, 16)
    np.testing.assert_allclose(outer([x, positions]), rows["sequence_output"], atol=1e-6)
    with pytest.raises(ValueError, match=r"output_positions must be in \[0, 5\) \(the "
                                         r"sequence length\); it holds 5"):
        outer([x, np.full((3, 2), 5, "int32")])


def test_output_positions_errors():
    encoder = _small_encoder()
    x = _tiny_inputs()
    for bad in (0, -2, True):
        with pytest.raises(ValueError, match=r"output_positions must be an int >= 1 \(the first "
                                             rf"n positions\) or \[batch, positions\] indices; "
                                             rf"got {bad!r}"):
            encoder(x, output_positions=bad)
    with pytest.raises(ValueError, match=r"output_positions must be \[batch, positions\]; got "
                                         r"shape \(2,\)"):
        encoder(x, output_positions=np.array([1, 2]))
    with pytest.raises(TypeError, match="output_positions must hold integer ids, got dtype float"):
        encoder(x, output_positions=np.ones((3, 1)))
    with pytest.raises(ValueError, match="the batch sizes differ: output_positions has 2, "
                                         "input_word_ids has 3"):
        encoder(x, output_positions=np.ones((2, 1), "int32"))
    with pytest.raises(ValueError, match="it holds -1"):
        encoder(x, output_positions=np.full((3, 1), -1, "int32"))
    spec = {k: tf.TensorSpec([None, None], tf.int32) for k in x}
    graph = tf.function(lambda x, p: encoder(x, output_positions=p)["sequence_output"],
                        input_signature=[spec, tf.TensorSpec([None, None], tf.int32)])
    assert graph(x, np.zeros((3, 2), "int32")).shape == (3, 2, 16)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"output_positions must be in \[0, seq_length\); seq_length is\] "
                             r"\[5\] \[and it holds values from\] \[0\] \[to\] \[7\]"):
        graph(x, np.array([[0], [7], [1]], "int32"))
