"""formats.py: the one table of formats; directories read through tf.io.gfile, so presets
can live on gs:// (ram:// stands for it here: the same tf.io.gfile file-system API)."""

import os

import numpy as np
import pytest
import tensorflow as tf

from keras_bert import BertEncoder, BertPreprocessor
from keras_bert.checkpoints import FORMATS, CheckpointError, detect_format, google, huggingface
from tests.models.tiny import VOCAB, tiny_encoder

INPUTS = {"input_word_ids": np.array([[2, 5, 6, 3]], "int32"),
          "input_mask": np.ones((1, 4), "int32"), "input_type_ids": np.zeros((1, 4), "int32")}


def _copy_to_ram(local, ram):
    tf.io.gfile.makedirs(ram)
    for name in os.listdir(local):
        tf.io.gfile.copy(os.path.join(local, name), f"{ram}/{name}", overwrite=True)
    return ram


@pytest.mark.parametrize("fmt", ["google", "huggingface"])
def test_a_preset_on_a_gfile_path_loads(tmp_path, fmt):
    encoder = tiny_encoder(seed=0)
    module = {"google": google, "huggingface": huggingface}[fmt]
    module.write_directory(str(tmp_path), encoder.bert_config, encoder.get_canonical_weights())
    (tmp_path / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    ram = _copy_to_ram(str(tmp_path), f"ram://keras_bert_formats_test/{fmt}")
    assert detect_format(ram) == fmt
    again = BertEncoder.from_preset(ram)
    np.testing.assert_array_equal(again(INPUTS)["pooled_output"],
                                  encoder(INPUTS)["pooled_output"])
    ids = BertPreprocessor.from_preset(ram, seq_length=6)(["the cat"])["input_word_ids"]
    assert ids.numpy()[0, 0] == 2


def test_the_table_lists_every_format_in_detection_order(tmp_path):
    # (a sentence-transformers model is a Hugging Face checkpoint and more: recognised first)
    assert list(FORMATS) == ["keras_bert", "google", "keras_hub", "sentence_transformers",
                             "huggingface"]
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(CheckpointError, match=r"is not a BERT checkpoint directory.*notes\.txt"):
        detect_format(str(tmp_path))
    with pytest.raises(CheckpointError, match="Not a directory"):
        detect_format(str(tmp_path / "notes.txt"))


@pytest.mark.parametrize("fmt", ["keras_bert", "google", "huggingface", "sentence_transformers"])
def test_every_writer_writes_to_a_gfile_path_and_nothing_locally(tmp_path, monkeypatch, fmt):
    """The writers themselves go through keras_bert.storage: straight to ram:// (gs://)."""
    from keras_bert import storage
    from keras_bert.checkpoints import keras_bert_layout
    from tests.local_disk import nothing_written_locally

    encoder = tiny_encoder(seed=0)
    ram = f"ram://keras_bert_formats_test/written/{fmt}"
    storage.rmtree(ram)
    vocab = storage.write_text("ram://keras_bert_formats_test/vocab/vocab.txt",
                               "\n".join(VOCAB) + "\n")
    with nothing_written_locally(tmp_path, monkeypatch):
        if fmt == "keras_bert":
            keras_bert_layout.write(ram, encoder.bert_config, encoder.get_canonical_weights(),
                         vocab_path=vocab, do_lower_case=True)
        elif fmt == "sentence_transformers":
            FORMATS[fmt].write(ram, encoder.bert_config, encoder.get_canonical_weights(),
                               FORMATS[fmt].default_description(), vocab_path=vocab,
                               do_lower_case=True)
        else:
            FORMATS[fmt].write_directory(ram, encoder.bert_config,
                                         encoder.get_canonical_weights(), vocab_path=vocab)
        assert not [name for name in storage.listdir(ram) if name.startswith(".tmp-")]
        assert detect_format(ram) == fmt
        again = BertEncoder.from_preset(ram)
    np.testing.assert_array_equal(again(INPUTS)["pooled_output"],
                                  encoder(INPUTS)["pooled_output"])
    assert again.vocabulary == VOCAB
    storage.rmtree(ram)


def _tiny_directory(tmp_path, fmt):
    from keras_bert.checkpoints import keras_bert_layout

    encoder = tiny_encoder(seed=0)
    path = str(tmp_path / fmt)
    if fmt == "keras_bert":
        keras_bert_layout.write(path, encoder.bert_config, encoder.get_canonical_weights())
    else:
        FORMATS[fmt].write_directory(path, encoder.bert_config, encoder.get_canonical_weights())
    return path, encoder


@pytest.mark.parametrize("fmt, data", [("keras_bert", "bert_model.ckpt.data-00000-of-00001"),
                                       ("google", "bert_model.ckpt.data-00000-of-00001"),
                                       ("huggingface", "model.safetensors")])
def test_variables_are_listed_without_reading_a_tensor(tmp_path, fmt, data):
    """The listing reads the checkpoint's index (the safetensors header) alone: with the
    tensors cut off it still lists every variable, while reading the weights fails."""
    from keras_bert.checkpoints import open_directory
    from keras_bert.checkpoints.common import encoder_shapes

    path, encoder = _tiny_directory(tmp_path, fmt)
    whole = (tmp_path / fmt / data).read_bytes()
    header = 8 + int.from_bytes(whole[:8], "little") if fmt == "huggingface" else 0
    (tmp_path / fmt / data).write_bytes(whole[:header + 16])  # the tensors cut off
    preset = open_directory(path)
    assert preset.variable_shapes() == encoder_shapes(encoder.bert_config)
    preset.check_variables()
    with pytest.raises(CheckpointError, match=r"Cannot read .*" + data.split(".")[0]):
        preset.weights()
    with pytest.raises(CheckpointError, match=r"layer_0/intermediate/dense/kernel has shape "
                       r"\(16, 32\) but the config expects \(16, 48\)"):
        preset.check_variables(encoder.bert_config.replace(intermediate_size=48))


def test_keras_hub_variables_are_listed_from_the_h5_datasets(tmp_path):
    from keras_bert.checkpoints import keras_hub, open_directory
    from keras_bert.checkpoints.common import encoder_shapes
    from tests.dependencies import require

    kh = require("keras_hub")
    backbone = kh.models.BertBackbone(vocabulary_size=30, num_layers=2, num_heads=2,
                                      hidden_dim=8, intermediate_dim=16, max_sequence_length=16)
    backbone.save_to_preset(str(tmp_path))
    preset = open_directory(tmp_path)
    assert preset.variable_shapes() == encoder_shapes(preset.config)
    assert preset.variable_shapes() == {  # keras-hub's multi-head layouts, flattened
        name: value.shape for name, value in keras_hub.backbone_to_canonical(backbone).items()}
    _, unexplained, source = keras_hub.list_variables(str(tmp_path),
                                                      preset.config.replace(num_hidden_layers=1))
    assert source.endswith("model.weights.h5") and len(unexplained) == 16
    assert all(name.startswith("layers/transformer_encoder_1/") for name in unexplained)


# ------------------------------------------------------------ links out of a preset directory
def _google_with_vocab(tmp_path):
    path, encoder = _tiny_directory(tmp_path, "google")
    (tmp_path / "google" / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    return tmp_path / "google", encoder


def test_a_file_linked_to_a_system_file_is_refused_unread(tmp_path):
    directory, _ = _google_with_vocab(tmp_path)
    (directory / "vocab.txt").unlink()
    (directory / "vocab.txt").symlink_to("/etc/passwd")
    with pytest.raises(CheckpointError) as info:
        BertEncoder.from_preset(str(directory))
    message = str(info.value)
    assert message.startswith(f"{directory / 'vocab.txt'} is a link to /etc/passwd, outside "
                              f"the preset directory {directory}")
    assert "tokens" not in message  # nothing of the file was read, nor its lines counted


def test_a_link_to_another_vocabulary_outside_is_refused(tmp_path):
    directory, _ = _google_with_vocab(tmp_path)
    outside = tmp_path / "elsewhere" / "vocab.txt"
    outside.parent.mkdir()
    (directory / "vocab.txt").rename(outside)
    (directory / "vocab.txt").symlink_to(outside)
    with pytest.raises(CheckpointError, match=rf"vocab\.txt is a link to {outside}, outside"):
        BertPreprocessor.from_preset(str(directory))
    # A linked folder leads outside as much as a linked file.
    (directory / "vocab.txt").unlink()
    (directory / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    data = next(directory.glob("bert_model.ckpt.data-*"))
    data.rename(tmp_path / "elsewhere" / data.name)
    data.symlink_to(tmp_path / "elsewhere" / data.name)
    with pytest.raises(CheckpointError, match=r"bert_model\.ckpt\.data-00000-of-00001 is a link"):
        BertEncoder.from_preset(str(directory))


def test_links_within_the_directory_are_followed(tmp_path):
    directory, encoder = _google_with_vocab(tmp_path)
    (directory / "vocab.txt").rename(directory / "words.txt")
    (directory / "vocab.txt").symlink_to("words.txt")
    again = BertEncoder.from_preset(str(directory))
    assert again.vocabulary == VOCAB
    np.testing.assert_array_equal(again(INPUTS)["pooled_output"],
                                  encoder(INPUTS)["pooled_output"])
    linked = tmp_path / "linked_dir"
    linked.symlink_to(directory)  # the directory itself may be a link
    assert BertEncoder.from_preset(str(linked)).vocabulary == VOCAB


def test_a_hugging_face_hub_cache_snapshot_loads(tmp_path, monkeypatch):
    """huggingface_hub's cache keeps each file once in the repository's blobs/ and links
    snapshots/<commit>/<file> to it: that layout loads, a link elsewhere does not."""
    from tests.dependencies import require
    from tests.presets.hub_servers import HfHub, files_of

    hub_client = require("huggingface_hub")
    path, encoder = _tiny_directory(tmp_path, "huggingface")
    (tmp_path / "huggingface" / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    hub = HfHub("org/tiny", files_of(path))
    try:
        files = [hub_client.hf_hub_download("org/tiny", name, revision=hub.commit,
                                            cache_dir=str(tmp_path / "cache"), endpoint=hub.url)
                 for name in ("config.json", "model.safetensors", "vocab.txt")]
    finally:
        hub.close()
    snapshot = os.path.dirname(files[0])
    assert snapshot.endswith(os.path.join("models--org--tiny", "snapshots", hub.commit))
    assert os.path.islink(os.path.join(snapshot, "model.safetensors"))
    assert "/blobs/" in os.path.realpath(os.path.join(snapshot, "model.safetensors"))
    again = BertEncoder.from_preset(snapshot)
    np.testing.assert_array_equal(again(INPUTS)["pooled_output"],
                                  encoder(INPUTS)["pooled_output"])
    vocab = os.path.join(snapshot, "vocab.txt")
    os.remove(vocab)
    os.symlink(tmp_path / "huggingface" / "vocab.txt", vocab)  # not into the blobs
    with pytest.raises(CheckpointError, match=r"vocab\.txt is a link to .*/huggingface/vocab\.txt"):
        BertEncoder.from_preset(snapshot)
