"""tools/pretrain.py end to end at a tiny size: records made by the original
create_pretraining_data.py, raw text with dynamic masking, the two-phase recipe, Mirrored
over two logical CPU devices against one device, a real two-worker MultiWorkerMirrored run
over gRPC on 127.0.0.1, kill -9 and resume, an unreachable TPU, and flag errors (as command
lines of the tool in one process, `tests.tool_runs.run_cases`)."""

import json
import os
import pathlib
import signal
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

from tests import tool_runs

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "training"))
import pretraining_cases as cases  # noqa: E402


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("pretrain_data")
    corpus = cases.write_wiki_corpus(root / "wiki.txt")
    return {
        "root": root,
        "corpus": corpus,
        "records": cases.original_records(corpus, root / "original.tfrecord"),
        "config": cases.bert_config(root / "bert_config.json"),
        "config_no_dropout": cases.bert_config(root / "bert_config_nd.json", dropout=0.0),
    }


@pytest.fixture(scope="module")
def phase_one(data):
    model_dir = data["root"] / "phase1"
    result = cases.run_tool(*_long_flags(data, model_dir),
                            f"--eval_input_file={data['records']}", "--max_eval_steps=2")
    assert result.returncode == 0, result.stderr[-3000:]
    return model_dir, result


def _long_flags(data, model_dir):
    """12 steps in loops of 2, a checkpoint every 4: phase 1, and the kill -9 test."""
    return cases.small_flags(data["config"], model_dir, steps=12, steps_per_loop=2,
                             save_checkpoints_steps=4) + [f"--input_file={data['records']}"]


def _progress(model_dir):
    return [json.loads(line) for line in
            (pathlib.Path(model_dir) / "progress.jsonl").read_text().splitlines()]


def test_trains_on_records_of_the_original_script(phase_one):
    import keras_bert
    from keras_bert.training import pretraining_run

    model_dir, result = phase_one
    lines = [line for line in result.stdout.splitlines() if line.startswith("step ")]
    assert [line.split()[1] for line in lines] == [f"{i}/12" for i in range(2, 13, 2)]
    assert "seq/s" in lines[0] and "loss" in lines[0]
    metrics = json.loads((model_dir / "metrics.json").read_text())
    # The run's counts, and the last loop's figures under a key that says so: a 12-step run
    # in loops of 2 once said "train_steps: 2".
    assert (metrics["total_train_steps"], metrics["train_steps_this_run"]) == (12, 12)
    last_loop = metrics["last_loop"]
    assert (last_loop["first_step"], last_loop["last_step"], last_loop["steps"],
            last_loop["sequences"]) == (11, 12, 2, 2 * metrics["train_batch_size"])
    assert set(metrics) - {k for k in metrics if k.startswith("eval_")} == set(
        pretraining_run.METRICS_KEYS)
    for name in ("masked_lm_accuracy", "masked_lm_loss", "next_sentence_accuracy",
                 "next_sentence_loss"):
        assert np.isfinite(metrics[f"eval_{name}"]) and np.isfinite(last_loop[name])
    assert "  last_loop.loss: " in result.stdout and "  total_train_steps: 12" in result.stdout
    assert [p["step"] for p in _progress(model_dir)] == list(range(2, 13, 2))
    assert sorted(os.listdir(model_dir / "logs")) == ["eval", "train"]
    assert {f"ckpt-{i}.index" for i in (4, 8, 12)} <= set(os.listdir(model_dir / "checkpoints"))
    # The final model loads as a preset, heads included.
    model = keras_bert.BertPretrainer.from_preset(str(model_dir))
    encoder = keras_bert.BertEncoder.from_preset(str(model_dir))
    assert model.encoder.bert_config.hidden_size == encoder.bert_config.hidden_size == 32
    assert model.preprocessor.seq_length == cases.SEQ
    saved = cases.encoder_weights(model_dir)
    np.testing.assert_array_equal(model.nsp_head.kernel.numpy().T,
                                  saved["cls/seq_relationship/output_weights"])


