"""End-to-end CPU sentence embeddings: strings in, vectors out, keras_bert beside what an
embedding user picks instead.

One embedding model (by default all-MiniLM-L6-v2, ``minilm_l6``: mean pooling, normalized)
served every way, on the movie-review test texts, tokenization included in every figure:

* keras_bert: the `BertTextEmbedder`'s serving SavedModel (``model.export``,
  ``serving_default`` on strings) in float32 and after ``model.quantize("int8")``; its LiteRT
  model with the tokenizer inside (``format="litert"``) in float32 and int8 (dynamic range);
* sentence-transformers (torch) on the same weights (the model's
  ``save_to_preset(format="sentence_transformers")`` folder);
* ONNX Runtime: the same BERT with mean pooling and normalization exported by
  ``torch.onnx.export`` (as fastembed's models are), float32 and int8
  (``onnxruntime.quantization.quantize_dynamic``), with the ``tokenizers`` fast tokenizer
  (what fastembed runs).

Every contender pads each batch to its longest text (at most ``--seq_length`` tokens).
Batch 32: embeddings/s over the texts, the best of ``--rounds`` interleaved rounds. Batch 1:
the median latency of single texts, interleaved in blocks (benchmarks/common/cpu_timing.py).
Then the smallest cosine of each quantized path to its own float32 model and of every path to
keras_bert's float32 SavedModel.

    python benchmarks/embed_cpu.py
    python benchmarks/embed_cpu.py --contenders=litert_int8,ort_int8 --seq_length=256

The CPU's model name and its int8-relevant flags are printed first; the last line is one
JSON object of every figure. Measured figures: docs/benchmarks.md.
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

from absl import flags  # noqa: E402

from benchmarks.common import cpu_timing, embed_contenders as contenders_lib  # noqa: E402

FLAGS = flags.FLAGS
cpu_timing.define_flags(contenders_lib)
flags.DEFINE_string("model", "minilm_l6", "A sentence-embedding preset or directory (mean "
                    "pooling, normalized), or 'tiny' for a random 2-layer model.")


def main(argv):
    del argv
    cpu_timing.start("embed_cpu.py", contenders_lib)
    from keras_bert.data import movie_reviews

    threads = FLAGS.threads or os.cpu_count() or 1
    cpu, have = cpu_timing.print_cpu(threads)
    texts = [str(t) for t in movie_reviews.load()["test"][0]]
    texts = texts[:FLAGS.max_texts] if FLAGS.max_texts else texts
    print(f"texts: {len(texts)} movie-review test snippets; model {FLAGS.model}; batch "
          f"{FLAGS.batch_size}; at most {FLAGS.seq_length} tokens, each batch padded to its "
          "longest", flush=True)

    with cpu_timing.scratch_dir("embed_cpu.py") as workdir:
        setup = contenders_lib.EmbedSetup(FLAGS.model, FLAGS.seq_length, threads, workdir)
        runners, rates, latency, vectors, setup_seconds = cpu_timing.measure(
            contenders_lib, setup, texts)
        rows = contenders_lib.summarize(runners, rates, latency, vectors)
    contenders_lib.print_table(rows)
    summary = contenders_lib.targets(rows)
    for line in contenders_lib.describe_targets(summary):
        print(line)
    harness.print_summary({
        "cpu": cpu, "cpu_flags": have, "threads": threads, "texts": len(texts),
        "batch_size": FLAGS.batch_size, "seq_length": FLAGS.seq_length, "model": FLAGS.model,
        "rows": rows, "targets": summary,
        "setup_seconds": {k: round(v, 1) for k, v in setup_seconds.items()}})


if __name__ == "__main__":
    harness.run(main)
