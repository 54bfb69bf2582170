"""keras_bert.tempdirs: local writers' temporary directories: a dead writer's are swept, a
live writer's never."""

import os
import pathlib
import subprocess
import sys
import time

import pytest

from keras_bert import tempdirs
from keras_bert.storage import write_json

REPO = pathlib.Path(__file__).resolve().parents[1]
HOLD = """
import sys, time
from keras_bert import tempdirs
with tempdirs.locked_tempdir(sys.argv[1]) as path:
    open(path + "/big.bin", "wb").write(b"x" * 1000)
    print(path, flush=True)
    time.sleep(600)
"""


def _holder(parent):
    """Another process that holds a locked temporary directory in ``parent``; its path."""
    process = subprocess.Popen([sys.executable, "-c", HOLD, str(parent)], cwd=REPO,
                               stdout=subprocess.PIPE, text=True)
    path = process.stdout.readline().strip()
    assert path, "the holder did not start"
    return process, pathlib.Path(path)


def _age(path, seconds):
    then = time.time() - seconds
    os.utime(path, (then, then))


def test_a_live_writer_is_kept_and_a_killed_one_is_swept(tmp_path):
    process, held = _holder(tmp_path)
    try:
        _age(held, 10 * tempdirs.STALE_AFTER)  # age alone never removes a locked directory
        assert tempdirs.sweep(tmp_path, legacy=True) == []
        write_json(tmp_path / "meta.json", {"a": 1})  # another writer in the same directory
        assert (held / "big.bin").is_file()
    finally:
        process.kill()  # SIGKILL: the holder cannot clean up
        process.wait()
    assert (held / "big.bin").is_file()
    write_json(tmp_path / "meta.json", {"a": 2})  # the next writer sweeps it
    assert sorted(os.listdir(tmp_path)) == ["meta.json"]


def test_the_directory_is_removed_when_the_writer_fails(tmp_path):
    with pytest.raises(RuntimeError, match="boom"):
        with tempdirs.locked_tempdir(tmp_path) as path:
            pathlib.Path(path, "part").write_bytes(b"x")
            raise RuntimeError("boom")
    assert os.listdir(tmp_path) == []


def test_leftovers_without_a_lock_go_by_age_in_owned_directories_only(tmp_path):
    young, old = tmp_path / ".tmp-young", tmp_path / ".tmp-old"
    young.mkdir()
    old.mkdir()
    (old / "extracted").mkdir()
    part = tmp_path / "uncased_L-2_H-8_A-2.zip.part-4242"
    part.write_bytes(b"half")
    mine = tmp_path / "notes.txt"
    mine.write_text("keep")
    for path in (old, part, mine):
        _age(path, 2 * tempdirs.STALE_AFTER)
    assert tempdirs.sweep(tmp_path) == []  # not keras_bert's directory: only locked ones go
    assert sorted(tempdirs.sweep(tmp_path, legacy=True)) == sorted([str(old), str(part)])
    assert sorted(os.listdir(tmp_path)) == [".tmp-young", "notes.txt"]
