"""Question answering, SQuAD style: fine-tune a `BertSpanLabeler` on a small hand-made set.

examples/data/tiny_squad_train.json holds 16 hand-written questions (with answer offsets)
over four paragraphs (the Eiffel Tower, the Amazon, Marie Curie, Python);
tiny_squad_dev.json 8 other questions over the same paragraphs. The example fine-tunes
`BertSpanLabeler.from_preset("minilm_l6")` on the first with run_squad.py's windowing and
recipe (`keras_bert.training.squad_run`), then answers the held-out questions and scores them
with the official SQuAD 1.1 EM/F1, and the training questions too. Sixteen questions teach
the model where answers lie in these paragraphs (measured: EM 68.8 / F1 77.0 on
the training questions, 0 on the held-out ones), not
question answering in general: held-out questions need SQuAD-sized data (87,599 questions in
SQuAD 1.1's train-v1.1.json) or a preset already fine-tuned on it. Any SQuAD JSON works the same way (--train_file,
--eval_file), and tools/finetune.py --task=squad is the full command line.

    python examples/question_answering.py
"""

import os
import pathlib
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # before TensorFlow is imported
HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # the keras_bert here

from absl import app, flags, logging  # noqa: E402

PRESET = flags.DEFINE_string("preset", "minilm_l6", "Preset to fine-tune (name or directory).")
TRAIN_FILE = flags.DEFINE_string("train_file", str(HERE / "data" / "tiny_squad_train.json"),
                                 "SQuAD JSON to train on.")
EVAL_FILE = flags.DEFINE_string("eval_file", str(HERE / "data" / "tiny_squad_dev.json"),
                                "SQuAD JSON to answer and score.")
EPOCHS = flags.DEFINE_integer("epochs", 30, "Passes over the training questions.",
                              lower_bound=1)
LEARNING_RATE = flags.DEFINE_float("learning_rate", 1e-4, "Peak learning rate.")
BATCH_SIZE = flags.DEFINE_integer("batch_size", 8, "Windows per step.", lower_bound=1)
SEQ_LENGTH = flags.DEFINE_integer("seq_length", 128, "Window length (tokens).", lower_bound=8)
MODEL_DIR = flags.DEFINE_string("model_dir", None, "Where predictions, metrics and the model "
                                "go (default: not written).")


def main(argv):
    del argv
    logging.set_verbosity(logging.ERROR)
    import keras_bert  # first: loads TensorFlow quietly (see keras_bert/backend.py)

    import keras
    from keras_bert.data import evaluate_v1
    from keras_bert.training import squad_run

    keras.utils.set_random_seed(0)
    try:
        model = keras_bert.BertSpanLabeler.from_preset(PRESET.value,
                                                       seq_length=SEQ_LENGTH.value)
        with keras_bert.backend.quiet_native_stderr():
            metrics = squad_run.run(model, TRAIN_FILE.value, EVAL_FILE.value,
                                max_seq_length=SEQ_LENGTH.value, doc_stride=64,
                                max_query_length=32, batch_size=BATCH_SIZE.value,
                                epochs=EPOCHS.value, learning_rate=LEARNING_RATE.value,
                                model_dir=MODEL_DIR.value, verbose=0)
            window = dict(max_seq_length=SEQ_LENGTH.value, doc_stride=64, max_query_length=32)
            examples, features = squad_run.features_of(model, EVAL_FILE.value, False, **window)
            answers = squad_run.predict(model, examples, features).predictions
            seen = squad_run.predict(model, *squad_run.features_of(model, TRAIN_FILE.value, False,
                                                           **window))
            seen = evaluate_v1(TRAIN_FILE.value, seen)
    except (ValueError, TypeError, OSError, keras_bert.checkpoints.CheckpointError) as error:
        sys.exit(f"question_answering.py: {error}")
    print(f"fine-tuned {PRESET.value!r} on {metrics['train_examples']} questions "
          f"({metrics['train_seconds']:.0f} s); held-out questions: "
          f"exact match {metrics['exact_match']:.1f}, F1 {metrics['f1']:.1f}; the training "
          f"questions: exact match {seen['exact_match']:.1f}, F1 {seen['f1']:.1f}")
    for example in examples:
        print(f"  {example.question_text}  ->  {answers[example.qas_id]!r}")


if __name__ == "__main__":
    app.run(main)
