"""tools/build_vocab.py on a small sample of real Wikipedia text, and its flag errors.

The tool runs in a subprocess as a user runs it: its exit code, stdout and stderr are checked,
and stderr must be empty on success (no TensorFlow start-up lines).
"""

import pathlib
import subprocess
import sys

import pytest

from keras_bert.text import BertTokenizer
from tests.text import corpus

REPO = pathlib.Path(__file__).resolve().parent.parent.parent


def _run(*flags):
    return subprocess.run([sys.executable, str(REPO / "tools" / "build_vocab.py"), *flags],
                          capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def texts(tmp_path_factory):
    path = tmp_path_factory.mktemp("texts")
    lines = corpus.wikipedia_lines()[:600]
    (path / "a.txt").write_text("\n".join(lines[:300]), encoding="utf-8")
    (path / "b.txt").write_text("\n".join(lines[300:]), encoding="utf-8")
    return path


def test_build_vocab_from_wikipedia_sample(texts, tmp_path):
    out = tmp_path / "vocab.txt"
    result = _run(f"--input_files={texts}/*.txt", f"--output={out}", "--vocab_size=1000",
                  "--lower_thresh=2", "--upper_thresh=100")
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stderr == ""  # no TensorFlow start-up or oneDNN lines
    vocab = out.read_text(encoding="utf-8").split("\n")[:-1]
    assert result.stdout == f"wrote {len(vocab)} tokens from 2 file(s) to {out}\n"
    assert vocab[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    assert 900 <= len(vocab) <= 1000 and len(set(vocab)) == len(vocab)
    assert "the" in vocab and any(t.startswith("##") for t in vocab)
    assert all(t == t.lower() for t in vocab[5:])  # uncased by default
    tok = BertTokenizer(str(out))
    lines = corpus.wikipedia_lines()[:200]
    ids = tok(lines).flat_values.numpy()
    assert (ids == tok.unk_token_id).mean() < 0.01  # the learned pieces cover the text
    assert tok.detokenize(tok(["The anarchist movement"])).numpy()[0] == b"the anarchist movement"


def _assert_flag_error(result, message):
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.startswith("FATAL Flags parsing error: "), result.stderr[-3000:]
    assert message in result.stderr, result.stderr[-3000:]
    assert "Traceback" not in result.stderr and "I0000" not in result.stderr


def test_missing_output_directory_is_a_flag_error_before_learning(texts, tmp_path):
    # A flag error is raised while the flags are parsed, before any text is read.
    missing = tmp_path / "no" / "such"
    result = _run(f"--input_files={texts}/*.txt", f"--output={missing}/vocab.txt")
    _assert_flag_error(result, f"flag --output={missing}/vocab.txt: the directory {missing} "
                               "does not exist; create it first")


@pytest.mark.parametrize("size", ["4", "0", "-3"])
def test_vocab_size_below_the_reserved_tokens_is_a_flag_error(texts, tmp_path, size):
    result = _run(f"--input_files={texts}/*.txt", f"--output={tmp_path}/vocab.txt",
                  f"--vocab_size={size}")
    _assert_flag_error(result, f"flag --vocab_size={size}: must be at least 5, the reserved "
                               "tokens [PAD] [UNK] [CLS] [SEP] [MASK]")
    assert not (tmp_path / "vocab.txt").exists()


def test_input_files_that_match_nothing_is_a_flag_error(tmp_path):
    result = _run(f"--input_files={tmp_path}/*.txt", f"--output={tmp_path}/vocab.txt")
    _assert_flag_error(result, f"flag --input_files=['{tmp_path}/*.txt']: no file matches "
                               f"{tmp_path}/*.txt")

