"""Learns a BERT WordPiece vocab.txt from text files (one text per line).

    python tools/build_vocab.py --input_files='corpus/*.txt' --output=vocab.txt \
        --vocab_size=30522 [--nodo_lower_case]

Reserved tokens first, as in BERT: [PAD] [UNK] [CLS] [SEP] [MASK]. See
`keras_bert.text.vocab_learner.learn_vocabulary`. The flags are checked before anything is
read or learned (input files exist, the output's directory exists, --vocab_size holds the
reserved tokens); a bad one is a one-line flag error. On success the tool prints one line.
"""

import os
import pathlib
import sys

from absl import app
from absl import flags

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

import keras_bert  # noqa: E402  (loads TensorFlow without its C++ start-up lines)
import tensorflow as tf  # noqa: E402
from keras_bert import storage  # noqa: E402
from keras_bert import vocab as vocab_lib  # noqa: E402

RESERVED = vocab_lib.SPECIAL_TOKENS

flags.DEFINE_list("input_files", None, "text files or globs, comma-separated", required=True)
flags.DEFINE_string("output", None, "where to write vocab.txt (its directory must exist)",
                    required=True)
flags.DEFINE_integer("vocab_size", 30522, f"largest vocabulary size (at least {len(RESERVED)})")
flags.DEFINE_bool("do_lower_case", True, "uncased (lower case, strip accents) or cased")
flags.DEFINE_integer("lower_thresh", 10, "lower bound of the learner's word-count threshold search")
flags.DEFINE_integer("upper_thresh", 10_000_000, "upper bound of that search")
flags.DEFINE_integer("max_unique_chars", 1000, "largest alphabet")
flags.DEFINE_integer("max_lines", 0, "read only this many lines in all (0: all)")
FLAGS = flags.FLAGS


@flags.validator("vocab_size", message=f"must be at least {len(RESERVED)}, the reserved tokens "
                 f"{' '.join(RESERVED)}")
def _holds_reserved_tokens(value):
    return value >= len(RESERVED)


@flags.validator("output")
def _output_directory_exists(path):
    if path is None:  # `required` reports it
        return True
    directory = os.path.dirname(path) or "."
    if not storage.isdir(directory):
        raise flags.ValidationError(f"the directory {directory} does not exist; create it first")
    return True


@flags.validator("input_files")
def _input_files_match(patterns):
    for pattern in patterns or ():
        if not storage.glob(pattern):
            raise flags.ValidationError(f"no file matches {pattern}")
    return True


def main(argv):
    del argv
    from keras_bert.text.vocab_learner import learn_vocabulary

    files = sorted({f for pattern in FLAGS.input_files for f in storage.glob(pattern)})
    lines = tf.data.TextLineDataset(files)
    if FLAGS.max_lines:
        lines = lines.take(FLAGS.max_lines)
    with keras_bert.backend.quiet_native_stderr():  # TF's one-off oneDNN notices
        vocab = learn_vocabulary(
            lines,
            FLAGS.vocab_size,
            do_lower_case=FLAGS.do_lower_case,
            lower_thresh=FLAGS.lower_thresh,
            upper_thresh=FLAGS.upper_thresh,
            max_unique_chars=FLAGS.max_unique_chars,
        )
    vocab_lib.write_vocabulary(vocab, FLAGS.output)  # atomically, local or gs://
    print(f"wrote {len(vocab)} tokens from {len(files)} file(s) to {FLAGS.output}")


if __name__ == "__main__":
    app.run(main)
