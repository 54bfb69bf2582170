"""Shared material of the pre-training tests: real text, the real uncased vocabulary, records
made by google-research/bert's own create_pretraining_data.py, a tiny config, and a bounded
run of tools/pretrain.py."""

import json
import os
import pathlib
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]


def _top_conftest():
    """tests/conftest.py (other folders' conftest modules share its name)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("keras_bert_tests_conftest",
                                                  REPO / "tests" / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


google_bert_dir, minilm_dir = _top_conftest().google_bert_dir, _top_conftest().minilm_dir

SEQ, PREDICTIONS = 32, 5
TOOL_TIMEOUT = 420  # seconds; `timeout -k` also kills a worker that ignores SIGTERM

# Runs google-research/bert's create_pretraining_data.py unmodified (argv: the flags).
_ORIGINAL = """
import runpy, sys
sys.path.insert(0, sys.argv[1])
sys.argv = ["create_pretraining_data.py"] + sys.argv[2:]
runpy.run_module("bert.create_pretraining_data", run_name="__main__", alter_sys=True)
"""


def vocab_file():
    """The real uncased WordPiece vocabulary (30,522 entries, as Google's uncased one)."""
    return str(minilm_dir() / "vocab.txt")


def write_wiki_corpus(path, num_documents=6, skip=0):
    """Real Wikipedia articles (gensim's sample), one sentence per line, blank lines between."""
    from keras_bert.data.pretraining import corpus as pretraining_corpus

    documents = pretraining_corpus.wikipedia_documents()[skip:skip + num_documents]
    pretraining_corpus.write_corpus(str(path), [d[:40] for d in documents])
    return str(path)


def original_records(corpus, output, seq=SEQ, predictions=PREDICTIONS, seed=1):
    """TFRecords written by the original create_pretraining_data.py itself."""
    flags = [f"--input_file={corpus}", f"--output_file={output}", f"--vocab_file={vocab_file()}",
             "--do_lower_case=True", f"--max_seq_length={seq}",
             f"--max_predictions_per_seq={predictions}", "--masked_lm_prob=0.15",
             f"--random_seed={seed}", "--dupe_factor=1"]
    result = subprocess.run([sys.executable, "-c", _ORIGINAL, str(google_bert_dir()), *flags],
                            capture_output=True, text=True, timeout=300,
                            env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
    assert result.returncode == 0 and os.path.getsize(output) > 0, result.stderr[-2000:]
    return str(output)


def bert_config(path, dropout=0.1, layers=2, hidden=32):
    """A tiny Google bert_config.json with the real vocabulary's size."""
    values = {"vocab_size": 30522, "hidden_size": hidden, "num_hidden_layers": layers,
              "num_attention_heads": 2, "intermediate_size": 2 * hidden, "hidden_act": "gelu",
              "hidden_dropout_prob": dropout, "attention_probs_dropout_prob": dropout,
              "max_position_embeddings": 128, "type_vocab_size": 2,
              "initializer_range": 0.02}
    pathlib.Path(path).write_text(json.dumps(values))
    return str(path)


def tool_command(*flags):
    """tools/pretrain.py with ``flags``, bounded by `timeout -k` (hung TF workers ignore
    SIGTERM)."""
    return ["timeout", "-k", "10", str(TOOL_TIMEOUT), sys.executable,
            str(REPO / "tools" / "pretrain.py"), *flags]


def run_tool(*flags, env=None):
    return subprocess.run(tool_command(*flags), cwd=REPO, capture_output=True, text=True,
                          timeout=TOOL_TIMEOUT + 30, env=dict(os.environ, **(env or {})))


def run_tools_at_once(*runs):
    """tools/pretrain.py once per ``(flags, env)`` of ``runs`` (``env``: variables added to
    this process's, or None), all started at once, each in its own process and bounded as
    `run_tool`: their CompletedProcess objects, in order."""
    processes = [subprocess.Popen(tool_command(*flags), cwd=REPO, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True,
                                  env=dict(os.environ, **(env or {})))
                 for flags, env in runs]
    results = []
    for process in processes:
        out, err = process.communicate(timeout=TOOL_TIMEOUT + 30)
        results.append(subprocess.CompletedProcess(process.args, process.returncode, out, err))
    return results


def small_flags(config, model_dir, steps=6, **extra):
    """Flags of a short run at the tiny size."""
    flags = {"bert_config_file": config, "vocab_file": vocab_file(), "max_seq_length": SEQ,
             "max_predictions_per_seq": PREDICTIONS, "train_batch_size": 8,
             "num_train_steps": steps, "num_warmup_steps": 1, "learning_rate": 1e-3,
             "steps_per_loop": 3, "save_checkpoints_steps": 3, "model_dir": model_dir}
    flags.update(extra)
    return [f"--{k}={v}" for k, v in flags.items()]


def encoder_weights(model_dir):
    """The canonical weights of a finished run's model (what from_preset loads)."""
    from keras_bert.presets import load_preset

    preset = load_preset(str(model_dir))
    return preset.weights(preset.config)
