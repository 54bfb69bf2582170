"""tools/build_vocab.py on a small sample of real Wikipedia text."""

import pathlib
import subprocess
import sys

from keras_bert.text import BertTokenizer
from tests.text import corpus

REPO = pathlib.Path(__file__).resolve().parent.parent.parent


def test_build_vocab_from_wikipedia_sample(tmp_path):
    lines = corpus.wikipedia_lines()[:600]
    (tmp_path / "a.txt").write_text("\n".join(lines[:300]), encoding="utf-8")
    (tmp_path / "b.txt").write_text("\n".join(lines[300:]), encoding="utf-8")
    out = tmp_path / "vocab.txt"
    result = subprocess.run(
        [sys.executable, str(REPO / "tools" / "build_vocab.py"),
         f"--input_files={tmp_path}/*.txt", f"--output={out}", "--vocab_size=1000",
         "--lower_thresh=2", "--upper_thresh=100"],
        capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    vocab = out.read_text(encoding="utf-8").split("\n")[:-1]
    assert vocab[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    assert 900 <= len(vocab) <= 1000 and len(set(vocab)) == len(vocab)
    assert "the" in vocab and any(t.startswith("##") for t in vocab)
    assert all(t == t.lower() for t in vocab[5:])  # uncased by default
    tok = BertTokenizer(str(out))
    ids = tok(lines[:200]).flat_values.numpy()
    assert (ids == tok.unk_token_id).mean() < 0.01  # the learned pieces cover the text
    assert tok.detokenize(tok(["The anarchist movement"])).numpy()[0] == b"the anarchist movement"
