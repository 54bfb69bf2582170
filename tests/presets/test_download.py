"""The download path: a real HTTP server on 127.0.0.1 serving Google-format zips."""

import errno
import hashlib
import os
import pathlib
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

from keras_bert import BertConfig, BertEncoder
from keras_bert.checkpoints import CheckpointError
from keras_bert.presets import PRESETS, load_preset
from keras_bert.presets.download import DownloadError

from google_zips import TINY, TOY, write_google_dir, zip_dir  # tests/presets/google_zips.py


@pytest.fixture
def toy(monkeypatch, tmp_path, server, cache):
    monkeypatch.setitem(PRESETS, "toy", TOY)
    config, weights = write_google_dir(tmp_path / "src")
    body = zip_dir(tmp_path / "src", folder="uncased_L-2_H-8_A-2")
    server.routes["/2099_01_01/uncased_L-2_H-8_A-2.zip"] = body
    monkeypatch.setenv("KERAS_BERT_BASE_URL", server.url)
    return config, weights, body


def _no_temporaries(root):
    leftovers = []
    for dirpath, dirnames, files in os.walk(root):
        leftovers += [n for n in dirnames + files if ".tmp" in n or ".part" in n]
    return leftovers


def test_download_convert_and_reuse(toy, server, cache, capsys):
    config, weights, _ = toy
    encoder = BertEncoder.from_preset("toy")
    assert server.requests == ["/2099_01_01/uncased_L-2_H-8_A-2.zip"]
    assert "Downloading" in capsys.readouterr().err  # the progress bar
    assert encoder.bert_config == config
    for name, value in encoder.get_canonical_weights().items():
        np.testing.assert_array_equal(value, weights[name], err_msg=name)
    # Converted once into our layout; the archive is gone; nothing temporary is left.
    assert (cache / "toy" / "keras_bert.json").is_file()
    assert not (cache / "downloads" / "uncased_L-2_H-8_A-2.zip").exists()
    assert _no_temporaries(cache) == []
    # Optimizer slots were dropped, pre-training heads kept.
    stored = load_preset("toy").weights()
    assert "global_step" not in stored and "cls/seq_relationship/output_weights" in stored
    # Second call: no request at all.
    BertEncoder.from_preset("toy")
    assert len(server.requests) == 1


def test_registry_tiny_downloads_from_overridden_url(monkeypatch, tmp_path, server, cache):
    config = BertConfig(vocab_size=30522, hidden_size=128, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=512, hidden_act="gelu_tanh")
    write_google_dir(tmp_path / "tiny", config=config, slots=False)
    server.routes["/files/tiny.zip"] = zip_dir(tmp_path / "tiny")  # files at the top level
    preset = load_preset("tiny", url=server.url + "/files/tiny.zip", progress=False)
    assert preset.name == "tiny" and preset.do_lower_case is True
    assert preset.config.num_hidden_layers == 2 and preset.config.hidden_act == "gelu_tanh"
    assert preset.source == server.url + "/files/tiny.zip"


def test_a_small_bert_downloads_from_its_registry_path(monkeypatch, tmp_path, server, cache):
    """One of the 24 small BERTs, as Google's zip lays it out (a folder named after the
    file), served at its registry path under a mirror (KERAS_BERT_BASE_URL)."""
    spec = PRESETS["bert_L4_H128"]
    write_google_dir(tmp_path / "src", config=spec.config, slots=False)
    server.routes["/2020_02_20/uncased_L-4_H-128_A-2.zip"] = zip_dir(
        tmp_path / "src", folder="uncased_L-4_H-128_A-2")
    monkeypatch.setenv("KERAS_BERT_BASE_URL", server.url)
    preset = load_preset("google/bert_uncased_L-4_H-128_A-2", progress=False)  # the Hub's id
    assert server.requests == ["/2020_02_20/uncased_L-4_H-128_A-2.zip"]
    assert preset.name == "bert_L4_H128" and preset.config == spec.config
    assert preset.do_lower_case is True and (cache / "bert_L4_H128" / "vocab.txt").is_file()


def test_sha256_is_checked(toy, server, cache):
    _, _, body = toy
    with pytest.raises(DownloadError, match="sha256"):
        load_preset("toy", sha256="0" * 64, progress=False)
    assert not (cache / "toy").exists() and _no_temporaries(cache) == []
    good = hashlib.sha256(body).hexdigest()
    assert load_preset("toy", sha256=good, progress=False).format == "keras_bert"


