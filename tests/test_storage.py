"""keras_bert.storage: reads and atomic writes on local paths and ram:// (which goes through
the same tf.io.gfile code as gs://)."""

import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from keras_bert import storage
from keras_bert.storage import write_json

REPO = pathlib.Path(__file__).resolve().parents[1]
# ---- reading and atomic writes on local paths and ram:// --------------------------------------

def test_write_json_is_atomic_json(tmp_path):
    path = write_json(str(tmp_path / "run" / "metrics.json"), {"test_accuracy": 0.5})
    assert json.loads(open(path).read()) == {"test_accuracy": 0.5}
    assert os.listdir(tmp_path / "run") == ["metrics.json"]


def _ram(name):
    """A fresh ram:// directory (ram:// stands for gs://: the same tf.io.gfile code)."""
    root = f"ram://test_storage/{name}"
    storage.rmtree(root)
    return root


def test_files_on_ram_are_written_read_and_listed_without_leftovers(tmp_path):
    root = _ram("files")
    assert storage.is_remote(root) and not storage.is_remote(str(tmp_path))
    assert storage.write_text(f"{root}/a/text.txt", "héllo\n") == f"{root}/a/text.txt"
    storage.write_bytes(f"{root}/a/data.bin", b"\x00\x01")
    storage.write_json(f"{root}/a/values.json", {"b": [1, 2], "a": None})
    storage.write_lines(f"{root}/a/lines.txt", ["one", "two"])
    storage.append_text(f"{root}/a/log.jsonl", "1\n")
    storage.append_text(f"{root}/a/log.jsonl", "2\n")
    assert storage.listdir(f"{root}/a") == ["data.bin", "lines.txt", "log.jsonl", "text.txt",
                                            "values.json"]  # no temporary names left
    assert storage.read_text(f"{root}/a/text.txt") == "héllo\n"
    assert storage.read_bytes(f"{root}/a/data.bin") == b"\x00\x01"
    assert storage.read_text(f"{root}/a/values.json") == \
        '{\n  "a": null,\n  "b": [\n    1,\n    2\n  ]\n}\n'
    assert storage.read_json(f"{root}/a/values.json") == {"a": None, "b": [1, 2]}
    assert storage.read_text(f"{root}/a/lines.txt") == "one\ntwo\n"
    assert storage.read_text(f"{root}/a/log.jsonl") == "1\n2\n"
    with storage.open(f"{root}/a/text.txt", "rb") as f:
        assert f.read() == "héllo\n".encode()
    assert storage.glob(f"{root}/a/*.txt") == [f"{root}/a/lines.txt", f"{root}/a/text.txt"]
    assert storage.isfile(f"{root}/a/data.bin") and not storage.isdir(f"{root}/a/data.bin")
    assert storage.isdir(f"{root}/a") and not storage.isfile(f"{root}/a")
    assert storage.size(f"{root}/a/data.bin") == 2
    # Copies between stores, both ways; a file onto itself is left alone.
    local = storage.copy(f"{root}/a/text.txt", str(tmp_path / "copy.txt"))
    assert (tmp_path / "copy.txt").read_text(encoding="utf-8") == "héllo\n"
    storage.copy(local, f"{root}/b/copy.txt")
    assert storage.read_text(f"{root}/b/copy.txt") == "héllo\n"
    assert storage.copy(f"{root}/b/copy.txt", f"{root}/b/copy.txt") == f"{root}/b/copy.txt"
    assert sorted(os.listdir(tmp_path)) == ["copy.txt"]
    storage.remove(f"{root}/a/data.bin")
    storage.remove(f"{root}/a/data.bin")  # already gone: nothing to do
    assert not storage.exists(f"{root}/a/data.bin")
    storage.rmtree(f"{root}/a")
    assert not storage.exists(f"{root}/a/text.txt")
    assert storage.walk_files(root) == ["b/copy.txt"]
    # A file at the top of a bucket: its temporaries go beside it, not to "ram:".
    storage.write_text("ram://test_storage_top.txt", "top")
    assert storage.read_text("ram://test_storage_top.txt") == "top"
    assert not storage.glob("ram://.tmp-*") and not storage.exists("ram:")
    storage.remove("ram://test_storage_top.txt")


def test_reading_what_is_not_there_and_writing_through_open_are_errors(tmp_path):
    root = _ram("errors")
    for missing in (f"{root}/none.txt", str(tmp_path / "none.txt")):
        with pytest.raises(FileNotFoundError, match="No such file or directory: .*none.txt"):
            storage.read_bytes(missing)
        with pytest.raises(FileNotFoundError, match="No such file or directory: .*none.txt"):
            storage.copy(missing, f"{root}/copy.txt")
    with pytest.raises(ValueError, match="storage.open reads .*mode='w'"):
        storage.open(f"{root}/new.txt", "w")
    assert not storage.exists(f"{root}/copy.txt") and os.listdir(tmp_path) == []


@pytest.mark.parametrize("where", ["local", "ram"])
def test_a_failed_write_leaves_the_old_file_and_nothing_else(tmp_path, where):
    root = str(tmp_path) if where == "local" else _ram("failed_file")
    path = storage.write_text(f"{root}/model.txt", "old")
    with pytest.raises(RuntimeError, match="boom"):
        with storage.atomic_path(path) as tmp:
            assert tmp != path and os.path.basename(tmp) == "model.txt"
            with storage.create(tmp) as f:
                f.write(b"half")
            raise RuntimeError("boom")
    assert storage.read_text(path) == "old"
    assert storage.listdir(root) == ["model.txt"]


def _moves(monkeypatch):
    """Records the targets of the file moves that storage makes, in order."""
    moves = []
    move = storage._move_file

    def recorded(source, target):
        moves.append(target)
        return move(source, target)

    monkeypatch.setattr(storage, "_move_file", recorded)
    return moves


