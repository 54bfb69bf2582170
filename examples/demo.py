"""keras_bert demo (what `make demo` runs): fine-tune a real BERT on real movie reviews.

Fetches the 10,605 rated movie-review snippets of Hutto & Gilbert (ICWSM 2014) from the
vaderSentiment 3.3.2 sdist on PyPI (`keras_bert.data.movie_reviews`: label = sign of the mean
human rating, 80/10/10 split with a fixed seed), fine-tunes
`BertClassifier.from_preset("minilm_l6", num_classes=2)` on raw strings with the original
BERT recipe (AdamW, 10% warm-up, linear decay, clipping at 1.0), prints dev and test accuracy
and predictions on new sentences, and writes `model.keras` (which takes raw strings after
`import keras_bert`) and `metrics.json` into --model_dir.

    python examples/demo.py
    python examples/demo.py --model_dir=/tmp/sentiment --epochs=2
    python examples/demo.py --lora_rank=8     # LoRA: factors and head train, the rest frozen
"""

import os
import pathlib
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # before TensorFlow is imported
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))  # the keras_bert here

from absl import app, flags, logging  # noqa: E402

NEW_SENTENCES = [
    "A moving, beautifully acted film that stays with you.",
    "Two hours of my life I will never get back.",
    "The plot is thin, but the actors make it worth watching.",
    "Not funny, not scary, not anything.",
]

PRESET = flags.DEFINE_string("preset", "minilm_l6", "Preset to fine-tune (name or directory).")
MODEL_DIR = flags.DEFINE_string("model_dir", "demo_model",
                                "Where model.keras, metrics.json, checkpoints and logs go.")
EPOCHS = flags.DEFINE_integer("epochs", 3, "Passes over the training data.")
BATCH_SIZE = flags.DEFINE_integer("batch_size", 16, "Examples per step (BERT's grid: 16 or 32).")
SEQ_LENGTH = flags.DEFINE_integer("seq_length", 64, "Longest packed sequence (tokens).")
LEARNING_RATE = flags.DEFINE_float(
    "learning_rate", None, "Peak learning rate (default 5e-5, from BERT's grid: 5e-5, 3e-5, "
    "2e-5; with --lora_rank 5e-4).")
LORA_RANK = flags.DEFINE_integer(
    "lora_rank", 0, "LoRA: train rank-N factors of the attention's query and value "
    "projections and the head, the rest frozen (0: full fine-tuning).", lower_bound=0)
WARMUP_RATIO = flags.DEFINE_float("warmup_ratio", 0.1, "Share of the steps spent warming up.")
MAX_TRAIN_EXAMPLES = flags.DEFINE_integer(
    "max_train_examples", 0, "Train on the first N training examples only (0: all).", lower_bound=0)
MAX_EVAL_EXAMPLES = flags.DEFINE_integer(
    "max_eval_examples", 0, "Score the first N dev and test examples only (0: all).",
    lower_bound=0)
SEED = flags.DEFINE_integer("seed", 0, "Seed of the data split and of the initialization.")


def main(argv):
    del argv
    logging.set_verbosity(logging.ERROR)
    start = time.perf_counter()
    import keras_bert  # first: loads TensorFlow quietly (see keras_bert/backend.py)

    import keras
    from keras_bert import storage
    from keras_bert.data import movie_reviews
    from keras_bert.training import finetune_run

    try:
        splits = movie_reviews.load(seed=SEED.value)
        keras.utils.set_random_seed(SEED.value)
        model = keras_bert.BertClassifier.from_preset(PRESET.value, num_classes=2,
                                                      seq_length=SEQ_LENGTH.value)
        if LORA_RANK.value:
            model.enable_lora(LORA_RANK.value)
    except (keras_bert.checkpoints.CheckpointError, movie_reviews.DatasetError) as error:
        sys.exit(f"demo.py: {error}")
    texts, labels = splits["train"]
    if MAX_TRAIN_EXAMPLES.value:
        texts, labels = texts[: MAX_TRAIN_EXAMPLES.value], labels[: MAX_TRAIN_EXAMPLES.value]
    if MAX_EVAL_EXAMPLES.value:
        splits = {name: (x[: MAX_EVAL_EXAMPLES.value], y[: MAX_EVAL_EXAMPLES.value])
                  if name != "train" else (x, y) for name, (x, y) in splits.items()}
    config = model.encoder.bert_config
    print(f"keras_bert {keras_bert.__version__}: fine-tuning {PRESET.value!r} "
          f"(L{config.num_hidden_layers}/H{config.hidden_size}, "
          f"{config.num_parameters() / 1e6:.1f}M parameters) on {len(texts):,} movie-review "
          f"snippets; dev {len(splits['dev'][0]):,}, test {len(splits['test'][0]):,}", flush=True)
    counts = finetune_run.trainable_summary(model)
    if LORA_RANK.value:
        print(f"LoRA rank {LORA_RANK.value}: {counts['trainable_parameters']:,} of "
              f"{counts['parameters']:,} parameters trainable", flush=True)

    with keras_bert.backend.quiet_native_stderr():  # TF's one-off oneDNN notices
        history = finetune_run.fine_tune(
            model, texts, labels, batch_size=BATCH_SIZE.value, epochs=EPOCHS.value,
            learning_rate=LEARNING_RATE.value, warmup_ratio=WARMUP_RATIO.value,
            model_dir=MODEL_DIR.value, verbose=1 if sys.stdout.isatty() else 2)
        dev = finetune_run.scores(model, *splits["dev"])
        test = finetune_run.scores(model, *splits["test"])
        probabilities = keras.ops.softmax(model.predict(NEW_SENTENCES, verbose=0)).numpy()

    print(f"\ndev accuracy {dev['accuracy']:.1%}, test accuracy {test['accuracy']:.1%} "
          f"(training {history.train_seconds / 60:.1f} min)")
    print("\nNew sentences, P(positive):")
    for sentence, p in zip(NEW_SENTENCES, probabilities[:, 1]):
        print(f"  {p:5.2f}  {'positive' if p > 0.5 else 'negative':8}  {sentence}")

    # local, or gs://; without the optimizer's state (finetune_run.save_model), the model's size
    model_path = finetune_run.save_model(model, MODEL_DIR.value)
    written = [model_path]
    if LORA_RANK.value:  # what trained, alone: load_lora_weights puts it on a fresh model
        written.append(model.save_lora_weights(os.path.join(MODEL_DIR.value, "model.lora.h5")))
    metrics = {
        "preset": PRESET.value,
        "train_examples": len(texts),
        "epochs": EPOCHS.value,
        "batch_size": BATCH_SIZE.value,
        "seq_length": SEQ_LENGTH.value,
        "learning_rate": history.learning_rate,
        **counts,
        "dev_accuracy": dev["accuracy"],
        "dev_f1": dev["f1"],
        "test_accuracy": test["accuracy"],
        "test_f1": test["f1"],
        "train_seconds": round(history.train_seconds, 1),
        "epoch_seconds": [round(t, 1) for t in history.epoch_seconds],
        "total_seconds": round(time.perf_counter() - start, 1),
    }
    metrics_path = storage.write_json(
        os.path.join(MODEL_DIR.value, finetune_run.METRICS_FILE), metrics)
    print(f"\nWrote {', '.join(written)} and {metrics_path} "
          f"({metrics['total_seconds'] / 60:.1f} min in all)")


if __name__ == "__main__":
    app.run(main)