def test_interrupted_download_leaves_no_cache(toy, server, cache):
    server.truncate.add("/2099_01_01/uncased_L-2_H-8_A-2.zip")
    with pytest.raises(DownloadError, match="uncased_L-2_H-8_A-2.zip"):
        load_preset("toy", progress=False)
    assert not (cache / "toy").exists()
    assert not (cache / "downloads" / "uncased_L-2_H-8_A-2.zip").exists()
    assert _no_temporaries(cache) == []
    server.truncate.clear()
    assert load_preset("toy", progress=False).config.hidden_size == 8  # retry works


def test_corrupt_zip_is_rejected_and_removed(toy, server, cache):
    _, _, body = toy
    corrupt = bytearray(body)
    corrupt[len(corrupt) // 3: len(corrupt) // 3 + 64] = b"\xff" * 64  # flips member data: CRC fails
    server.routes["/2099_01_01/uncased_L-2_H-8_A-2.zip"] = bytes(corrupt)
    with pytest.raises(DownloadError, match="corrupt|not a valid zip|CRC"):
        load_preset("toy", progress=False)
    assert not (cache / "toy").exists()
    assert not (cache / "downloads" / "uncased_L-2_H-8_A-2.zip").exists()
    assert _no_temporaries(cache) == []


def test_archive_of_another_model_is_rejected(monkeypatch, tmp_path, server, cache):
    monkeypatch.setitem(PRESETS, "toy", TOY)
    other = BertConfig(**dict(TINY, num_hidden_layers=1))
    write_google_dir(tmp_path / "other", config=other)
    server.routes["/o.zip"] = zip_dir(tmp_path / "other")
    with pytest.raises(DownloadError, match="num_hidden_layers=1"):
        load_preset("toy", url=server.url + "/o.zip", progress=False)
    assert not (cache / "toy").exists()


def test_archive_without_checkpoint_is_rejected(monkeypatch, tmp_path, server, cache):
    monkeypatch.setitem(PRESETS, "toy", TOY)
    write_google_dir(tmp_path / "src")
    for f in (tmp_path / "src").glob("bert_model.ckpt.data-*"):
        f.unlink()
    server.routes["/x.zip"] = zip_dir(tmp_path / "src")
    with pytest.raises(DownloadError, match="bert_model.ckpt.data-00000-of-00001"):
        load_preset("toy", url=server.url + "/x.zip", progress=False)


def test_offline_fails_fast_naming_the_url(monkeypatch, cache):
    monkeypatch.setitem(PRESETS, "toy", TOY)
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/uncased_L-2_H-8_A-2.zip"
    with pytest.raises(DownloadError) as info:
        BertEncoder.from_preset("toy", url=url)
    message = str(info.value)
    # Failed at once on the refused connection, not after waiting out a timeout.
    refused = os.strerror(errno.ECONNREFUSED)
    assert f"Cannot download {url}: [Errno {errno.ECONNREFUSED}] {refused}" in message
    assert "timed out" not in message
    assert url in message
    assert "by hand" in message and str(cache / "downloads") in message
    assert not (cache / "toy").exists()


def test_a_registered_small_bert_offline_fails_fast_naming_its_url(monkeypatch, cache):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("KERAS_BERT_BASE_URL", f"http://127.0.0.1:{port}")
    with pytest.raises(DownloadError) as info:
        BertEncoder.from_preset("bert_L6_H256")
    url = f"http://127.0.0.1:{port}/2020_02_20/uncased_L-6_H-256_A-4.zip"
    assert str(info.value).startswith(f"Cannot download {url}: [Errno {errno.ECONNREFUSED}]")
    assert not (cache / "bert_L6_H256").exists()


def test_architecture_without_weights_needs_no_download(monkeypatch, toy, cache):
    monkeypatch.setenv("KERAS_BERT_BASE_URL", "http://127.0.0.1:9")  # nothing listens there
    encoder = BertEncoder.from_preset("toy", load_weights=False)
    assert encoder.bert_config.num_hidden_layers == TOY.num_hidden_layers
    assert encoder.bert_config.hidden_size == TOY.hidden_size
    assert encoder.vocab_path is None
    assert not cache.exists() or not os.listdir(cache)  # nothing downloaded or written
    with pytest.raises(DownloadError, match="127.0.0.1:9"):
        BertEncoder.from_preset("toy")


def test_architecture_without_weights_uses_the_cache_when_there(toy, server, cache):
    load_preset("toy", progress=False)
    encoder = BertEncoder.from_preset("toy", load_weights=False)
    assert encoder.vocab_path == str(cache / "toy" / "vocab.txt")


def test_manually_placed_zip_is_used(toy, server, cache):
    _, _, body = toy
    (cache / "downloads").mkdir(parents=True)
    (cache / "downloads" / "uncased_L-2_H-8_A-2.zip").write_bytes(body)
    load_preset("toy", progress=False)
    assert server.requests == []


def test_manually_placed_zip_is_checked_against_sha256(toy, server, cache):
    _, _, body = toy
    (cache / "downloads").mkdir(parents=True)
    placed = cache / "downloads" / "uncased_L-2_H-8_A-2.zip"
    placed.write_bytes(body)
    with pytest.raises(DownloadError, match=r"sha256 of .*uncased_L-2_H-8_A-2\.zip is [0-9a-f]{64}"):
        load_preset("toy", sha256="0" * 64, progress=False)
    assert not (cache / "toy").exists()
    assert load_preset("toy", sha256=hashlib.sha256(body).hexdigest(), progress=False)
    assert server.requests == []


def test_local_zip_is_converted_once(tmp_path, cache):
    config, weights = write_google_dir(tmp_path / "src")
    archive = tmp_path / "my_bert.zip"
    archive.write_bytes(zip_dir(tmp_path / "src", folder="my_bert"))
    encoder = BertEncoder.from_preset(str(archive))
    np.testing.assert_array_equal(encoder.get_canonical_weights()["bert/pooler/dense/bias"],
                                  weights["bert/pooler/dense/bias"])
    converted = list((cache / "zips").iterdir())
    assert len(converted) == 1 and (converted[0] / "keras_bert.json").is_file()
    load_preset(str(archive))
    assert len(list((cache / "zips").iterdir())) == 1


def test_cached_metadata_disagreeing_with_the_registry_is_an_error(toy, server, cache):
    assert load_preset("toy", progress=False).do_lower_case is True
    meta = cache / "toy" / "keras_bert.json"
    meta.write_text(meta.read_text().replace('"do_lower_case": true', '"do_lower_case": false'))
    with pytest.raises(CheckpointError, match=r"keras_bert\.json \(do_lower_case\) says "
                       r"do_lower_case=False \(cased\) but the registry entry of preset 'toy' "
                       r"says do_lower_case=True \(uncased\)"):
        load_preset("toy", progress=False)
    assert load_preset("toy", do_lower_case=False, progress=False).do_lower_case is False


# ------------------------------------------------------------ killed and concurrent writers
REPO = pathlib.Path(__file__).resolve().parents[2]


def _writer(cache, *args):
    """Starts tests/presets/writer_process.py in its own process (this checkout's keras_bert)."""
    env = dict(os.environ, KERAS_BERT_HOME=str(cache), KERAS_BERT_DOWNLOAD_TIMEOUT="120",
               TF_CPP_MIN_LOG_LEVEL="3")
    return subprocess.Popen([sys.executable, "-m", "tests.presets.writer_process", *map(str, args)],
                            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def _wait_until(condition, process, timeout=180):
    deadline = time.monotonic() + timeout
    while not condition():
        if process.poll() is not None:
            raise AssertionError(f"the writer exited early: {process.communicate()}")
        if time.monotonic() > deadline:
            process.kill()
            raise AssertionError(f"the writer did not get there in {timeout} s")
        time.sleep(0.05)


def _finish(process):
    out, err = process.communicate(timeout=300)
    assert process.returncode == 0, err
    return out.strip()


def _archive(tmp_path):
    _, weights = write_google_dir(tmp_path / "src")
    archive = tmp_path / "my_bert.zip"
    archive.write_bytes(zip_dir(tmp_path / "src", folder="my_bert"))
    return archive, weights


def test_killed_conversion_is_removed_by_the_next_call(tmp_path, cache):
    archive, weights = _archive(tmp_path)
    ready = tmp_path / "ready"
    writer = _writer(cache, "zip", archive, "--pause", ready, tmp_path / "never")
    _wait_until(ready.exists, writer)  # mid-conversion: extracted, not yet written
    writer.kill()  # SIGKILL: no cleanup runs
    writer.wait()
    leftovers = list((cache / "zips").glob(".tmp-*"))
    assert len(leftovers) == 1 and (leftovers[0] / "extracted" / "my_bert").is_dir()
    encoder = BertEncoder.from_preset(str(archive))
    assert list((cache / "zips").glob(".tmp-*")) == [] and _no_temporaries(cache) == []
    np.testing.assert_array_equal(encoder.get_canonical_weights()["bert/pooler/dense/bias"],
                                  weights["bert/pooler/dense/bias"])


def test_two_processes_converting_the_same_zip_both_succeed(tmp_path, cache):
    archive, _ = _archive(tmp_path)
    ready, go = tmp_path / "ready", tmp_path / "go"
    first = _writer(cache, "zip", archive, "--pause", ready, go)
    _wait_until(ready.exists, first)  # first is mid-conversion, its directory locked
    working = list((cache / "zips").glob(".tmp-*"))
    second = _writer(cache, "zip", archive)  # sweeps zips/ before converting the same zip
    second_path = _finish(second)
    assert list((cache / "zips").glob(".tmp-*")) == working  # the live writer's is untouched
    go.touch()
    assert _finish(first) == second_path
    assert _no_temporaries(cache) == []
    assert load_preset(str(archive)).path == second_path


def test_killed_download_is_removed_by_the_next_call(toy, server, cache):
    server.stall.add("/2099_01_01/uncased_L-2_H-8_A-2.zip")  # half the body, then nothing
    writer = _writer(cache, "registry", server.url)
    partial = cache / "downloads"
    _wait_until(lambda: any(partial.glob(".tmp-*/*.zip")), writer)  # receiving the body
    writer.kill()
    writer.wait()
    assert len(list(partial.glob(".tmp-*/uncased_L-2_H-8_A-2.zip"))) == 1
    server.stall.clear()
    assert load_preset("toy", progress=False).format == "keras_bert"
    assert _no_temporaries(cache) == []


# ------------------------------------------------------------ text layers first, encoder next
def test_preprocessor_fetches_once_and_says_why_then_the_encoder_fetches_nothing(
        toy, server, cache, capsys):
    from keras_bert import BertPreprocessor

    preprocessor = BertPreprocessor.from_preset("toy", seq_length=8)
    err = capsys.readouterr().err
    assert ("Downloading uncased_L-2_H-8_A-2.zip, the whole checkpoint of preset 'toy', for "
            "its vocabulary") in err
    assert f"the weights are kept in {cache / 'toy'} too" in err
    assert server.requests == ["/2099_01_01/uncased_L-2_H-8_A-2.zip"]
    assert preprocessor.tokenizer.vocabulary_size == TINY["vocab_size"]
    config, weights, _ = toy
    encoder = BertEncoder.from_preset("toy")
    assert len(server.requests) == 1 and capsys.readouterr().err == ""
    np.testing.assert_array_equal(encoder.get_canonical_weights()["bert/pooler/dense/kernel"],
                                  weights["bert/pooler/dense/kernel"])


def test_encoder_progress_line_says_what_is_downloaded(toy, server, cache, capsys):
    BertEncoder.from_preset("toy")
    assert ("Downloading uncased_L-2_H-8_A-2.zip, the checkpoint of preset 'toy' (weights and "
            "vocabulary)") in capsys.readouterr().err


# ------------------------------------------------------------ save_to_preset and the vocabulary
def test_saved_architecture_of_an_undownloaded_preset_has_no_vocabulary(toy, tmp_path, cache):
    from keras_bert import BertPreprocessor

    BertEncoder.from_preset("toy", load_weights=False).save_to_preset(str(tmp_path / "saved"))
    with pytest.raises(CheckpointError, match=(
            r"saved has no vocabulary, and a tokenizer needs one: .*saved/vocab\.txt not found\. "
            r"It was saved by save_to_preset from a model without one .*load the tokenizer "
            r"from 'toy' itself")):
        BertPreprocessor.from_preset(str(tmp_path / "saved"))


def test_saved_architecture_of_a_cached_preset_keeps_the_vocabulary(toy, tmp_path, cache):
    from keras_bert import BertPreprocessor

    load_preset("toy", progress=False)
    BertEncoder.from_preset("toy", load_weights=False).save_to_preset(str(tmp_path / "saved"))
    texts = ["tok5 tok17 tok2", "nothing known"]
    want = BertPreprocessor.from_preset("toy", seq_length=8)(texts)
    got = BertPreprocessor.from_preset(str(tmp_path / "saved"), seq_length=8)(texts)
    for key in want:
        np.testing.assert_array_equal(got[key], want[key])


# ------------------------------------------------------------ bad archive content
def test_zip_with_a_bad_config_names_the_archive_and_member(tmp_path, cache):
    write_google_dir(tmp_path / "src")
    (tmp_path / "src" / "bert_config.json").write_text("{oops")
    archive = tmp_path / "bad.zip"
    archive.write_bytes(zip_dir(tmp_path / "src", folder="bad"))
    with pytest.raises(DownloadError, match=rf"{archive}/bad/bert_config\.json: not valid JSON"):
        load_preset(str(archive))
    assert _no_temporaries(cache) == []


def test_registry_zip_with_a_bad_config_is_removed(monkeypatch, tmp_path, server, cache):
    monkeypatch.setitem(PRESETS, "toy", TOY)
    write_google_dir(tmp_path / "src")
    (tmp_path / "src" / "bert_config.json").write_text("[]")
    server.routes["/b.zip"] = zip_dir(tmp_path / "src")
    with pytest.raises(DownloadError, match=r"b\.zip/bert_config\.json: expected a JSON object.*"
                       r"The archive was removed"):
        load_preset("toy", url=server.url + "/b.zip", progress=False)
    assert not (cache / "downloads" / "b.zip").exists() and not (cache / "toy").exists()
