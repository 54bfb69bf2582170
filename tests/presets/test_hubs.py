"""hf:// and kaggle:// handles, downloaded by huggingface_hub and kagglehub from stand-in hubs
on 127.0.0.1 (tests/presets/hub_servers.py), give what the same files give from a directory."""

import os
import shutil
import socket
import time

import numpy as np
import pytest

from keras_bert import BertClassifier, BertEncoder, BertPreprocessor, BertTokenizer
from keras_bert.checkpoints import CheckpointError
from keras_bert.presets import load_preset
from keras_bert.presets.download import DownloadError
from tests.dependencies import require

import hub_servers as hubs  # tests/presets/hub_servers.py

COMMIT = "0123456789abcdef0123456789abcdef01234567"
TEXTS = ["the movie was great", "a dull plots"]


@pytest.fixture(scope="module")
def hf_dir(tmp_path_factory):
    require("transformers")
    require("huggingface_hub")
    return hubs.write_hf_checkpoint(tmp_path_factory.mktemp("hf") / "tiny-bert")


@pytest.fixture(scope="module")
def keras_hub_dir(tmp_path_factory):
    require("keras_hub")
    require("kagglehub")
    return hubs.write_keras_hub_preset(tmp_path_factory.mktemp("kh") / "bert_tiny_test")


@pytest.fixture
def hf_hub(hf_dir, monkeypatch, cache):
    hub = hubs.HfHub("org/tiny-bert", hubs.files_of(hf_dir), commit=COMMIT)
    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    yield hub
    hub.close()


