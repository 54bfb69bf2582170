"""Pre-train BERT-Mini (L4/H256) from scratch on real English text, on this machine's CPU.

The corpus: the 100 Wikipedia articles of gensim's sample (`keras_bert.data.
pretraining_corpus`) and the 5,190 New York Times editorial snippets of the vaderSentiment
sdist, one sentence per line, blank lines between documents; 5% of the documents are held
out for evaluation. The model: `BertConfig` of the registry's ``mini`` entry with fresh
weights and the real uncased vocabulary of ``minilm_l6`` (the 30,522 entries of Google's
uncased vocabulary). Training: `keras_bert.training.pretraining_run.pretrain` with raw-text
input (tokenization, next-sentence pairs, packing and dynamic masking in the tf.data
pipeline), AdamW with warm-up and linear decay. It prints the held-out masked-LM accuracy
beside the most-frequent-token baseline on the same data, and draws the loss and accuracy
curves to a PNG.

    python examples/pretrain_mini.py                       # 1500 steps of 32 x 64, ~45 minutes
    python examples/pretrain_mini.py --model_dir=/tmp/mini --num_train_steps=100
"""

import json
import os
import pathlib
import random
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # before TensorFlow is imported
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))  # the keras_bert here

from absl import app, flags, logging  # noqa: E402

MODEL_DIR = flags.DEFINE_string("model_dir", "pretrain_mini_model", "Where the run goes.")
SIZE = flags.DEFINE_string("size", "mini", "Registry entry whose architecture is trained.")
STEPS = flags.DEFINE_integer("num_train_steps", 1500, "Training steps.", lower_bound=1)
BATCH = flags.DEFINE_integer("train_batch_size", 32, "Sequences per step.", lower_bound=1)
SEQ = flags.DEFINE_integer("max_seq_length", 64, "Tokens per sequence.", lower_bound=8)
PREDICTIONS = flags.DEFINE_integer("max_predictions_per_seq", 10, "Predictions per sequence.",
                                   lower_bound=1)
LEARNING_RATE = flags.DEFINE_float("learning_rate", 1e-3, "Peak learning rate.")
WARMUP = flags.DEFINE_float("warmup_ratio", 0.1, "Share of the steps spent warming up.")
LOOP = flags.DEFINE_integer("steps_per_loop", 50, "Steps between progress lines.", lower_bound=1)
EVAL_STEPS = flags.DEFINE_integer("max_eval_steps", 20, "Held-out batches evaluated.",
                                  lower_bound=1)
DOCUMENTS = flags.DEFINE_integer("max_documents", 0, "Use the first N documents of each "
                                 "source (0: all).", lower_bound=0)
PLOT = flags.DEFINE_string("plot", None, "Where the curve PNG goes (default: "
                           "<model_dir>/pretrain_mini.png).")


