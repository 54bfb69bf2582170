"""tools/create_pretraining_data.py as a user runs it: real Wikipedia text in, the original's
TFRecords out; bad flags and inputs are one line on stderr, exit status 1, nothing written.

The runs that write records and the interrupted runs are processes of their own; the bad
flags and inputs run as command lines of the tool in one fresh process
(`tests.tool_runs.run_cases`), each with its own exit code, stdout and stderr."""

import os
import pathlib
import subprocess
import sys

import pytest
import tensorflow as tf

from keras_bert.data.pretraining import records as pretraining_records
from tests import tool_runs
from tests.data.pretraining import wiki_corpus as pretraining_corpus

REPO = pathlib.Path(__file__).resolve().parent.parent.parent
TOOL = "tools/create_pretraining_data.py"


def _run(*flags):
    return tool_runs.run(TOOL, *flags)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    folder = tmp_path_factory.mktemp("corpus")
    sections = pretraining_corpus.wikipedia_sections()
    pretraining_corpus.write_corpus(folder / "a.txt", sections[:60])
    pretraining_corpus.write_corpus(folder / "b.txt", sections[60:120])
    return folder


def test_preset_vocabulary_shards_and_workers(corpus, tmp_path):
    out = tmp_path / "pretrain.tfrecord"
    result = _run(f"--input_file={corpus}/a.txt,{corpus}/b*.txt", f"--output_file={out}",
                  "--num_output_shards=3", "--preset=minilm_l6", "--max_seq_length=64",
                  "--max_predictions_per_seq=8", "--dupe_factor=2", "--num_workers=2",
                  "--chunk_lines=400")
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stderr == ""  # no TensorFlow start-up or oneDNN lines, no warnings
    lines = result.stdout.splitlines()
    assert lines[0].startswith("chunk 1: ") and "instances" in lines[0]  # progress
    shards = sorted(os.listdir(tmp_path))
    assert shards == [f"pretrain.tfrecord-0000{i}-of-00003" for i in range(3)]
    spec = pretraining_records.feature_spec(64, 8)
    count = 0
    for name in shards:
        for record in tf.data.TFRecordDataset(str(tmp_path / name)):
            features = tf.io.parse_single_example(record, spec)
            assert features["input_ids"].numpy()[0] == 101  # [CLS] of minilm_l6's vocab
            count += 1
    assert f"Wrote {count:,} instances from " in lines[-1]
    assert "lines, 2 input files) to 3 file(s)" in lines[-1]
    assert "2 worker processes" in lines[-1]
    assert count > 500


def _assert_error(result, message):
    assert result.returncode == 1, result.stderr[-3000:]
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    last = result.stderr.strip().splitlines()[-1]
    assert message in last, result.stderr[-3000:]


@pytest.fixture(scope="module")
def errors(corpus, minilm_path, tmp_path_factory):
    """The bad flags and inputs below, run in one process: name -> (result, its output
    directory, which must stay empty)."""
    folders = {name: tmp_path_factory.mktemp(name)
               for name in ("missing_input", "too_many_predictions", "two_vocabularies")}
    vocab = f"--vocab_file={minilm_path}/vocab.txt"
    cases = {
        "missing_input": [f"--input_file={folders['missing_input']}/nothing*.txt",
                          f"--output_file={folders['missing_input']}/o", vocab],
        "too_many_predictions": [f"--input_file={corpus}/a.txt",
                                 f"--output_file={folders['too_many_predictions']}/o", vocab,
                                 "--max_seq_length=16", "--max_predictions_per_seq=20"],
        "two_vocabularies": [f"--input_file={corpus}/a.txt",
                             f"--output_file={folders['two_vocabularies']}/o", vocab,
                             "--preset=minilm_l6"],
    }
    startup, results = tool_runs.run_cases(TOOL, list(cases.values()))
    assert startup.stdout == startup.stderr == ""  # importing the tool prints nothing
    return {name: (result, folders[name]) for name, result in zip(cases, results)}


def test_missing_input_is_named(errors):
    result, tmp_path = errors["missing_input"]
    _assert_error(result, f"create_pretraining_data.py: input {tmp_path}/nothing*.txt: no such "
                  "file (nothing matches it)")
    assert os.listdir(tmp_path) == []


def test_too_many_predictions_for_the_sequence(errors):
    result, tmp_path = errors["too_many_predictions"]
    _assert_error(result, "--max_predictions_per_seq=20 is more than a sequence of "
                  "--max_seq_length=16 can hold (at most 13 tokens besides [CLS] and the two "
                  "[SEP])")
    assert os.listdir(tmp_path) == []


def test_one_vocabulary_source(errors):
    result, tmp_path = errors["two_vocabularies"]
    assert result.returncode == 1
    assert "Give --vocab_file or --preset, exactly one." in result.stderr
    assert os.listdir(tmp_path) == []


@pytest.fixture(scope="module")
def copies(corpus, tmp_path_factory):
    """64 copies of the corpus, as 64 files: a run long enough to interrupt after its first
    chunk even when this process is slow to read that chunk's line (a loaded machine); an
    interrupted run reads no more than it did with fewer files."""
    folder = tmp_path_factory.mktemp("copies")
    text = (corpus / "a.txt").read_text() + "\n" + (corpus / "b.txt").read_text()
    for i in range(64):
        (folder / f"part-{i}.txt").write_text(text)
    return folder


def _start_and_stop(copies, out, signal_number, *flags):
    """Starts the tool, sends a signal once it has written its first chunk; returns the
    finished process."""
    process = subprocess.Popen(
        [sys.executable, str(REPO / "tools" / "create_pretraining_data.py"),
         f"--input_file={copies}/*.txt", f"--output_file={out}", "--preset=minilm_l6",
         "--chunk_lines=300",
         "--max_seq_length=64", "--max_predictions_per_seq=8", *flags],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = process.stdout.readline()
        assert first.startswith("chunk 1: "), first + process.stderr.read()[-3000:]
        process.send_signal(signal_number)
        process.wait(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    return process


@pytest.mark.parametrize("workers", ["1", "2"])
def test_ctrl_c_leaves_no_output(copies, tmp_path, workers):
    import signal

    process = _start_and_stop(copies, tmp_path / "out.tfrecord", signal.SIGINT,
                              f"--num_workers={workers}", "--num_output_shards=2")
    assert process.returncode == 130
    assert process.stderr.read().endswith(
        "create_pretraining_data.py: interrupted; no output file was written\n")
    assert os.listdir(tmp_path) == []  # no shard, no temporary directory


def test_kill_leaves_no_output_file_and_the_next_run_sweeps(copies, corpus, tmp_path,
                                                           minilm_path):
    import signal

    from keras_bert.data.pretraining import create as pretraining_data

    process = _start_and_stop(copies, tmp_path / "out.tfrecord", signal.SIGKILL)
    assert process.returncode == -signal.SIGKILL
    left = os.listdir(tmp_path)
    assert len(left) == 1 and left[0].startswith(".tmp-")  # its work space, never out.tfrecord
    pretraining_data.create_pretraining_data(
        f"{corpus}/a.txt", [str(tmp_path / "out.tfrecord")], str(minilm_path / "vocab.txt"))
    assert os.listdir(tmp_path) == ["out.tfrecord"]  # the dead run's directory swept
