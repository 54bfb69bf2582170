"""tools/build_vocab.py on a small sample of real Wikipedia text, and its flag errors.

The tool runs in a subprocess as a user runs it: its exit code, stdout and stderr are checked,
and stderr must be empty on success (no TensorFlow start-up lines). The flag errors run as
command lines of the tool in one fresh process (`tests.tool_runs.run_cases`: one start-up for
all of them), each with its own exit code, stdout and stderr.
"""

import pytest

from keras_bert.text import BertTokenizer
from tests import tool_runs
from tests.text import corpus

TOOL = "tools/build_vocab.py"


def _run(*flags):
    return tool_runs.run(TOOL, *flags)


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


SIZES = ["4", "0", "-3"]


@pytest.fixture(scope="module")
def flag_errors(texts, tmp_path_factory):
    """Every flag error below, run in one process: name -> (result, its directory)."""
    folders = {name: tmp_path_factory.mktemp("flag_error")
               for name in ["missing_output", "no_match"] + [f"size{s}" for s in SIZES]}
    cases = {
        "missing_output": [f"--input_files={texts}/*.txt",
                           f"--output={folders['missing_output']}/no/such/vocab.txt"],
        "no_match": [f"--input_files={folders['no_match']}/*.txt",
                     f"--output={folders['no_match']}/vocab.txt"],
        **{f"size{s}": [f"--input_files={texts}/*.txt",
                        f"--output={folders[f'size{s}']}/vocab.txt", f"--vocab_size={s}"]
           for s in SIZES},
    }
    startup, results = tool_runs.run_cases(TOOL, list(cases.values()))
    assert startup.stdout == startup.stderr == ""  # importing the tool prints nothing
    return {name: (result, folders[name]) for name, result in zip(cases, results)}


def _assert_flag_error(result, message):
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.startswith("FATAL Flags parsing error: "), result.stderr[-3000:]
    assert message in result.stderr, result.stderr[-3000:]
    assert "Traceback" not in result.stderr and "I0000" not in result.stderr


def test_missing_output_directory_is_a_flag_error_before_learning(flag_errors):
    # A flag error is raised while the flags are parsed, before any text is read.
    result, folder = flag_errors["missing_output"]
    missing = folder / "no" / "such"
    _assert_flag_error(result, f"flag --output={missing}/vocab.txt: the directory {missing} "
                               "does not exist; create it first")


@pytest.mark.parametrize("size", SIZES)
def test_vocab_size_below_the_reserved_tokens_is_a_flag_error(flag_errors, size):
    result, tmp_path = flag_errors[f"size{size}"]
    _assert_flag_error(result, f"flag --vocab_size={size}: must be at least 5, the reserved "
                               "tokens [PAD] [UNK] [CLS] [SEP] [MASK]")
    assert not (tmp_path / "vocab.txt").exists()


def test_input_files_that_match_nothing_is_a_flag_error(flag_errors):
    result, tmp_path = flag_errors["no_match"]
    _assert_flag_error(result, f"flag --input_files=['{tmp_path}/*.txt']: no file matches "
                               f"{tmp_path}/*.txt")