def _kaggle_endpoint(monkeypatch, url, cache):
    """kagglesdk picks its endpoint from a fixed table by KAGGLE_API_ENVIRONMENT: the
    LOCALHOST environment's entry is pointed at ``url``."""
    from kagglesdk import kaggle_env

    monkeypatch.setenv("KAGGLE_API_ENVIRONMENT", "LOCALHOST")
    monkeypatch.setitem(kaggle_env._env_to_endpoint, kaggle_env.KaggleEnv.LOCAL, url)
    for name in ("KAGGLE_USERNAME", "KAGGLE_KEY", "KAGGLE_API_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("KAGGLE_CONFIG_DIR", str(cache / "no-kaggle-credentials"))


@pytest.fixture
def kaggle_hub(keras_hub_dir, monkeypatch, cache):
    hub = hubs.KaggleHub("keras/bert/keras/bert_tiny_test", hubs.files_of(keras_hub_dir))
    _kaggle_endpoint(monkeypatch, hub.url, cache)
    yield hub
    hub.close()


def _outputs(encoder):
    ids = np.array([[2, 5, 6, 7, 8, 3, 0, 0], [2, 10, 9, 11, 12, 3, 13, 3]], "int32")
    mask = (ids > 0).astype("int32")
    segments = np.array([[0] * 8, [0] * 6 + [1, 1]], "int32")
    out = encoder({"input_word_ids": ids, "input_mask": mask, "input_type_ids": segments})
    return {k: np.asarray(out[k]) for k in ("sequence_output", "pooled_output")}


def _assert_same_model(handle, directory):
    """Every from_preset entry point gives from ``handle`` what it gives from ``directory``."""
    got, want = BertEncoder.from_preset(handle), BertEncoder.from_preset(str(directory))
    assert got.bert_config == want.bert_config
    for name, value in want.get_canonical_weights().items():
        np.testing.assert_array_equal(got.get_canonical_weights()[name], value, err_msg=name)
    for key, value in _outputs(want).items():
        np.testing.assert_array_equal(_outputs(got)[key], value, err_msg=key)
    assert got.do_lower_case is True and got.vocabulary == hubs.VOCAB
    pre_got = BertPreprocessor.from_preset(handle, seq_length=8)(TEXTS)
    pre_want = BertPreprocessor.from_preset(str(directory), seq_length=8)(TEXTS)
    for key in pre_want:
        np.testing.assert_array_equal(pre_got[key], pre_want[key], err_msg=key)
    assert BertTokenizer.from_preset(handle).vocabulary_size == len(hubs.VOCAB)
    classifier = BertClassifier.from_preset(handle, num_classes=2, seq_length=8)
    assert classifier.predict(TEXTS, verbose=0).shape == (2, 2)
    return got


def _no_temporaries(root):
    return [os.path.join(d, n) for d, dirs, files in os.walk(root) for n in dirs + files
            if ".tmp" in n or n == ".cache"]


# ------------------------------------------------------------------------ Hugging Face
def test_hf_handle_downloads_once_and_gives_the_directory_outputs(hf_hub, hf_dir, cache,
                                                                  capsys):
    encoder = _assert_same_model("hf://org/tiny-bert", hf_dir)
    assert "Downloading hf://org/tiny-bert (commit 0123456789ab)" in capsys.readouterr().err
    # One listing, then HEAD and GET of each needed file, all at the listed commit.
    assert hf_hub.requests[0] == ("GET", "/api/models/org/tiny-bert?blobs=true")
    fetched = sorted(p.rsplit("/", 1)[1] for m, p in hf_hub.requests if m == "GET"
                     and "/resolve/" in p)
    assert fetched == ["config.json", "model.safetensors", "tokenizer_config.json", "vocab.txt"]
    assert all(f"/resolve/{COMMIT}/" in p for _, p in hf_hub.requests[1:])
    # Converted once into keras_bert's layout, keyed by the handle; nothing temporary left.
    target = cache / "hub" / "hf" / "org" / "tiny-bert" / "main"
    assert encoder.vocab_path == str(target / "vocab.txt")
    metadata = load_preset("hf://org/tiny-bert").metadata
    assert metadata["hub"]["resolved"] == COMMIT and metadata["name"] == "hf://org/tiny-bert"
    assert metadata["source"] == f"{hf_hub.url}/org/tiny-bert"
    assert _no_temporaries(cache) == []
    # The first load fetched everything: the other entry points requested nothing more.
    assert len(hf_hub.requests) == 9
    BertEncoder.from_preset("https://huggingface.co/org/tiny-bert")  # the same model's page
    assert len(hf_hub.requests) == 9


def test_hf_sentence_transformers_model_brings_its_modules(tmp_path, monkeypatch, cache):
    """An hf:// sentence-transformers model: its modules come along and the converted copy
    keeps them, so the embedder gives what the directory gives, sentence-transformers'."""
    from keras_bert import BertTextEmbedder
    from tests.st_models import TEXTS, st_encode, write_st_model

    directory = write_st_model(tmp_path / "tiny-st", pooling=("cls", "mean"),
                               dense=[(8, "Tanh")], prompts={"query": "q: "})
    hub = hubs.HfHub("org/tiny-st", hubs.files_of(directory), commit=COMMIT)
    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    try:
        got = BertTextEmbedder.from_preset("hf://org/tiny-st")
        fetched = sorted(p.split(f"/resolve/{COMMIT}/", 1)[1] for m, p in hub.requests
                         if m == "GET" and "/resolve/" in p)
    finally:
        hub.close()
    assert {"modules.json", "1_Pooling/config.json", "2_Dense/model.safetensors",
            "sentence_bert_config.json", "config_sentence_transformers.json"} <= set(fetched)
    assert not any(name.endswith("README.md") for name in fetched)
    want = BertTextEmbedder.from_preset(str(directory))
    assert (got.pooling, got.dense, got.prompts["query"], got.preprocessor.seq_length) == (
        ["cls", "mean"], [{"units": 8, "activation": "tanh", "use_bias": True}], "q: ", 32)
    np.testing.assert_allclose(got.predict(TEXTS, verbose=0), want.predict(TEXTS, verbose=0),
                               atol=1e-6)
    np.testing.assert_allclose(got.predict(TEXTS, verbose=0), st_encode(directory, TEXTS),
                               atol=1e-5)
    assert load_preset("hf://org/tiny-st").format == "keras_bert"  # the cache's copy


def test_hf_repository_in_keras_hub_layout(keras_hub_dir, monkeypatch, cache):
    hub = hubs.HfHub("keras/bert_tiny_test", hubs.files_of(keras_hub_dir))
    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    try:
        encoder = BertEncoder.from_preset("hf://keras/bert_tiny_test", progress=False)
    finally:
        hub.close()
    fetched = sorted(p.split("/resolve/")[1].split("/", 1)[1] for m, p in hub.requests
                     if m == "GET" and "/resolve/" in p)
    assert fetched == ["assets/tokenizer/vocabulary.txt", "config.json", "metadata.json",
                       "model.weights.h5", "tokenizer.json"]
    want = BertEncoder.from_preset(str(keras_hub_dir))
    for key, value in _outputs(want).items():
        np.testing.assert_array_equal(_outputs(encoder)[key], value, err_msg=key)
    assert encoder.vocabulary == hubs.VOCAB and encoder.do_lower_case is True


def test_hf_revision_is_its_own_cache_entry(hf_hub, cache):
    load_preset(f"hf://org/tiny-bert@{COMMIT}", progress=False)
    assert (cache / "hub" / "hf" / "org" / "tiny-bert" / COMMIT / "keras_bert.json").is_file()
    assert hf_hub.requests[0] == ("GET", f"/api/models/org/tiny-bert/revision/{COMMIT}?blobs=true")
    with pytest.raises(DownloadError, match=r"hf://org/tiny-bert@v9: RevisionNotFoundError"):
        load_preset("hf://org/tiny-bert@v9", progress=False)
    with pytest.raises(DownloadError, match=r"hf://org/other: RepositoryNotFoundError"):
        load_preset("hf://org/other", progress=False)


def test_hf_pytorch_weights_and_a_tokenizer_json_without_vocab_txt(tmp_path, monkeypatch,
                                                                    cache):
    require("torch")
    directory = hubs.write_hf_checkpoint(tmp_path / "bin", torch_format=True, vocab_txt=False)
    assert not (directory / "vocab.txt").exists()
    assert (directory / "pytorch_model.bin").exists()
    hub = hubs.HfHub("org/bin-bert", hubs.files_of(directory))
    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    try:
        encoder = BertEncoder.from_preset("hf://org/bin-bert", progress=False)
    finally:
        hub.close()
    assert encoder.vocabulary == hubs.VOCAB  # read from tokenizer.json's WordPiece model
    want = BertEncoder.from_preset(str(directory))
    for key, value in _outputs(want).items():
        np.testing.assert_array_equal(_outputs(encoder)[key], value, err_msg=key)


def test_hf_weights_are_checked_against_the_listed_and_the_given_sha256(hf_hub, cache):
    hf_hub.listed_sha256["model.safetensors"] = "0" * 64
    with pytest.raises(DownloadError, match=r"sha256 of model\.safetensors of hf://org/tiny-bert "
                       r"is [0-9a-f]{64}, expected 0{64}.*The hub lists that sha256"):
        load_preset("hf://org/tiny-bert", progress=False)
    assert not (cache / "hub" / "hf" / "org" / "tiny-bert" / "main").exists()
    assert _no_temporaries(cache) == []
    hf_hub.listed_sha256.clear()
    with pytest.raises(DownloadError, match="expected 1{64}.*Nothing was cached"):
        load_preset("hf://org/tiny-bert", sha256="1" * 64, progress=False)
    import hashlib

    good = hashlib.sha256(hf_hub.files["model.safetensors"]).hexdigest()
    assert load_preset("hf://org/tiny-bert", sha256=good, progress=False).format == "keras_bert"


def test_hf_weights_that_disagree_with_the_config_are_refused(hf_dir, monkeypatch, cache):
    import json

    files = hubs.files_of(hf_dir)
    config = json.loads(files["config.json"])
    config["intermediate_size"] = 48  # the weights have 32
    files["config.json"] = json.dumps(config).encode()
    hub = hubs.HfHub("org/bad-bert", files)
    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    try:
        with pytest.raises(DownloadError, match=r"hf://org/bad-bert/model\.safetensors.*"
                           r"intermediate.*\(16, 32\).*Nothing was cached"):
            load_preset("hf://org/bad-bert", progress=False)
    finally:
        hub.close()
    assert not (cache / "hub" / "hf" / "org" / "bad-bert" / "main").exists()
    assert _no_temporaries(cache) == []


def test_hf_repository_without_bert_weights_names_what_is_missing(monkeypatch, cache):
    hub = hubs.HfHub("org/docs", {"README.md": b"# nothing here", "config.json": b"{}"})
    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    try:
        with pytest.raises(DownloadError, match=r"hf://org/docs holds no model\.safetensors or "
                           r"pytorch_model\.bin or tf_model\.h5; not a BERT checkpoint.*"
                           r"README\.md"):
            load_preset("hf://org/docs", progress=False)
    finally:
        hub.close()


# ------------------------------------------------------------------------ Kaggle
def test_kaggle_handle_downloads_once_and_gives_the_directory_outputs(kaggle_hub, keras_hub_dir,
                                                                      cache):
    _assert_same_model("kaggle://keras/bert/keras/bert_tiny_test", keras_hub_dir)
    calls = [p.rsplit("/", 1)[1] for m, p in kaggle_hub.requests if m == "POST"]
    assert calls[:2] == ["GetModelInstance", "ListModelInstanceVersionFiles"]
    assert calls[2:] == ["DownloadModelInstanceVersion"] * 5  # one per file, then redirected
    target = cache / "hub" / "kaggle" / "keras" / "bert" / "keras" / "bert_tiny_test" / "latest"
    assert (target / "keras_bert.json").is_file() and (target / "vocab.txt").is_file()
    metadata = load_preset("kaggle://keras/bert/keras/bert_tiny_test").metadata
    assert metadata["hub"]["resolved"] == "3"  # the version kagglehub resolved
    assert _no_temporaries(cache) == []
    count = len(kaggle_hub.requests)
    BertEncoder.from_preset("https://www.kaggle.com/models/keras/bert/keras/bert_tiny_test")
    assert len(kaggle_hub.requests) == count  # the same handle: the cache


def test_kaggle_version_is_its_own_cache_entry(kaggle_hub, cache):
    preset = load_preset("kaggle://keras/bert/keras/bert_tiny_test/3", progress=False)
    assert preset.name == "kaggle://keras/bert/keras/bert_tiny_test/3"
    assert preset.metadata["hub"]["resolved"] == "3"
    calls = [p.rsplit("/", 1)[1] for m, p in kaggle_hub.requests if m == "POST"]
    assert "GetModelInstance" not in calls  # the version was given
    with pytest.raises(DownloadError, match=r"kaggle://keras/bert/keras/bert_tiny_test/4: "
                       r"http://127\.0\.0\.1:\d+ answered 404 \(404 Client Error"
                       r".*Resource not found"):
        load_preset("kaggle://keras/bert/keras/bert_tiny_test/4", progress=False)


def test_kaggle_model_that_is_no_keras_hub_preset_is_refused(monkeypatch, cache):
    hub = hubs.KaggleHub("someone/bert/tensorFlow2/saved", {"saved_model.pb": b"\x08\x01"})
    _kaggle_endpoint(monkeypatch, hub.url, cache)
    try:
        with pytest.raises(DownloadError, match=r"holds no config\.json and no "
                           r"model\.weights\.h5: not a keras-hub preset.*saved_model\.pb"):
            load_preset("kaggle://someone/bert/tensorFlow2/saved", progress=False)
    finally:
        hub.close()
    assert _no_temporaries(cache) == []


# ------------------------------------------------------------------------ offline
def _closed_port():
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_hf_offline_fails_at_once_naming_the_handle_the_url_and_the_manual_route(
        monkeypatch, cache):
    endpoint = f"http://127.0.0.1:{_closed_port()}"
    monkeypatch.setenv("HF_ENDPOINT", endpoint)
    start = time.monotonic()
    with pytest.raises(DownloadError) as info:
        BertEncoder.from_preset("hf://sentence-transformers/all-MiniLM-L6-v2")
    assert time.monotonic() - start < 30  # a hang guard only: it fails on the refused connect
    message = str(info.value)
    assert message.startswith("Cannot download hf://sentence-transformers/all-MiniLM-L6-v2: "
                              f"{endpoint}/api/models/sentence-transformers/all-MiniLM-L6-v2 "
                              "cannot be reached (ConnectError")
    assert ("hf download sentence-transformers/all-MiniLM-L6-v2 config.json vocab.txt "
            "model.safetensors --local-dir DIR") in message
    assert "pass it to from_preset(DIR)" in message
    assert not (cache / "hub" / "hf" / "sentence-transformers").exists() or \
        _no_temporaries(cache) == []


def test_kaggle_offline_fails_at_once_naming_the_handle_the_url_and_the_manual_route(
        monkeypatch, cache):
    endpoint = f"http://127.0.0.1:{_closed_port()}"
    _kaggle_endpoint(monkeypatch, endpoint, cache)
    start = time.monotonic()
    with pytest.raises(DownloadError) as info:
        BertEncoder.from_preset("kaggle://keras/bert/keras/bert_base_en_uncased/3")
    assert time.monotonic() - start < 30  # a hang guard only
    message = str(info.value)
    assert message.startswith("Cannot download kaggle://keras/bert/keras/bert_base_en_uncased/3: "
                              f"{endpoint} cannot be reached (ConnectionRefusedError")
    assert (f"download the model from {endpoint}/models/keras/bert/keras/bert_base_en_uncased/3"
            in message)
    assert "pass it to from_preset(directory)" in message


def test_a_hub_that_answers_with_errors_is_asked_once(hf_hub, kaggle_hub, cache):
    """The first request goes out without retries (huggingface_hub's backoff would repeat a
    503 five times, with waits); kagglehub retries nothing either."""
    hf_hub.fail_api = 503
    with pytest.raises(DownloadError, match=r"hf://org/tiny-bert: .* answered 503"):
        load_preset("hf://org/tiny-bert", progress=False)
    assert hf_hub.requests == [("GET", "/api/models/org/tiny-bert?blobs=true")]
    kaggle_hub.fail_api = 503
    with pytest.raises(DownloadError,
                       match="kaggle://keras/bert/keras/bert_tiny_test: .* answered 503"):
        load_preset("kaggle://keras/bert/keras/bert_tiny_test", progress=False)
    assert [m for m, _ in kaggle_hub.requests] == ["POST"]


def test_hub_handles_take_no_url_option(cache):
    with pytest.raises(CheckpointError, match="url= applies to registered presets"):
        load_preset("hf://org/tiny-bert", url="http://127.0.0.1:9/x.zip")


@pytest.mark.parametrize("module, handle", [("huggingface_hub", "hf://org/tiny-bert"),
                                            ("kagglehub", "kaggle://keras/bert/keras/x")])
def test_a_missing_hub_client_says_what_to_install(monkeypatch, cache, module, handle):
    import sys

    monkeypatch.setitem(sys.modules, module, None)  # import now raises ImportError
    with pytest.raises(CheckpointError, match=rf"needs {module}, which is not installed: pip "
                       r"install 'keras-bert-zoo\[hub\]' \(requirements-hub\.txt\)"):
        load_preset(handle, progress=False)


def test_an_incomplete_cache_entry_is_reported(hf_hub, cache):
    target = cache / "hub" / "hf" / "org" / "tiny-bert" / "main"
    target.mkdir(parents=True)
    (target / "bert_config.json").write_text("{}")
    with pytest.raises(CheckpointError, match="not a complete keras_bert preset"):
        load_preset("hf://org/tiny-bert", progress=False)
    shutil.rmtree(target)
    assert load_preset("hf://org/tiny-bert", progress=False).format == "keras_bert"


def test_a_fine_tuned_head_comes_through_a_handle_with_its_label_names(monkeypatch, cache):
    """A repository of transformers' TensorFlow classes alone (tf_model.h5), a fine-tuned
    classifier: the handle gives its head, classes and id2label names as its directory does,
    and the converted copy in the cache keeps them for the next load."""
    require("huggingface_hub")
    import pathlib

    fixture = (pathlib.Path(__file__).resolve().parents[1] / "checkpoints" / "tf_transformers"
               / "sequence_classification")
    hub = hubs.HfHub("org/tf-sentiment", hubs.files_of(fixture), commit=COMMIT)
    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    try:
        model = BertClassifier.from_preset("hf://org/tf-sentiment", preprocessor=None)
    finally:
        hub.close()
    again = BertClassifier.from_preset("hf://org/tf-sentiment", preprocessor=None)  # cached
    local = BertClassifier.from_preset(str(fixture), preprocessor=None)
    ids = np.array([[2, 5, 9, 7, 3, 0]], "int32")
    x = {"input_word_ids": ids, "input_mask": (ids > 0).astype("int32"),
         "input_type_ids": np.zeros_like(ids)}
    for loaded in (model, again):
        assert loaded.label_names == ["negative", "neutral", "positive"]
        np.testing.assert_array_equal(loaded.predict(x, verbose=0), local.predict(x, verbose=0))
