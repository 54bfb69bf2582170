"""Makes BERT pre-training TFRecords from text, as google-research/bert's script of this name.

    python tools/create_pretraining_data.py --input_file='corpus/*.txt' \
        --output_file=/data/pretrain.tfrecord --num_output_shards=8 \
        --vocab_file=vocab.txt [--nodo_lower_case] [--do_whole_word_mask] \
        --max_seq_length=128 --max_predictions_per_seq=20 --dupe_factor=10

Input: one sentence per line, a blank line between documents; --input_file takes globs or a
comma-separated list, read through tf.io.gfile (gs:// works). Output: --output_file is a
comma-separated list of files (records go round-robin over them, as in the original), or one
name that --num_output_shards=N numbers as <name>-00000-of-0000N ...; every file appears only
when all are complete. The records have the original's features (input_ids, input_mask,
segment_ids, masked_lm_positions, masked_lm_ids, masked_lm_weights, next_sentence_labels),
so the original's run_pretraining.py and ours read them alike. --preset takes the vocabulary
(and casing) of a preset instead of --vocab_file. The input is read in chunks of
--chunk_lines lines (memory stays flat); --num_workers processes make their records. A bad
flag or input is one line on stderr and exit status 1, Ctrl-C exit status 130, with nothing
written.
"""

import os
import pathlib
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # before TensorFlow is imported
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))  # the keras_bert here

from absl import app, flags  # noqa: E402

from keras_bert import options as options_lib  # noqa: E402  (loads TensorFlow quietly)
from keras_bert.data.pretraining.chunks import PretrainingDataOptions  # noqa: E402

flags.DEFINE_string("input_file", None, "Input text files: globs or a comma-separated list.",
                    required=True)
flags.DEFINE_string("output_file", None, "Output TFRecord files (comma-separated), or one name "
                    "for --num_output_shards numbered files.", required=True)
flags.DEFINE_string("vocab_file", None, "The vocabulary file of the BERT model.")
flags.DEFINE_string("preset", None, "Take the vocabulary and casing of this preset (name or "
                    "directory) instead of --vocab_file.")
flags.DEFINE_bool("do_lower_case", True, "Lower-case the input (uncased models); with --preset "
                  "the preset's casing unless given.")
# --max_seq_length, --max_predictions_per_seq, --masked_lm_prob, --short_seq_prob,
# --dupe_factor, --do_whole_word_mask, --random_seed: PretrainingDataOptions' fields.
options_lib.define_flags(PretrainingDataOptions)
flags.DEFINE_integer("num_output_shards", 1, "Number the --output_file name into this many "
                     "files.")
flags.DEFINE_integer("num_workers", max(1, min((os.cpu_count() or 1) - 1, 8)),
                     "Processes making records (1: the main process alone; more: forked "
                     "workers beside it, which reads, tokenizes and writes). Default: the CPUs "
                     "less one, at most 8.")
flags.DEFINE_integer("chunk_lines", 10_000, "Input lines per chunk: the pool of random next "
                     "documents, the shuffle window and what bounds memory.")
flags.DEFINE_bool("progress", True, "Print progress lines (after the first chunk, then at "
                  "most one per --progress_seconds).")
flags.DEFINE_float("progress_seconds", 10.0, "Seconds between progress lines.")
FLAGS = flags.FLAGS


@flags.multi_flags_validator(["vocab_file", "preset"],
                             message="Give --vocab_file or --preset, exactly one.")
def _one_vocabulary(values):
    return bool(values["vocab_file"]) != bool(values["preset"])


def _vocabulary(keras_bert):
    if FLAGS.vocab_file:
        return FLAGS.vocab_file, FLAGS.do_lower_case
    from keras_bert.presets.preset_loader import text_preset

    preset = text_preset(FLAGS.preset)
    lower = FLAGS.do_lower_case if FLAGS["do_lower_case"].present else preset.do_lower_case
    return preset.vocab_path, lower


_PRINTED = [None]  # when the last progress line was printed


def _progress(stats):
    import time

    now = time.monotonic()
    if _PRINTED[0] is not None and now - _PRINTED[0] < FLAGS.progress_seconds:
        return
    _PRINTED[0] = now
    print(f"chunk {stats.chunks}: {stats.lines:,} lines, {stats.documents:,} documents -> "
          f"{stats.instances:,} instances ({stats.instances_per_second:,.0f}/s)", flush=True)


def main(argv):
    del argv
    import keras_bert  # first: loads TensorFlow quietly
    from keras_bert.data.pretraining import create as pretraining_data

    try:
        vocabulary, do_lower_case = _vocabulary(keras_bert)
        options = options_lib.from_flags(PretrainingDataOptions, FLAGS)
        outputs = pretraining_data.output_paths(FLAGS.output_file, FLAGS.num_output_shards)
        with keras_bert.backend.quiet_native_stderr():
            stats = pretraining_data.create_pretraining_data(
                FLAGS.input_file, outputs, vocabulary, do_lower_case=do_lower_case,
                options=options, num_workers=FLAGS.num_workers,
                chunk_lines=FLAGS.chunk_lines,
                progress=_progress if FLAGS.progress else None)
    except (ValueError, keras_bert.checkpoints.CheckpointError) as error:
        sys.exit(f"create_pretraining_data.py: {error}")
    except KeyboardInterrupt:
        print("create_pretraining_data.py: interrupted; no output file was written",
              file=sys.stderr)
        sys.exit(130)
    workers = (f"{stats.worker_processes} worker processes" if stats.worker_processes
               else "1 process")
    print(f"Wrote {stats.instances:,} instances from {stats.documents:,} documents "
          f"({stats.lines:,} lines, {len(stats.input_files)} input files) to "
          f"{len(stats.output_files)} file(s) in {stats.seconds:.1f} s "
          f"({stats.instances_per_second:,.0f} instances/s, {workers}): "
          + ", ".join(stats.output_files[:3]) + (" ..." if len(stats.output_files) > 3 else ""))


if __name__ == "__main__":
    app.run(main)
