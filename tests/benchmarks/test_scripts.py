"""Every benchmark script runs its smallest configuration as a user starts it, from the
repository root (the script's folder is sys.path[0], where benchmarks/tokenize.py would shadow
the standard library's tokenize without its guard), prints only its table and JSON line, and
runs every contender it was asked for; one whose package is missing stops the script with a
message that names the package. The full runs are by hand, not in CI."""

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
    "embed_cpu.py": ["--model=tiny", "--seq_length=16", "--max_texts=8", "--latency_texts=2",
                     "--rounds=1", "--contenders=keras_bert_int8,litert_int8,ort_int8"],
    "encoder.py": ["--num_layers=1", "--batch_size=1", "--seq_length=8", "--rounds=1",
                   "--steps=1", "--warmup=0", "--precisions=fp32", "--xla=on", "--ceiling=false",
                   "--peers=keras_hub"],
    "int8.py": ["--batch_size=2", "--seq_length=8", "--short_length=4", "--num_layers=1",
                "--hidden_size=64", "--intermediate_size=128", "--rounds=1", "--steps=1",
                "--warmup=0", "--latency_calls=2", "--matmul_routes=fp32,keras_bert_int8",
                "--encoder_routes=fp32,keras_bert_int8"],
    "finetune.py": ["--num_layers=1", "--batch_size=2", "--seq_length=8", "--rounds=1",
                    "--warmup=0", "--precisions=fp32", "--peers=keras_hub,hf_torch"],
    # (the built-in tiny_random preset: the run's two demo processes, not minilm_l6's figures)
    "lora.py": ["--max_train_examples=16", "--max_eval_examples=16", "--epochs=1",
                "--seq_length=16", "--preset=tiny_random"],
    "pretrain.py": ["--num_layers=1", "--hidden_size=64", "--batch_size=2", "--seq_length=16",
                    "--max_predictions_per_seq=3", "--rounds=1", "--steps=1", "--warmup=0",
                    "--precisions=fp32", "--xla=off", "--peers=keras_hub,hf_torch"],
    # (its load run's timing checks printed, not enforced, and deadlines of 10 s: on the test
    # machine's shared CPUs only what does not depend on the time taken fails the run)
    "serve.py": ["--clients=2", "--requests=3", "--warmup=1", "--rounds=1", "--load_seconds=2",
                 "--load_rounds=1", "--load_grpc_clients=2", "--load_rest_clients=2",
                 "--burst_requests=40", "--connections=8", "--read_timeout_ms=1000",
                 "--deadline_ms=10000", "--notiming_checks"],
    "serve_cpu.py": ["--model=tiny", "--seq_length=16", "--data=wikipedia", "--max_texts=8",
                     "--latency_texts=2", "--rounds=1",
                     "--contenders=keras_bert_fp32,keras_bert_fp32_session,keras_bert_fp32_plain,"
                     "keras_bert_int8_session,litert_int8,ort_int8"],
    "tokenize.py": ["--max_lines=20", "--repeats=1"],
}



def _names(rows, key):
    """The contenders of ``rows`` (``"keras_hub (xla off)"`` -> ``"keras_hub"``), without the
    ratio rows."""
    return sorted({row[key].split(" (")[0] for row in rows if not row[key].startswith("ratio")})


# What each small run compares (its contenders: ours and the peers, routes, protocols), and
# what its JSON summary says ran: a contender asked for that did not run fails the test.
RAN = {
    "encoder.py": (["keras_bert", "keras_hub"], lambda s: _names(s["results"], "model")),
    "embed_cpu.py": (["keras_bert_int8", "litert_int8", "ort_int8"],
                     lambda s: sorted(row["contender"] for row in s["rows"])),
    "int8.py": ([["fp32", "keras_bert_int8"]] * 2,
                lambda s: [_names(s["matmuls"], "route"), _names(s["encoder"], "route")]),
    "finetune.py": (["hf_torch", "keras_bert", "keras_hub"],
                    lambda s: _names(s["results"], "model")),
    "pretrain.py": (["hf_torch", "keras_bert", "keras_hub"],
                    lambda s: _names(s["results"], "model")),
    "serve.py": (["grpc", "rest"],
                 lambda s: sorted({m.split()[0] for m in s["modes"]} & {"grpc", "rest"})),
    "serve_cpu.py": (["keras_bert_fp32", "keras_bert_fp32_plain", "keras_bert_fp32_session",
                      "keras_bert_int8_session", "litert_int8", "ort_int8"],
                     lambda s: sorted(row["contender"] for row in s["rows"])),
    "tokenize.py": (["HF BertTokenizerFast", "keras_bert BertTokenizer",
                     "keras_bert in tf.data", "keras_hub WordPieceTokenizer",
                     "tf_text FastBertTokenizer"], lambda s: _names(s["results"], "tokenizer")),
}


