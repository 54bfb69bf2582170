"""Checks that a writer given ``ram://`` (or ``gs://``) paths writes nothing on local disk."""

import contextlib
import os
import tempfile

# TensorFlow's autograph keeps the Python source of the functions it converts in TMPDIR: the
# library's code, not anything a writer writes.
AUTOGRAPH = "__autograph_generated_file"


@contextlib.contextmanager
def nothing_written_locally(tmp_path, monkeypatch):
    """Runs the ``with`` block in an empty working directory with an empty temporary directory
    (``TMPDIR``, `tempfile`), and asserts that both are still empty afterwards: no
    ``./ram:/...`` folder, no temporary file left or staged on local disk."""
    cwd, tmp = tmp_path / "cwd", tmp_path / "tmp"
    cwd.mkdir()
    tmp.mkdir()
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    yield
    written = [os.path.join(root, name) for folder in (cwd, tmp)
               for root, dirs, files in os.walk(folder) for name in dirs + files
               if not name.startswith(AUTOGRAPH)]
    assert written == [], f"written on local disk: {written}"
