"""What every format shares: a checkpoint must fit its config exactly, in every format.

A config with fewer layers than the checkpoint used to load and drop the extra layers without
a word; now the variables it has no place for are an error, in Google, Hugging Face, keras-hub
and keras_bert's own layout alike (one check, `common.check_shapes`).
"""

import json

import numpy as np
import pytest

from keras_bert import BertConfig, BertEncoder
from keras_bert.checkpoints import CheckpointError, google, huggingface, open_directory
from keras_bert.checkpoints.common import check_shapes, encoder_shapes, head_shapes
from tests.dependencies import require

from tests.presets.google_zips import TINY, write_google_dir

TWO_LAYERS = BertConfig(vocab_size=30, hidden_size=8, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=16, max_position_embeddings=16)
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(25)]
FEWER = r"the checkpoint has 2 layers, the config says num_hidden_layers=1"


def _weights(config, heads=False, seed=0):
    rng = np.random.default_rng(seed)
    shapes = encoder_shapes(config)
    if heads:
        shapes.update(head_shapes(config))
    return {k: rng.normal(size=s).astype("float32") for k, s in shapes.items()}


def _edit_json(path, **changes):
    values = json.loads(path.read_text())
    values.update(changes)
    path.write_text(json.dumps(values))


# ------------------------------------------------------------ the check itself
def test_unused_variables_are_named_with_count_and_layer_hint():
    shapes = {k: v for k, v in encoder_shapes(TWO_LAYERS.replace(num_hidden_layers=12)).items()}
    with pytest.raises(CheckpointError, match=r"src: 96 checkpoint variable\(s\) that the config "
                       r"has no place for: bert/encoder/layer_6/.* and 91 more \(the checkpoint "
                       r"has 12 layers, the config says num_hidden_layers=6\)"):
        check_shapes(shapes, TWO_LAYERS.replace(num_hidden_layers=6), "src")


def test_unused_names_sort_by_layer_number():
    shapes = encoder_shapes(TWO_LAYERS.replace(num_hidden_layers=11))
    with pytest.raises(CheckpointError) as info:
        check_shapes(shapes, TWO_LAYERS.replace(num_hidden_layers=9), "src")
    assert "no place for: bert/encoder/layer_9/" in str(info.value)  # not layer_10 first


def test_heads_and_names_outside_the_encoder_are_not_unused():
    shapes = encoder_shapes(TWO_LAYERS)
    shapes.update(head_shapes(TWO_LAYERS))
    shapes["cls/squad/output_weights"] = (2, 8)  # a task head this model does not use
    check_shapes(shapes, TWO_LAYERS, "src")


def test_an_unknown_encoder_variable_is_unused():
    shapes = encoder_shapes(TWO_LAYERS)
    shapes["bert/embeddings/extra_embeddings"] = (4, 8)
    with pytest.raises(CheckpointError, match=r"1 checkpoint variable\(s\) that the config has no "
                       r"place for: bert/embeddings/extra_embeddings\.$"):
        check_shapes(shapes, TWO_LAYERS, "src")


def test_a_checkpoint_without_a_pooler_fits_but_half_a_pooler_does_not():
    shapes = encoder_shapes(TWO_LAYERS)
    del shapes["bert/pooler/dense/kernel"], shapes["bert/pooler/dense/bias"]
    check_shapes(shapes, TWO_LAYERS, "src")  # transformers' task models save none
    shapes["bert/pooler/dense/bias"] = (8,)
    with pytest.raises(CheckpointError, match=r"src: missing variable\(s\) "
                       r"bert/pooler/dense/kernel\.$"):
        check_shapes(shapes, TWO_LAYERS, "src")
    shapes["bert/pooler/dense/kernel"] = (8, 9)
    with pytest.raises(CheckpointError, match=r"bert/pooler/dense/kernel has shape \(8, 9\)"):
        check_shapes(shapes, TWO_LAYERS, "src")


def test_missing_layers_name_both_layer_counts():
    with pytest.raises(CheckpointError, match=r"missing variable\(s\) bert/encoder/layer_2/.*"
                       r"\(the checkpoint has 2 layers, the config says num_hidden_layers=3\)"):
        check_shapes(encoder_shapes(TWO_LAYERS), TWO_LAYERS.replace(num_hidden_layers=3), "src")


# ------------------------------------------------------------ every format
def test_google_config_with_fewer_layers(tmp_path):
    write_google_dir(tmp_path, config=BertConfig(**TINY))  # 2 layers, heads, optimizer slots
    _edit_json(tmp_path / "bert_config.json", num_hidden_layers=1)
    with pytest.raises(CheckpointError, match=r"bert_model\.ckpt: 16 checkpoint variable\(s\) .*"
                       r"bert/encoder/layer_1/attention/output/LayerNorm/beta, .*" + FEWER):
        BertEncoder.from_preset(str(tmp_path))


def test_google_heads_and_optimizer_slots_still_load(tmp_path):
    config, weights = write_google_dir(tmp_path, config=BertConfig(**TINY))
    encoder = BertEncoder.from_preset(str(tmp_path))
    np.testing.assert_array_equal(encoder.get_canonical_weights()["bert/pooler/dense/bias"],
                                  weights["bert/pooler/dense/bias"])


def test_keras_bert_layout_config_with_fewer_layers(tmp_path):
    BertEncoder(TWO_LAYERS).save_to_preset(str(tmp_path))
    meta = json.loads((tmp_path / "keras_bert.json").read_text())
    meta["config"]["num_hidden_layers"] = 1  # both configs say so (they must agree)
    (tmp_path / "keras_bert.json").write_text(json.dumps(meta))
    _edit_json(tmp_path / "bert_config.json", num_hidden_layers=1)
    with pytest.raises(CheckpointError, match=FEWER):
        BertEncoder.from_preset(str(tmp_path))


