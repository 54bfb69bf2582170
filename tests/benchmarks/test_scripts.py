"""Every benchmark script runs its smallest configuration as a user starts it, from the
repository root (the script's folder is sys.path[0], where benchmarks/tokenize.py would shadow
the standard library's tokenize without its guard), and prints only its table and JSON line.
The full runs are by hand, not in CI."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
SCRIPTS = sorted((REPO / "benchmarks").glob("*.py"))


# The smallest run of each benchmark: what it prints must be its table and JSON line only.
SMALL_RUNS = {
    "create_pretraining_data.py": ["--max_documents=2", "--corpus_copies=2", "--dupe_factor=1",
                                   "--num_workers=1", "--rounds=1"],
    "encoder.py": ["--num_layers=1", "--batch_size=1", "--seq_length=8", "--rounds=1",
                   "--steps=1", "--warmup=0", "--precisions=fp32", "--xla=on", "--ceiling=false",
                   "--peers=keras_hub"],
    "int8.py": ["--batch_size=2", "--seq_length=8", "--short_length=4", "--num_layers=1",
                "--hidden_size=64", "--intermediate_size=128", "--rounds=1", "--steps=1",
                "--warmup=0", "--latency_calls=2", "--matmul_routes=fp32,keras_bert_int8",
                "--encoder_routes=fp32,keras_bert_int8"],
    "finetune.py": ["--num_layers=1", "--batch_size=2", "--seq_length=8", "--rounds=1",
                    "--warmup=0", "--precisions=fp32", "--peers=keras_hub,hf_torch"],
    "lora.py": ["--max_train_examples=16", "--max_eval_examples=16", "--epochs=1",
                "--seq_length=16"],
    "pretrain.py": ["--num_layers=1", "--hidden_size=64", "--batch_size=2", "--seq_length=16",
                    "--max_predictions_per_seq=3", "--rounds=1", "--steps=1", "--warmup=0",
                    "--precisions=fp32", "--xla=off", "--peers=keras_hub,hf_torch"],
    "serve.py": ["--clients=2", "--requests=3", "--warmup=1", "--rounds=1", "--load_seconds=2",
                 "--load_grpc_clients=2", "--load_rest_clients=2", "--burst_requests=40",
                 "--connections=8"],
    "serve_cpu.py": ["--model=tiny", "--seq_length=16", "--data=wikipedia", "--max_texts=8",
                     "--latency_texts=2", "--rounds=1",
                     "--contenders=keras_bert_fp32,litert_int8,ort_int8"],
    "tokenize.py": ["--max_lines=20", "--repeats=1"],
}


def test_every_benchmark_has_a_small_run():
    assert sorted(SMALL_RUNS) == [script.name for script in SCRIPTS]


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_small_run_prints_no_tensorflow_noise(script):
    # As a user starts it: without the TF_CPP_MIN_LOG_LEVEL that tests/conftest.py sets.
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    result = subprocess.run([sys.executable, str(script), *SMALL_RUNS[script.name]], cwd=REPO,
                            capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stderr == ""  # no TensorFlow start-up, CUDA, oneDNN or XLA lines
    json.loads(result.stdout.splitlines()[-1])  # the last line is the JSON summary
