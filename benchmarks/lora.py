"""LoRA beside full fine-tuning on the demo's task: accuracy, trainable parameters, seconds
per epoch and peak memory.

Runs `examples/demo.py` (BertClassifier on the movie-review snippets, the demo's setup:
``minilm_l6``, sequence length 64, batch 16, 3 epochs, seed 0, each run's default learning
rate: 5e-5 for full fine-tuning, 5e-4 for LoRA) twice, each in a process of its own so that
its peak memory is its own: full fine-tuning (``--lora_rank=0``) and LoRA (``--lora_rank``,
8 by default, on the attention's query and value projections). Per run: test and dev
accuracy (1,057 snippets each), trainable and total parameters, seconds per epoch (the mean
of the epochs' wall times; the first includes tracing the training step) and the peak
resident memory of the process (its ``ru_maxrss``, from ``os.wait4``: data, model,
optimizer state, activations, TensorFlow). Prints a table; the last line is one JSON object
with every figure.

    python benchmarks/lora.py                       # the table of docs/fine-tuning.md
    python benchmarks/lora.py --max_train_examples=512 --max_eval_examples=256 --epochs=1
"""

# The repository root in place of this folder on the import path (benchmarks/tokenize.py
# would shadow the standard library's tokenize): see benchmarks/common/harness.py.
import os as _os, sys as _sys  # noqa: E401
_here = _os.path.dirname(_os.path.abspath(__file__))
_sys.path[:] = [_os.path.dirname(_here)] + [
    p for p in _sys.path if _os.path.abspath(p or _os.curdir) != _here]
from benchmarks.common import harness  # noqa: E402

harness.start()  # before TensorFlow: keep the table clean

import json  # noqa: E402
import os  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402

from absl import flags  # noqa: E402

FLAGS = flags.FLAGS
harness.define_flags(batch_size=16, seq_length=64)
flags.DEFINE_string("preset", "minilm_l6", "Preset to fine-tune.")
flags.DEFINE_integer("epochs", 3, "Passes over the training data.", lower_bound=1)
flags.DEFINE_integer("lora_rank", 8, "Rank of the LoRA run.", lower_bound=1)
flags.DEFINE_integer("max_train_examples", 0, "Train on the first N examples only (0: all).",
                     lower_bound=0)
flags.DEFINE_integer("max_eval_examples", 0, "Score the first N dev and test examples only "
                     "(0: all).", lower_bound=0)
flags.DEFINE_integer("seed", 0, "Seed of the data split and the initialization.")

DEMO = harness.REPO / "examples" / "demo.py"


def _run(lora_rank):
    """Runs the demo with ``--lora_rank=lora_rank``; its metrics and peak RSS (MiB)."""
    with tempfile.TemporaryDirectory(prefix="keras_bert_lora_bench_") as tmp:
        command = [sys.executable, str(DEMO), f"--model_dir={tmp}/model",
                   f"--preset={FLAGS.preset}", f"--epochs={FLAGS.epochs}",
                   f"--batch_size={FLAGS.batch_size}", f"--seq_length={FLAGS.seq_length}",
                   f"--max_train_examples={FLAGS.max_train_examples}",
                   f"--max_eval_examples={FLAGS.max_eval_examples}", f"--seed={FLAGS.seed}",
                   f"--lora_rank={lora_rank}"]
        with open(os.path.join(tmp, "stdout"), "w+") as out, \
                open(os.path.join(tmp, "stderr"), "w+") as err:
            process = subprocess.Popen(command, cwd=harness.REPO, stdout=out, stderr=err)
            _, status, usage = os.wait4(process.pid, 0)  # this child's own rusage
            process.returncode = os.waitstatus_to_exitcode(status)
            if process.returncode:
                err.seek(0)
                out.seek(0)
                sys.exit(f"lora.py: {' '.join(command[1:])} failed ({process.returncode}):\n"
                         f"{(out.read() + err.read())[-3000:]}")
        with open(os.path.join(tmp, "model", "metrics.json")) as f:
            metrics = json.load(f)
    epochs = metrics["epoch_seconds"]
    return {"run": f"LoRA rank {lora_rank} (query, value)" if lora_rank else "full fine-tuning",
            "lora_rank": lora_rank, "learning_rate": metrics["learning_rate"],
            "test_accuracy": metrics["test_accuracy"], "dev_accuracy": metrics["dev_accuracy"],
            "trainable_parameters": metrics["trainable_parameters"],
            "parameters": metrics["parameters"], "epoch_seconds": epochs,
            "seconds_per_epoch": round(sum(epochs) / len(epochs), 1),
            "train_seconds": metrics["train_seconds"],
            "peak_rss_mib": round(usage.ru_maxrss / 1024)}  # Linux: KiB


def _print_table(rows):
    print(f"| {'run':26} | {'test acc.':>9} | {'dev acc.':>8} | {'trainable params':>16} | "
          f"{'s/epoch':>7} | {'peak RSS':>9} |")
    print(f"|{'-' * 28}|{'-' * 11}|{'-' * 10}|{'-' * 18}|{'-' * 9}|{'-' * 11}|")
    for row in rows:
        print(f"| {row['run']:26} | {row['test_accuracy']:9.1%} | {row['dev_accuracy']:8.1%} | "
              f"{row['trainable_parameters']:16,} | {row['seconds_per_epoch']:7.1f} | "
              f"{row['peak_rss_mib']:5,} MiB |")
    full, low = rows
    print(f"| {'ratio LoRA / full':26} | {'':9} | {'':8} | "
          f"{low['trainable_parameters'] / full['trainable_parameters']:16.4f} | "
          f"{low['seconds_per_epoch'] / full['seconds_per_epoch']:7.2f} | "
          f"{low['peak_rss_mib'] / full['peak_rss_mib']:9.2f} |")


def main(argv):
    del argv
    rows = [_run(0), _run(FLAGS.lora_rank)]
    print(f"{FLAGS.preset} on the movie reviews: {FLAGS.epochs} epoch(s), batch "
          f"{FLAGS.batch_size} x seq {FLAGS.seq_length}, seed {FLAGS.seed}, "
          f"{FLAGS.max_train_examples or 'all'} training and "
          f"{FLAGS.max_eval_examples or 'all'} dev/test examples, {os.cpu_count()} CPUs")
    _print_table(rows)
    harness.print_summary({"preset": FLAGS.preset, "epochs": FLAGS.epochs,
                           "batch_size": FLAGS.batch_size, "seq_length": FLAGS.seq_length,
                           "seed": FLAGS.seed, "max_train_examples": FLAGS.max_train_examples,
                           "max_eval_examples": FLAGS.max_eval_examples,
                           "cpus": os.cpu_count(), "results": rows})


if __name__ == "__main__":
    harness.run(main)