def test_every_benchmark_has_a_small_run():
    assert sorted(SMALL_RUNS) == [script.name for script in SCRIPTS]


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_small_run_prints_no_tensorflow_noise(script, tmp_path):
    # As a user starts it: without the TF_CPP_MIN_LOG_LEVEL that tests/conftest.py sets; its
    # temporary files in a directory of its own, where it must leave no directory of its own
    # (the exports of a full run weigh ~0.5 GB).
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    env["TMPDIR"] = str(tmp_path)
    result = subprocess.run([sys.executable, str(script), *SMALL_RUNS[script.name]], cwd=REPO,
                            capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stderr == ""  # no TensorFlow start-up, CUDA, oneDNN or XLA lines
    left = [p.name for p in tmp_path.iterdir() if p.is_dir()
            and not p.name.startswith("torchinductor_")]  # torch's per-user compile cache
    assert left == []
    summary = json.loads(result.stdout.splitlines()[-1])  # the last line is the JSON summary
    if script.name in RAN:
        asked, ran = RAN[script.name]
        assert ran(summary) == asked


# A missing package (the module hidden as Python hides one: sys.modules[name] = None) stops
# the run before anything is timed: exit status 1, one line naming the contender, the
# package and where it is pinned.
HIDE = """
import runpy, sys
sys.modules[sys.argv[1]] = None
sys.argv = sys.argv[2:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""
MISSING = [
    ("serve_cpu.py", "onnxruntime", "--contenders asks for ort_int8, which needs onnxruntime "
                                    "(requirements-test.txt)"),
    ("serve_cpu.py", "ai_edge_litert", "--contenders asks for litert_int8, which needs "
                                       "ai-edge-litert (requirements-litert.txt, the [litert] "
                                       "extra)"),
    ("encoder.py", "keras_hub", "--peers asks for keras_hub, which needs keras-hub "
                                "(requirements-keras-hub.txt, the [keras_hub] extra)"),
    ("finetune.py", "torch", "--peers asks for hf_torch, which needs torch "
                             "(requirements-hf.txt, the [hf] extra)"),
    ("pretrain.py", "transformers", "--peers asks for hf_torch, which needs transformers "
                                    "(requirements-test.txt)"),
    ("serve.py", "tensorflow_serving", "--protocols asks for grpc, which needs "
                                       "tensorflow-serving-api (requirements-serve.txt, the "
                                       "[serve] extra)"),
    ("tokenize.py", "keras_hub", "keras_hub WordPieceTokenizer needs keras-hub "
                                 "(requirements-keras-hub.txt, the [keras_hub] extra)"),
]


@pytest.mark.parametrize("name,module,message", MISSING, ids=lambda x: x)
def test_a_contender_whose_package_is_missing_stops_the_run(name, module, message):
    result = subprocess.run([sys.executable, "-c", HIDE, module, str(REPO / "benchmarks" / name),
                             *SMALL_RUNS[name]], cwd=REPO, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 1, result.stderr[-3000:]
    assert result.stdout == ""
    assert result.stderr.startswith(f"{name}: {message}, not installed here. Install it (pip "
                                    "install -r requirements-test.txt installs what every "
                                    "benchmark needs)"), result.stderr[-3000:]
    assert len(result.stderr.splitlines()) == 1


def test_a_contender_of_another_name_stops_the_run():
    result = subprocess.run([sys.executable, str(REPO / "benchmarks" / "finetune.py"),
                             "--peers=keras-hub"], cwd=REPO, capture_output=True, text=True,
                            timeout=300)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == ("finetune.py: unknown --peers keras-hub; choose from keras_hub, "
                             "hf_torch\n")
