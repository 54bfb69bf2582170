"""Sentence-pair classification: fine-tune a `BertClassifier` on (text_a, text_b) pairs.

By default the pairs come from the real movie-review snippets (`keras_bert.data.movie_reviews`):
"do these two reviews have the same sentiment?", half yes, half no, drawn with a fixed seed
from the train and test splits. With --train_file/--test_file, any TSV/CSV/JSONL with a
header and text_a, text_b and label columns (MRPC-style paraphrase data, NLI, ...).

    python examples/sentence_pair.py
    python examples/sentence_pair.py --train_file=train.tsv --test_file=test.tsv \
        --text_column=sentence1 --text_b_column=sentence2 --label_column=label
"""

import os
import pathlib
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # before TensorFlow is imported
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))  # the keras_bert here

from absl import app, flags, logging  # noqa: E402

PRESET = flags.DEFINE_string("preset", "minilm_l6", "Preset to fine-tune (name or directory).")
TRAIN_FILE = flags.DEFINE_string("train_file", None, "Pairs to train on (default: reviews).")
TEST_FILE = flags.DEFINE_string("test_file", None, "Pairs to score.")
TEXT_COLUMN = flags.DEFINE_string("text_column", "text_a", "Column of the first texts.")
TEXT_B_COLUMN = flags.DEFINE_string("text_b_column", "text_b", "Column of the second texts.")
LABEL_COLUMN = flags.DEFINE_string("label_column", "label", "Column of the labels.")
NUM_PAIRS = flags.DEFINE_integer("num_pairs", 2000, "Review pairs to train on.", lower_bound=2)
EPOCHS = flags.DEFINE_integer("epochs", 2, "Passes over the training pairs.", lower_bound=1)
BATCH_SIZE = flags.DEFINE_integer("batch_size", 16, "Pairs per step.", lower_bound=1)
SEQ_LENGTH = flags.DEFINE_integer("seq_length", 96, "Longest packed pair (tokens).",
                                  lower_bound=5)
LEARNING_RATE = flags.DEFINE_float("learning_rate", 5e-5, "Peak learning rate.")


def main(argv):
    del argv
    logging.set_verbosity(logging.ERROR)
    import keras_bert
    from keras_bert.data import files, movie_reviews
    from keras_bert.training import finetune_run

    try:
        if TRAIN_FILE.value:
            train = files.read_examples(TRAIN_FILE.value, TEXT_COLUMN.value,
                                        TEXT_B_COLUMN.value, LABEL_COLUMN.value)
            test = files.read_examples(TEST_FILE.value or TRAIN_FILE.value, TEXT_COLUMN.value,
                                       TEXT_B_COLUMN.value, LABEL_COLUMN.value,
                                       label_names=train.label_names)
            x, y = (train.texts, train.texts_b), train.labels
            test_x, test_y = (test.texts, test.texts_b), test.labels
            num_classes = len(train.label_names or []) or int(max(y)) + 1
        else:
            splits = movie_reviews.load()
            x, y = movie_reviews.sentiment_pairs(*splits["train"], NUM_PAIRS.value, seed=0)
            test_x, test_y = movie_reviews.sentiment_pairs(*splits["test"], 500, seed=1)
            num_classes = 2
        model = keras_bert.BertClassifier.from_preset(PRESET.value, num_classes=num_classes,
                                                      seq_length=SEQ_LENGTH.value)
    except (ValueError, keras_bert.checkpoints.CheckpointError,
            movie_reviews.DatasetError) as error:
        sys.exit(f"sentence_pair.py: {error}")
    print(f"fine-tuning {PRESET.value!r} on {len(y):,} sentence pairs "
          f"({num_classes} classes); scoring {len(test_y):,}", flush=True)
    with keras_bert.backend.quiet_native_stderr():
        finetune_run.fine_tune(model, x, y, batch_size=BATCH_SIZE.value, epochs=EPOCHS.value,
                           learning_rate=LEARNING_RATE.value,
                           verbose=1 if sys.stdout.isatty() else 2)
        scores = finetune_run.scores(model, test_x, test_y)
    print(f"test accuracy {scores['accuracy']:.1%}")
    a, b = test_x
    predicted = model.predict((a[:3], b[:3]), verbose=0).argmax(-1)
    for first, second, label in zip(a[:3], b[:3], predicted):
        print(f"  {int(label)}  {first[:60]!r} / {second[:60]!r}")


if __name__ == "__main__":
    app.run(main)