def test_phase_two_continues_from_phase_one_at_a_longer_length(data, phase_one, tmp_path):
    model_dir, _ = phase_one
    # A learning rate of ~0 keeps the weights: phase 2 starts from phase 1's, at seq 64.
    result = cases.run_tool(*cases.small_flags(None, tmp_path / "phase2", steps=3,
                                               learning_rate=1e-12, max_seq_length=64)[1:],
                            f"--init_checkpoint={model_dir}", "--input_format=text",
                            f"--input_file={data['corpus']}")
    assert result.returncode == 0, result.stderr[-3000:]  # raw text, dynamic masking
    assert json.loads((tmp_path / "phase2" / "metrics.json").read_text())[
        "total_train_steps"] == 3
    before, after = cases.encoder_weights(model_dir), cases.encoder_weights(tmp_path / "phase2")
    assert set(before) == set(after)
    for name in before:
        np.testing.assert_allclose(after[name], before[name], atol=1e-6, err_msg=name)
    saved = json.loads((tmp_path / "phase2" / "keras_bert.json").read_text())
    assert saved["preprocessor"]["seq_length"] == 64


def test_mirrored_over_two_cpu_devices_matches_one_device(data, tmp_path):
    # The two runs at once (they share no files).
    strategies = {"one": ["--strategy=one_device"],
                  "two": ["--strategy=mirrored", "--num_cpu_devices=2"]}
    runs = dict(zip(strategies, cases.run_tools_at_once(*[(
        [*cases.small_flags(data["config_no_dropout"], tmp_path / name),
         f"--input_file={data['records']}", *flags], None)
        for name, flags in strategies.items()])))
    for result in runs.values():
        assert result.returncode == 0, result.stderr[-3000:]
    assert "MirroredStrategy (2 replica(s))" in runs["two"].stdout
    assert "OneDeviceStrategy (1 replica(s))" in runs["one"].stdout
    one, two = _progress(tmp_path / "one"), _progress(tmp_path / "two")
    for a, b in zip(one, two):
        for key in ("loss", "masked_lm_loss", "next_sentence_loss"):
            assert b[key] == pytest.approx(a[key], rel=1e-5), key
    weights_one = cases.encoder_weights(tmp_path / "one")
    weights_two = cases.encoder_weights(tmp_path / "two")
    for name in weights_one:
        np.testing.assert_allclose(weights_two[name], weights_one[name], atol=2e-5,
                                   err_msg=name)


