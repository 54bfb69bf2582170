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