def _corpus(directory, pretraining_corpus):
    """Writes train.txt and eval.txt; returns their paths and counts."""
    wiki = pretraining_corpus.wikipedia_documents()
    editorials = pretraining_corpus.editorial_documents()
    if DOCUMENTS.value:
        wiki, editorials = wiki[:DOCUMENTS.value], editorials[:DOCUMENTS.value]
    documents = wiki + editorials
    random.Random(0).shuffle(documents)
    held_out = max(2, len(documents) // 20)
    paths = (os.path.join(directory, "train.txt"), os.path.join(directory, "eval.txt"))
    sentences = [pretraining_corpus.write_corpus(paths[0], documents[held_out:]),
                 pretraining_corpus.write_corpus(paths[1], documents[:held_out])]
    return paths, (len(documents) - held_out, held_out), sentences


def _plot(progress, metrics, path):
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    steps = [p["step"] for p in progress]
    figure, (left, right) = pyplot.subplots(1, 2, figsize=(10, 3.8))
    left.plot(steps, [p["loss"] for p in progress], label="total")
    left.plot(steps, [p["masked_lm_loss"] for p in progress], label="masked LM")
    left.plot(steps, [p["next_sentence_loss"] for p in progress], label="next sentence")
    left.set(xlabel="step", ylabel="training loss", title="Loss")
    left.legend()
    right.plot(steps, [p["masked_lm_accuracy"] for p in progress], label="masked LM (train)")
    right.plot(steps, [p["next_sentence_accuracy"] for p in progress],
               label="next sentence (train)")
    right.axhline(metrics["eval_masked_lm_accuracy"], color="C0", linestyle="--",
                  label=f"masked LM, held out: {metrics['eval_masked_lm_accuracy']:.3f}")
    right.axhline(metrics["eval_most_frequent_token_accuracy"], color="gray", linestyle=":",
                  label="most frequent token: "
                        f"{metrics['eval_most_frequent_token_accuracy']:.3f}")
    right.set(xlabel="step", ylabel="accuracy", title="Accuracy", ylim=(0, 1))
    right.legend(fontsize=8)
    figure.suptitle("BERT-Mini from scratch on Wikipedia + NYT editorials (CPU)")
    figure.tight_layout()
    figure.savefig(path, dpi=80)
    pyplot.close(figure)


def main(argv):
    del argv
    logging.set_verbosity(logging.ERROR)
    import keras_bert  # first: loads TensorFlow quietly

    from keras_bert import storage
    from keras_bert.checkpoints import google
    from keras_bert.data.pretraining import corpus as pretraining_corpus
    from keras_bert.presets import load_preset
    from keras_bert.presets.registry import PRESETS
    from keras_bert.training import pretraining_run

    directory = MODEL_DIR.value
    storage.makedirs(directory)
    (train, held_out), (n_train, n_eval), sentences = _corpus(directory, pretraining_corpus)
    print(f"Corpus: {n_train:,} training documents ({sentences[0]:,} sentences), {n_eval:,} "
          f"held out ({sentences[1]:,} sentences)", flush=True)
    config_file = os.path.join(directory, "bert_config.json")
    google.write_config(PRESETS[SIZE.value].config, config_file)
    options = pretraining_run.PretrainingOptions(
        model_dir=directory, input_file=train, eval_input_file=held_out, input_format="text",
        bert_config_file=config_file, vocab_file=load_preset("minilm_l6").vocab_path,
        do_lower_case=True, max_seq_length=SEQ.value,
        max_predictions_per_seq=PREDICTIONS.value, train_batch_size=BATCH.value,
        num_train_steps=STEPS.value, num_warmup_steps=int(WARMUP.value * STEPS.value),
        learning_rate=LEARNING_RATE.value, steps_per_loop=LOOP.value,
        save_checkpoints_steps=max(LOOP.value, STEPS.value // 4),
        max_eval_steps=EVAL_STEPS.value, seed=0)
    with keras_bert.backend.quiet_native_stderr():
        metrics = pretraining_run.pretrain(options, log=lambda line: print(line, flush=True))
    progress = [json.loads(line) for line in pathlib.Path(
        directory, pretraining_run.PROGRESS_FILE).read_text().splitlines()]
    plot = PLOT.value or os.path.join(directory, "pretrain_mini.png")
    _plot(progress, metrics, plot)
    seconds = sum(p["sequences"] / p["sequences_per_second"] for p in progress)
    print(f"Held-out masked-LM accuracy {metrics['eval_masked_lm_accuracy']:.4f} (loss "
          f"{metrics['eval_masked_lm_loss']:.3f}); always predicting the most frequent masked "
          f"token scores {metrics['eval_most_frequent_token_accuracy']:.4f}. Next sentence: "
          f"{metrics['eval_next_sentence_accuracy']:.4f}.")
    print(f"{metrics['total_train_steps']} steps of {BATCH.value} x {SEQ.value} tokens in "
          f"{seconds / 60:.1f} minutes of training. Curve: {plot}; model: {directory} "
          "(BertPretrainer.from_preset loads it).")


if __name__ == "__main__":
    app.run(main)