def _free_ports(n):
    sockets = [socket.socket() for _ in range(n)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def test_two_workers_multi_worker_mirrored_finish_and_agree(data, tmp_path):
    ports = _free_ports(2)
    cluster = {"worker": [f"127.0.0.1:{p}" for p in ports]}
    flags = cases.small_flags(data["config"], tmp_path / "run") + [
        f"--input_file={data['records']}", "--strategy=multi_worker_mirrored"]
    workers = cases.run_tools_at_once(*[(flags, {"TF_CONFIG": json.dumps(
        {"cluster": cluster, "task": {"type": "worker", "index": index}})})
        for index in range(2)])
    for worker in workers:
        assert worker.returncode == 0, worker.stderr[-3000:]
        assert "MultiWorkerMirroredStrategy (2 replica(s))" in worker.stdout

    def final(out):
        return {line.split(":")[0].strip(): line.split(":")[1].strip()
                for line in out.splitlines() if line.startswith("  last_loop.")}

    assert final(workers[0].stdout) and final(workers[0].stdout)["last_loop.loss"] == final(
        workers[1].stdout)["last_loop.loss"]
    assert json.loads((tmp_path / "run" / "metrics.json").read_text())[
        "total_train_steps"] == 6
    assert not (tmp_path / "run" / "workers").exists()  # worker 1's scratch checkpoints


def _recorded_checkpoint(directory):
    """The step of the latest checkpoint the `checkpoint` state file of ``directory`` records
    (what tf.train.latest_checkpoint restores), or None."""
    try:
        text = (directory / "checkpoint").read_text()
    except FileNotFoundError:
        return None
    for line in text.splitlines():
        if line.startswith("model_checkpoint_path:"):
            return int(line.split('"')[1].rsplit("-", 1)[1])
    return None


def test_kill_9_then_the_same_command_resumes_and_matches_an_uninterrupted_run(
        data, phase_one, tmp_path):
    flags = _long_flags(data, tmp_path / "killed")  # phase_one ran them uninterrupted
    process = subprocess.Popen(cases.tool_command(*flags), cwd=REPO, start_new_session=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    # Killed once a checkpoint is recorded: the `checkpoint` state file (written atomically,
    # after the checkpoint's files) names it, which is what a restart reads. A kill between a
    # checkpoint's .index and that file leaves nothing to resume from: the resumed run would
    # start over, which is right, but not what this test is about.
    recorded = None
    deadline = time.monotonic() + cases.TOOL_TIMEOUT
    try:
        while recorded is None and process.poll() is None:
            assert time.monotonic() < deadline, "no checkpoint was recorded"
            time.sleep(0.05)
            recorded = _recorded_checkpoint(tmp_path / "killed" / "checkpoints")
        os.killpg(process.pid, signal.SIGKILL)
    finally:
        process.wait(timeout=60)
    assert process.returncode != 0, "the run finished before it could be killed"
    assert recorded is not None
    assert not (tmp_path / "killed" / "metrics.json").exists()

    resumed = cases.run_tool(*flags)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "Resumed from" in resumed.stdout
    step = int(resumed.stdout.split("Resumed from")[1].split(" at step ")[1].split()[0])
    assert step >= recorded and step % 4 == 0
    steps_run = [int(line.split()[1].split("/")[0]) for line in resumed.stdout.splitlines()
                 if line.startswith("step ")]
    assert steps_run[0] == step + 2 and steps_run[-1] == 12
    metrics = json.loads((tmp_path / "killed" / "metrics.json").read_text())
    assert (metrics["total_train_steps"], metrics["train_steps_this_run"]) == (12, 12 - step)
    assert (metrics["last_loop"]["first_step"], metrics["last_loop"]["steps"]) == (11, 2)

    resumed_weights = cases.encoder_weights(tmp_path / "killed")
    whole_weights = cases.encoder_weights(phase_one[0])
    for name in whole_weights:
        np.testing.assert_allclose(resumed_weights[name], whole_weights[name], atol=1e-6,
                                   err_msg=name)


def test_unreachable_tpu_fails_within_seconds_with_a_clear_message(data, tmp_path):
    port = _free_ports(1)[0]  # nothing listens there
    result = subprocess.run(cases.tool_command(
        f"--tpu=grpc://127.0.0.1:{port}", f"--bert_config_file={data['config']}",
        f"--input_file={data['records']}", f"--model_dir={tmp_path}"),
        cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    assert f"--tpu=grpc://127.0.0.1:{port}: nothing answers at 127.0.0.1:{port}" in result.stderr
    assert "Traceback" not in result.stderr


# The mirrored case first: the CPU is split into logical devices only before TensorFlow
# makes its first op, and the cases share one process.
FLAG_ERRORS = [
    (["--bert_config_file={config}", "--strategy=mirrored", "--num_cpu_devices=2",
      "--train_batch_size=3"], "must be a multiple of the 2 replicas"),
    (["--preset=tiny", "--bert_config_file={config}"], "do not combine it with"),
    (["--bert_config_file={config}", "--max_seq_length=64"],
     "original.tfrecord: feature 'input_ids' has 32 values per record, expected 64"),
]


@pytest.fixture(scope="module")
def flag_errors(data, tmp_path_factory):
    """The command lines of FLAG_ERRORS, run in one process (tests.tool_runs.run_cases)."""
    argvs = []
    for flags, _ in FLAG_ERRORS:
        flags = [f.format(**data) for f in flags]
        for name, value in (("input_file", data["records"]), ("num_warmup_steps", 1)):
            if not any(f.startswith(f"--{name}=") for f in flags):
                flags.append(f"--{name}={value}")
        argvs.append(flags + [f"--model_dir={tmp_path_factory.mktemp('flag_error')}",
                              "--num_train_steps=10",
                              f"--max_predictions_per_seq={cases.PREDICTIONS}"])
    startup, results = tool_runs.run_cases("tools/pretrain.py", argvs,
                                           timeout=cases.TOOL_TIMEOUT)
    assert startup.stdout == startup.stderr == "", startup.stderr  # importing it prints nothing
    return dict(zip((message for _, message in FLAG_ERRORS), results))


@pytest.mark.parametrize("message", [message for _, message in FLAG_ERRORS])
def test_flag_errors_are_one_clear_line(flag_errors, message):
    import re

    result = flag_errors[message]
    assert result.returncode == 1, result.stdout[-2000:]
    assert re.search(message, result.stderr), result.stderr[-2000:]
    assert "Traceback" not in result.stderr
