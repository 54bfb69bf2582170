"""Fixtures of the preset tests: a local HTTP server and a private cache directory."""

import pytest

from google_zips import Server  # tests/presets/google_zips.py


@pytest.fixture
def server():
    s = Server()
    yield s
    s.close()


@pytest.fixture
def cache(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    monkeypatch.setenv("KERAS_BERT_HOME", str(root))
    monkeypatch.delenv("KERAS_BERT_BASE_URL", raising=False)
    return root
