"""keras_bert.dir_swap: a local directory replaced by another in one step, the files the new
one does not replace kept (hard links), and a clean refusal where the system cannot swap."""

import errno
import os

import pytest

from keras_bert import dir_swap


def _tree(root, files):
    """Writes ``{relative path: text}`` under ``root``; returns ``root`` as a str."""
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return str(root)


def _read(root):
    """``{relative path: text}`` of the files under ``root`` (links followed)."""
    out = {}
    for directory, _, files in os.walk(root):
        for name in files:
            path = os.path.join(directory, name)
            with open(path) as f:
                out[os.path.relpath(path, root)] = f.read()
    return out


def test_exchange_swaps_two_directories_in_one_step(tmp_path):
    a = _tree(tmp_path / "a", {"weights": "old"})
    b = _tree(tmp_path / "b", {"weights": "new", "vocab.txt": "v"})
    dir_swap.exchange(a, b)  # this machine's file system (tmp_path) has it
    assert _read(a) == {"weights": "new", "vocab.txt": "v"}
    assert _read(b) == {"weights": "old"}
    with pytest.raises(FileNotFoundError):
        dir_swap.exchange(a, str(tmp_path / "absent"))


def test_carry_over_links_what_the_new_directory_lacks_and_skips_what_it_replaces(tmp_path):
    old = _tree(tmp_path / "old", {"weights": "old", "vocab.txt": "old vocabulary",
                                   "notes.txt": "mine", "train/events": "log",
                                   "assets/a.txt": "kept", ".tmp-x/part": "a writer's"})
    os.symlink("notes.txt", os.path.join(old, "link"))
    new = _tree(tmp_path / "new", {"weights": "new", "assets/b.txt": "new asset"})
    added = dir_swap.carry_over(old, new, skip=lambda f: f in ("vocab.txt", ".tmp-x"))
    assert added == ["assets/a.txt", "link", "notes.txt", "train", "train/events"]
    assert _read(new) == {"weights": "new", "notes.txt": "mine", "train/events": "log",
                          "assets/a.txt": "kept", "assets/b.txt": "new asset", "link": "mine"}
    assert os.path.samefile(os.path.join(old, "train/events"), os.path.join(new, "train/events"))
    assert os.readlink(os.path.join(new, "link")) == "notes.txt"
    assert "vocab.txt" in os.listdir(old)  # the old directory is never changed


@pytest.mark.parametrize("present", ["absent", "empty", "full"])
def test_replace_renames_or_swaps_and_keeps_the_files_asked_for(tmp_path, present):
    path = tmp_path / "preset"
    if present != "absent":
        path.mkdir()
    if present == "full":
        _tree(path, {"weights": "old", "vocab.txt": "old vocabulary", "notes.txt": "mine"})
    new = _tree(tmp_path / "staging" / "preset", {"weights": "new"})
    assert dir_swap.replace(new, str(path), keep=lambda f: f != "vocab.txt")
    want = {"weights": "new", "notes.txt": "mine"} if present == "full" else {"weights": "new"}
    assert _read(path) == want
    # The old directory (or nothing) is left at the new one's name, for the caller to remove.
    assert _read(new) == ({"weights": "old", "vocab.txt": "old vocabulary", "notes.txt": "mine"}
                          if present == "full" else {})


def test_where_the_system_cannot_swap_nothing_is_changed(tmp_path, monkeypatch):
    path = _tree(tmp_path / "preset", {"weights": "old", "notes.txt": "mine"})
    new = _tree(tmp_path / "staging" / "preset", {"weights": "new"})
    monkeypatch.setattr(dir_swap, "_renameat2", lambda: None)  # not Linux, an old libc
    with pytest.raises(dir_swap.SwapUnavailable, match="renameat2 is not available"):
        dir_swap.exchange(path, new)
    assert dir_swap.replace(new, path, keep=lambda f: True) is False
    assert _read(path) == {"weights": "old", "notes.txt": "mine"}
    assert _read(new) == {"weights": "new"}  # what carry_over linked in is gone again

    def no_links(source, target, follow_symlinks=True):  # another file system mounted below
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.undo()
    monkeypatch.setattr(os, "link", no_links)
    assert dir_swap.replace(new, path, keep=lambda f: True) is False
    assert _read(path) == {"weights": "old", "notes.txt": "mine"}
    assert _read(new) == {"weights": "new"}
