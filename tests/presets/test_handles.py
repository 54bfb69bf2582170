"""Parsing hub handles and refusing unsupported schemes (nothing is downloaded here)."""

import pytest

from keras_bert import BertEncoder, storage
from keras_bert.checkpoints import CheckpointError
from keras_bert.presets import load_preset
from keras_bert.presets.handles import UnsupportedHandleError, check_scheme, parse

from google_zips import write_google_dir  # tests/presets/google_zips.py


@pytest.mark.parametrize("text, hub, parts, revision", [
    ("hf://sentence-transformers/all-MiniLM-L6-v2", "hf",
     ("sentence-transformers", "all-MiniLM-L6-v2"), None),
    ("hf://google-bert/bert-base-uncased@86b5e0934494bd15c9632b12f734a8a67f723594", "hf",
     ("google-bert", "bert-base-uncased"), "86b5e0934494bd15c9632b12f734a8a67f723594"),
    ("https://huggingface.co/google-bert/bert-base-uncased", "hf",
     ("google-bert", "bert-base-uncased"), None),
    ("https://huggingface.co/google-bert/bert-base-uncased/tree/v1", "hf",
     ("google-bert", "bert-base-uncased"), "v1"),
    ("kaggle://keras/bert/keras/bert_base_en_uncased", "kaggle",
     ("keras", "bert", "keras", "bert_base_en_uncased"), None),
    ("kaggle://keras/bert/keras/bert_base_en_uncased/3", "kaggle",
     ("keras", "bert", "keras", "bert_base_en_uncased"), "3"),
    ("https://www.kaggle.com/models/keras/bert/keras/bert_tiny_en_uncased/3", "kaggle",
     ("keras", "bert", "keras", "bert_tiny_en_uncased"), "3"),
    ("https://www.kaggle.com/models/keras/bert/frameworks/keras/variations/"
     "bert_tiny_en_uncased/versions/2", "kaggle",
     ("keras", "bert", "keras", "bert_tiny_en_uncased"), "2"),
])
def test_handles_parse(text, hub, parts, revision):
    handle = parse(text)
    assert (handle.hub, handle.parts, handle.revision) == (hub, parts, revision)
    assert parse(str(handle)) == dataclass_without_text(handle)


def dataclass_without_text(handle):
    return type(handle)(handle.hub, handle.parts, handle.revision, str(handle))


def test_cache_keys_follow_the_handle():
    assert parse("hf://a/b").cache_parts == ("hf", "a", "b", "main")
    assert parse("hf://a/b@refs/pr/1").cache_parts == ("hf", "a", "b", "refs%2Fpr%2F1")
    assert parse("kaggle://o/m/keras/v").cache_parts == ("kaggle", "o", "m", "keras", "v", "latest")


@pytest.mark.parametrize("text, expected", [
    ("hf://just-a-name", "hf://owner/name"),
    ("hf://a/b/c", "hf://owner/name"),
    ("hf://a/b@", "hf://owner/name@revision"),
    ("kaggle://keras/bert", "kaggle://owner/model/framework/variation"),
    ("kaggle://keras/bert/keras/bert_base_en_uncased/latest", "the version is a number"),
])
def test_malformed_handles_show_the_expected_form(text, expected):
    with pytest.raises(UnsupportedHandleError, match=f"Malformed handle.*{expected}"):
        BertEncoder.from_preset(text)


@pytest.mark.parametrize("text", ["s3://bucket/bert", "tfhub://bert_en_uncased", "foo://x",
                                  "http://example.com/bert.tar.gz"])
def test_unsupported_schemes_list_the_supported_ones(text):
    with pytest.raises(UnsupportedHandleError) as info:
        BertEncoder.from_preset(text)
    message = str(info.value)
    scheme = text.split("://")[0]
    assert f"Unsupported scheme '{scheme}://'" in message
    for supported in ("hf://owner/name[@revision]", "kaggle://owner/model/framework/variation",
                      "gs://", "ram://", "a local path", "a registered name"):
        assert supported in message
    assert isinstance(info.value, CheckpointError)


def test_file_system_schemes_keep_working(tmp_path):
    check_scheme("gs://bucket/bert", storage.file_system_schemes())
    write_google_dir(tmp_path / "src")
    path = "ram://handles_test/bert"
    for name in ("bert_config.json", "vocab.txt", "bert_model.ckpt.index",
                 "bert_model.ckpt.data-00000-of-00001"):
        storage.write_bytes(f"{path}/{name}", (tmp_path / "src" / name).read_bytes())
    assert load_preset(path).config.hidden_size == 8
    with pytest.raises(CheckpointError, match="No such file or directory: ram://handles_test/no"):
        load_preset("ram://handles_test/no")
