"""End-to-end CPU serving: strings in, probabilities out, keras_bert beside what a CPU user
picks instead.

One fine-tuned classifier (by default the ``make demo`` model, all-MiniLM-L6-v2 with a
2-class head) served every way, on the movie-review test texts, tokenization included in
every figure:

* keras_bert: its serving SavedModel (``model.export``, ``serving_default`` on strings) in
  float32 and after ``model.quantize("int8")``, each run two ways: by the TF2 loader
  (``tf.saved_model.load``: ``keras_bert_fp32``, ``keras_bert_int8``) and as
  ``tensorflow_model_server`` runs it, the TF1 loader into a Session whose thread pools
  take TF Serving's ``--tensorflow_intra_op_parallelism`` and
  ``--tensorflow_inter_op_parallelism`` (``*_session``); for reference, the float32 graph
  traced from the layers' ordinary calls with its weights as variables, without the lean
  serving graph (``keras_bert_fp32_plain``); its LiteRT model with the tokenizer inside
  (``model.export(format="litert")``) in float32 and int8 (dynamic range), run in
  ai-edge-litert's interpreter with tensorflow-text's kernels;
* Hugging Face: ``BertForSequenceClassification`` with the same weights, torch eager and
  ``torch.compile``, with the fast (Rust) tokenizer;
* ONNX Runtime: the same model exported with ``torch.onnx.export``, float32 and int8
  (``onnxruntime.quantization.quantize_dynamic``), with the ``tokenizers`` fast tokenizer.

Every contender pads each batch to its longest text (at most ``--seq_length`` tokens).
Batch 32: texts/s over the whole test split, the best of ``--rounds`` interleaved rounds
(each round runs every contender, the order reversed every round). Batch 1: the median
latency of single texts, the same texts for everyone, interleaved in blocks of 25 texts
(``--latency_block``), each block after an untimed call of the same runtime. Then the
test accuracy of each contender's predictions, and the argmax agreement of each quantized
model with its own float32 model.

    python benchmarks/serve_cpu.py                         # after `make demo`
    python benchmarks/serve_cpu.py --model=path/to/model.keras --contenders=keras_bert_fp32,ort_int8

The CPU's model name and the flags that decide the int8 and bfloat16 paths (AVX-512 VNNI,
AVX-512 BF16, AMX) are printed first: figures from different CPUs do not compare. The last
line is one JSON object of every figure. Measured figures: docs/benchmarks.md.
"""

# The repository root in place of this folder on the import path: see
# benchmarks/common/harness.py.
import os as _os, sys as _sys  # noqa: E401
_here = _os.path.dirname(_os.path.abspath(__file__))
_sys.path[:] = [_os.path.dirname(_here)] + [
    p for p in _sys.path if _os.path.abspath(p or _os.curdir) != _here]
from benchmarks.common import harness  # noqa: E402

harness.start()  # before TensorFlow: keep its C++ logging out of the table

import os  # noqa: E402
import sys  # noqa: E402

from absl import flags  # noqa: E402

from benchmarks.common import contenders as contenders_lib, cpu_timing  # noqa: E402

FLAGS = flags.FLAGS
cpu_timing.define_flags(contenders_lib)
flags.DEFINE_string("model", str(harness.REPO / "demo_model" / "model.keras"),
                    "A fine-tuned BertClassifier (.keras); or 'minilm_l6' for it with an "
                    "untrained 2-class head, 'tiny' for a random 2-layer model (accuracy is "
                    "then meaningless; agreement still counts).")
flags.DEFINE_enum("data", "movie_reviews", ["movie_reviews", "wikipedia"],
                  "The texts: the movie-review test split (labelled), or the tests' Wikipedia "
                  "lines (no labels: no accuracy).")
flags.DEFINE_integer("tensorflow_intra_op_parallelism", 0,
                     "The *_session contenders' intra-op threads (threads one op may use), as "
                     "tensorflow_model_server's flag of this name (0: TensorFlow picks).")
flags.DEFINE_integer("tensorflow_inter_op_parallelism", 0,
                     "The *_session contenders' inter-op threads (ops run at once), as "
                     "tensorflow_model_server's flag of this name (0: TensorFlow picks).")


def load_texts():
    """The texts and their labels (None for unlabelled data)."""
    if FLAGS.data == "wikipedia":
        from tests.text.corpus import wikipedia_lines

        texts = [line[:400] for line in wikipedia_lines() if len(line) > 20][:1000]
        labels = None
    else:
        from keras_bert.data import movie_reviews

        texts, labels = movie_reviews.load()["test"]
        texts, labels = list(texts), [int(y) for y in labels]
    if FLAGS.max_texts:
        texts = texts[:FLAGS.max_texts]
        labels = labels and labels[:FLAGS.max_texts]
    return texts, labels


def main(argv):
    del argv
    cpu_timing.start("serve_cpu.py", contenders_lib)
    if FLAGS.model not in contenders_lib.BUILT_MODELS and not os.path.exists(FLAGS.model):
        sys.exit(f"serve_cpu.py: --model={FLAGS.model} does not exist: run `make demo` first "
                 "(it writes demo_model/model.keras), pass another fine-tuned BertClassifier, "
                 "or --model=minilm_l6 for it with an untrained head.")
    threads = FLAGS.threads or os.cpu_count() or 1
    cpu, have = cpu_timing.print_cpu(threads)
    print("TensorFlow sessions (*_session): intra-op "
          f"{FLAGS.tensorflow_intra_op_parallelism or 'auto'}, inter-op "
          f"{FLAGS.tensorflow_inter_op_parallelism or 'auto'}")
    texts, labels = load_texts()
    what = "movie-review test snippets" if FLAGS.data == "movie_reviews" else "Wikipedia lines"
    print(f"texts: {len(texts)} {what}; batch {FLAGS.batch_size}; "
          f"at most {FLAGS.seq_length} tokens, each batch padded to its longest", flush=True)

    with cpu_timing.scratch_dir("serve_cpu.py") as workdir:
        setup = contenders_lib.Setup(FLAGS.model, FLAGS.seq_length, threads, workdir,
                                     session_threads=(FLAGS.tensorflow_intra_op_parallelism,
                                                      FLAGS.tensorflow_inter_op_parallelism))
        runners, rates, latency, predictions, setup_seconds = cpu_timing.measure(
            contenders_lib, setup, texts)
        rows = contenders_lib.summarize(runners, rates, latency, predictions, labels)
    contenders_lib.print_table(rows)
    summary = contenders_lib.targets(rows)
    for line in contenders_lib.describe_targets(summary):
        print(line)
    harness.print_summary({
        "cpu": cpu, "cpu_flags": have, "threads": threads, "texts": len(texts),
        "batch_size": FLAGS.batch_size, "seq_length": FLAGS.seq_length,
        "model": FLAGS.model, "data": FLAGS.data, "rows": rows,
        "session_threads": {"intra_op": FLAGS.tensorflow_intra_op_parallelism,
                            "inter_op": FLAGS.tensorflow_inter_op_parallelism},
        "targets": summary,
        "setup_seconds": {k: round(v, 1) for k, v in setup_seconds.items()}})


if __name__ == "__main__":
    harness.run(main)
