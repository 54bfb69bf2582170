"""keras_bert.storage: reads and atomic writes on local paths and ram:// (which goes through
the same tf.io.gfile code as gs://)."""

import json
import os

import pytest

from keras_bert import storage
from keras_bert.storage import write_json


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


# ---- a directory that replaces another: the old one or the new one, never a mix -------------

def _files(root):
    """``{relative path: text}`` of the files under ``root`` (local or ram://)."""
    return {name: storage.read_text(os.path.join(root, name))
            for name in storage.walk_files(root)}


def _old_preset(root):
    for name, text in {"meta": "old", "vocab.txt": "old", "weights.index": "old",
                       "weights.data": "old", "notes.txt": "mine"}.items():
        storage.write_text(os.path.join(root, name), text)
    return root


REPLACES = dict(first=("meta",), last=("weights.index",),
                replaces=("meta", "vocab.txt", "weights.*"))


def _write_new(new):
    for name in ("meta", "weights.index", "weights.data", "assets/extra.txt"):
        storage.write_text(os.path.join(new, name), "new")


def test_a_local_directory_is_swapped_with_the_one_it_replaces(tmp_path):
    target = _old_preset(str(tmp_path / "preset"))
    with storage.replacing_dir(target, **REPLACES) as new:
        _write_new(new)
        assert _files(target)["weights.data"] == "old"  # nothing changes while it is written
    # The earlier vocab.txt is of the kind replaced: gone; notes.txt is not: kept.
    assert _files(target) == {"meta": "new", "weights.index": "new", "weights.data": "new",
                              "assets/extra.txt": "new", "notes.txt": "mine"}
    assert os.listdir(tmp_path) == ["preset"]  # the old directory went with the temporaries
    with pytest.raises(RuntimeError, match="writer failed"):
        with storage.replacing_dir(target, **REPLACES) as new:
            storage.write_text(os.path.join(new, "meta"), "newer")
            raise RuntimeError("writer failed")
    assert _files(target)["meta"] == "new" and os.listdir(tmp_path) == ["preset"]
    with storage.replacing_dir(str(tmp_path / "fresh"), **REPLACES) as new:
        _write_new(new)
    assert sorted(os.listdir(tmp_path)) == ["fresh", "preset"]


@pytest.mark.parametrize("where", ["ram", "local without the swap"])
def test_elsewhere_the_files_are_replaced_one_by_one_in_the_order_given(tmp_path, monkeypatch,
                                                                       where):
    from keras_bert import dir_swap

    if where == "ram":
        target = _old_preset(f"{_ram('replacing')}/preset")
    else:
        target = _old_preset(str(tmp_path / "preset"))
        monkeypatch.setattr(dir_swap, "_renameat2", lambda: None)  # a system without it
    steps = _moves(monkeypatch)
    remove = storage.remove
    monkeypatch.setattr(storage, "remove", lambda path: (steps.append(f"- {path}"),
                                                         remove(path))[1])
    with storage.replacing_dir(target, **REPLACES) as new:
        _write_new(new)
        steps.clear()  # the writes above moved their own temporaries into new
    assert [s.replace(target + "/", "") for s in steps] == [
        "meta", "- vocab.txt", "assets/extra.txt", "weights.data", "weights.index"]
    assert _files(target) == {"meta": "new", "weights.index": "new", "weights.data": "new",
                              "assets/extra.txt": "new", "notes.txt": "mine"}
    assert not [name for name in storage.listdir(target) if name.startswith(".tmp-")]
