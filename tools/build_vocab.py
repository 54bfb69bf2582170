"""Learns a BERT WordPiece vocab.txt from text files (one text per line).

    python tools/build_vocab.py --input_files='corpus/*.txt' --output=vocab.txt \
        --vocab_size=30522 [--nodo_lower_case]

Reserved tokens first, as in BERT: [PAD] [UNK] [CLS] [SEP] [MASK]. See
`keras_bert.text.vocab_learner.learn_vocabulary`.
"""

import os
import pathlib
import sys

from absl import app
from absl import flags

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

flags.DEFINE_list("input_files", None, "text files or globs, comma-separated", required=True)
flags.DEFINE_string("output", None, "where to write vocab.txt", required=True)
flags.DEFINE_integer("vocab_size", 30522, "largest vocabulary size")
flags.DEFINE_bool("do_lower_case", True, "uncased (lower case, strip accents) or cased")
flags.DEFINE_integer("lower_thresh", 10, "lower bound of the learner's word-count threshold search")
flags.DEFINE_integer("upper_thresh", 10_000_000, "upper bound of that search")
flags.DEFINE_integer("max_unique_chars", 1000, "largest alphabet")
flags.DEFINE_integer("max_lines", 0, "read only this many lines in all (0: all)")
FLAGS = flags.FLAGS


def main(argv):
    del argv
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    from keras_bert.text.vocab_learner import learn_vocabulary

    files = sorted({f for pattern in FLAGS.input_files for f in tf.io.gfile.glob(pattern)})
    if not files:
        raise app.UsageError(f"no files match --input_files={','.join(FLAGS.input_files)}")
    lines = tf.data.TextLineDataset(files)
    if FLAGS.max_lines:
        lines = lines.take(FLAGS.max_lines)
    vocab = learn_vocabulary(
        lines,
        FLAGS.vocab_size,
        do_lower_case=FLAGS.do_lower_case,
        lower_thresh=FLAGS.lower_thresh,
        upper_thresh=FLAGS.upper_thresh,
        max_unique_chars=FLAGS.max_unique_chars,
    )
    with tf.io.gfile.GFile(FLAGS.output, "w") as f:
        f.write("".join(token + "\n" for token in vocab))
    print(f"wrote {len(vocab)} tokens from {len(files)} file(s) to {FLAGS.output}")


if __name__ == "__main__":
    app.run(main)