def _hf_dir(tmp_path, heads=False, extra=None):
    huggingface.write_directory(tmp_path, TWO_LAYERS, _weights(TWO_LAYERS, heads=heads))
    if extra:
        from safetensors.numpy import load_file, save_file

        tensors = load_file(str(tmp_path / "model.safetensors"))
        tensors.update(extra)
        save_file(tensors, str(tmp_path / "model.safetensors"))
    return tmp_path


@pytest.mark.parametrize("heads", [False, True], ids=["BertModel", "BertForPreTraining"])
def test_huggingface_config_with_fewer_layers(tmp_path, heads):
    _hf_dir(tmp_path, heads=heads)
    _edit_json(tmp_path / "config.json", num_hidden_layers=1)
    prefix = "bert\\." if heads else ""
    with pytest.raises(CheckpointError, match=r"model\.safetensors: 16 checkpoint variable\(s\) .*"
                       rf"no place for: {prefix}encoder\.layer\.1\..*" + FEWER):
        BertEncoder.from_preset(str(tmp_path))


def test_huggingface_task_heads_and_buffers_are_not_unused(tmp_path):
    prefixed = {k: np.zeros(2, "float32") for k in (
        "bert.embeddings.position_ids", "classifier.weight", "classifier.bias",
        "qa_outputs.weight", "cls.predictions.decoder.weight")}
    _hf_dir(tmp_path, heads=True, extra=prefixed)
    assert open_directory(tmp_path).weights().keys() >= encoder_shapes(TWO_LAYERS).keys()


def test_huggingface_unknown_encoder_tensor_is_unused(tmp_path):
    _hf_dir(tmp_path, extra={"encoder.layer.0.attention.self.rotary.weight": np.zeros(2, "float32"),
                             "embeddings.position_ids": np.arange(16)[None]})
    with pytest.raises(CheckpointError,
                       match=r"no place for: encoder\.layer\.0\.attention\.self\.rotary\.weight\.$"):
        open_directory(tmp_path).weights()


def test_minilm_loads_with_its_position_ids_buffer(minilm_path):
    weights = open_directory(minilm_path).weights()
    assert len(weights) == len(encoder_shapes(open_directory(minilm_path).config))


def test_keras_hub_config_with_fewer_layers(tmp_path):
    keras_hub = require("keras_hub")
    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=30, num_layers=2, num_heads=2, hidden_dim=8, intermediate_dim=16,
        max_sequence_length=16)
    backbone.save_to_preset(str(tmp_path))
    keras_hub.models.BertTokenizer(vocabulary=VOCAB, lowercase=True).save_to_preset(str(tmp_path))
    values = json.loads((tmp_path / "config.json").read_text())
    values["config"]["num_layers"] = 1
    (tmp_path / "config.json").write_text(json.dumps(values))
    with pytest.raises(CheckpointError, match=r"model\.weights\.h5: 16 checkpoint variable\(s\) .*"
                       r"no place for: layers/transformer_encoder_1/.*" + FEWER):
        BertEncoder.from_preset(str(tmp_path))


def test_google_reader_without_config_reads_everything(tmp_path):
    write_google_dir(tmp_path, config=BertConfig(**TINY))
    weights = google.read_checkpoint(str(tmp_path / "bert_model.ckpt"))
    assert "bert/encoder/layer_1/output/dense/bias" in weights and "global_step" not in weights


def test_weights_for_an_overridden_config_with_fewer_layers(tmp_path):
    """`weights(config)` checks against the config the model is built from (overrides)."""
    config, _ = write_google_dir(tmp_path, config=BertConfig(**TINY))
    checkpoint = open_directory(tmp_path)
    with pytest.raises(CheckpointError, match=FEWER):
        checkpoint.weights(config.replace(num_hidden_layers=1))


def test_vocabulary_that_is_not_utf8_is_named(tmp_path):
    write_google_dir(tmp_path, config=BertConfig(**TINY))
    (tmp_path / "vocab.txt").write_bytes(b"[PAD]\n[UNK]\n\xff\xfebad\n")
    with pytest.raises(CheckpointError, match=rf"{tmp_path / 'vocab.txt'}', line 3: not valid "
                       r"UTF-8 \(byte 0xff"):
        open_directory(tmp_path)


def test_config_and_vocabulary_are_read_through_gfile():
    # ram:// stands for gs://: both go through tf.io.gfile, neither is a local path.
    import tensorflow as tf

    from keras_bert.checkpoints.common import check_vocab, read_json_object, require_file

    root = "ram://keras_bert_test_common"
    config = BertConfig(vocab_size=5, hidden_size=8, num_hidden_layers=1,
                        num_attention_heads=2, intermediate_size=16)
    with tf.io.gfile.GFile(f"{root}/config.json", "w") as f:
        f.write(json.dumps({"hidden_size": 8}))
    with tf.io.gfile.GFile(f"{root}/vocab.txt", "w") as f:
        f.write("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n")
    assert read_json_object(f"{root}/config.json") == {"hidden_size": 8}
    assert require_file(f"{root}/config.json", "config") == f"{root}/config.json"
    check_vocab(f"{root}/vocab.txt", config)
    with pytest.raises(CheckpointError, match="Vocabulary file not found: ram://"):
        check_vocab(f"{root}/missing.txt", config)
    with pytest.raises(CheckpointError, match=r"Cannot read the JSON file ram://\S+missing"):
        read_json_object(f"{root}/missing.json")