def test_a_directory_on_an_object_store_gets_its_marker_last(monkeypatch):
    root = _ram("dir")
    moves = _moves(monkeypatch)
    with storage.atomic_dir(f"{root}/export/1", last=("saved_model.pb",)) as tmp:
        storage.write_bytes(f"{tmp}/saved_model.pb", b"pb")
        storage.write_bytes(f"{tmp}/variables/variables.index", b"i")
        storage.write_bytes(f"{tmp}/variables/variables.data-00000-of-00001", b"d")
        moves.clear()  # the writes above moved their own temporaries into tmp
        assert not storage.exists(f"{root}/export/1")  # nothing there while it is written
    assert [m.rsplit("/1/", 1)[1] for m in moves] == [
        "variables/variables.data-00000-of-00001", "variables/variables.index",
        "saved_model.pb"]
    assert storage.walk_files(f"{root}/export/1") == [
        "saved_model.pb", "variables/variables.data-00000-of-00001",
        "variables/variables.index"]
    assert storage.listdir(f"{root}/export") == ["1"]  # the temporary directory is gone


def test_a_failed_directory_write_on_an_object_store_removes_what_it_wrote(monkeypatch):
    root = _ram("failed_dir")
    with pytest.raises(RuntimeError, match="writer failed"):
        with storage.atomic_dir(f"{root}/export/1") as tmp:
            storage.write_bytes(f"{tmp}/variables/variables.index", b"i")
            raise RuntimeError("writer failed")
    assert storage.walk_files(root) == []

    move = storage._move_file

    def failing(source, target):
        if target.endswith("saved_model.pb"):
            raise OSError("the store went away")
        return move(source, target)

    with pytest.raises(OSError, match="the store went away"):
        with storage.atomic_dir(f"{root}/export/1", last=("saved_model.pb",)) as tmp:
            storage.write_bytes(f"{tmp}/variables/variables.index", b"i")
            storage.write_bytes(f"{tmp}/saved_model.pb", b"pb")
            monkeypatch.setattr(storage, "_move_file", failing)
    assert storage.walk_files(root) == []


def test_a_local_directory_is_renamed_into_place_or_not_at_all(tmp_path):
    with storage.atomic_dir(tmp_path / "export" / "1") as tmp:
        storage.write_bytes(os.path.join(tmp, "saved_model.pb"), b"pb")
        assert not (tmp_path / "export" / "1").exists()
    assert os.listdir(tmp_path / "export") == ["1"]
    assert os.listdir(tmp_path / "export" / "1") == ["saved_model.pb"]
    with pytest.raises(FileExistsError, match="appeared meanwhile and is not empty"):
        with storage.atomic_dir(tmp_path / "export" / "1") as tmp:
            storage.write_bytes(os.path.join(tmp, "other.pb"), b"x")
    assert os.listdir(tmp_path / "export" / "1") == ["saved_model.pb"]
    assert os.listdir(tmp_path / "export") == ["1"]


# ---- kill -9 of a writer mid-write (local paths) ------------------------------------------------

KILLED_SAVE = """
import sys, time
sys.path.insert(0, "tests/models")
from tiny import tiny_encoder
from keras_bert import storage

move = storage._move_file

def paused(source, target):
    move(source, target)
    if target.endswith(".data-00000-of-00001"):  # the checkpoint's data moved, its index not
        print("paused", flush=True)
        time.sleep(600)

storage._move_file = paused
tiny_encoder(seed=2).save_to_preset(sys.argv[1])
"""


def test_a_preset_save_killed_mid_write_leaves_nothing_that_loads_as_complete(tmp_path):
    from keras_bert import BertEncoder
    from keras_bert.checkpoints import CheckpointError, keras_bert_layout

    sys.path.insert(0, str(REPO / "tests" / "models"))
    from tiny import tiny_encoder

    target = tmp_path / "preset"
    earlier = tiny_encoder(seed=0)
    earlier.save_to_preset(str(target))  # an earlier, complete save (the killed one: seed 2)
    assert keras_bert_layout.is_layout(str(target))
    writer = subprocess.Popen([sys.executable, "-c", KILLED_SAVE, str(target)], cwd=REPO,
                              env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = writer.stdout.readline()
        assert line == "paused\n", writer.communicate()[1][-3000:]
    finally:
        writer.kill()  # SIGKILL mid-write: no cleanup runs
        writer.wait()
    # The earlier save's keras_bert.json went first: the directory is not taken for complete.
    assert not keras_bert_layout.is_layout(str(target))
    with pytest.raises(CheckpointError, match="No TF checkpoint in .*preset"):
        BertEncoder.from_preset(str(target))  # the old index went before the new data came
    assert [p.name for p in target.glob(".tmp-*")]  # the killed writer's temporaries ...
    fresh = tiny_encoder(seed=1)
    fresh.save_to_preset(str(target))  # ... are swept by the next writer
    assert not list(target.glob(".tmp-*"))
    assert sorted(os.listdir(target)) == [
        "bert_config.json", "bert_model.ckpt.data-00000-of-00001", "bert_model.ckpt.index",
        "keras_bert.json"]
    # The later save is what loads: every weight is the fresh model's, and the seeds made the
    # fresh model's kernels differ from the earlier save's (the one loaded otherwise).
    loaded = BertEncoder.from_preset(str(target)).get_canonical_weights()
    want = fresh.get_canonical_weights()
    assert sorted(loaded) == sorted(want)
    for name, value in want.items():
        np.testing.assert_array_equal(loaded[name], value, err_msg=name)
    kernel = "bert/pooler/dense/kernel"
    assert np.abs(earlier.get_canonical_weights()[kernel] - want[kernel]).max() > 0.01
