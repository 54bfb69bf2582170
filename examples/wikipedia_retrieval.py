"""Retrieval on real Wikipedia prose: score a text embedder, fine-tune it with in-batch
negatives, score it again.

The pairs (`keras_bert.data.wikipedia_pairs`) are each paragraph's first sentence (the
query) and the rest of the paragraph (its passage), from the Wikipedia sample in gensim's
wheel on PyPI (fetched with pip once). The articles are split with a fixed seed: the test
queries search all the test passages, and NDCG@10, MRR@10 and recall@k (sentence-transformers'
definitions, `keras_bert.training.embedding_evaluation`) are printed before and after
fine-tuning on the training pairs (`BertTextEmbedder.fit`, in-batch negatives, scale 20).
The last line is the figures as one JSON object. Texts longer than ``--seq_length`` tokens are
cut to fit, as sentence-transformers cuts them at ``max_seq_length`` (silently here too).

    python examples/wikipedia_retrieval.py
    python examples/wikipedia_retrieval.py --epochs=2 --seq_length=128 --batch_size=32
"""

import json
import os
import pathlib
import sys
import warnings

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # before TensorFlow is imported
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))  # the keras_bert here

from absl import app, flags, logging  # noqa: E402

PRESET = flags.DEFINE_string("preset", "minilm_l6", "Text embedder to fine-tune (preset name, "
                             "directory or hf:// handle).")
EPOCHS = flags.DEFINE_integer("epochs", 1, "Passes over the training pairs.", lower_bound=1)
BATCH_SIZE = flags.DEFINE_integer("batch_size", 32, "Pairs per step (each anchor's negatives "
                                  "are the other passages of its batch).", lower_bound=2)
SEQ_LENGTH = flags.DEFINE_integer("seq_length", None, "Longest text in tokens (default: the "
                                  "model's max_seq_length).", lower_bound=3)
LEARNING_RATE = flags.DEFINE_float("learning_rate", None, "Peak learning rate (default: the "
                                   "model's, 5e-5).")
MAX_TRAIN = flags.DEFINE_integer("max_train_pairs", None, "Train on the first N pairs only.",
                                 lower_bound=2)
MAX_TEST = flags.DEFINE_integer("max_test_pairs", None, "Score the first N test pairs only.",
                                lower_bound=1)
SEED = flags.DEFINE_integer("seed", 0, "Seed of the train/test split of the articles.")
CACHE_DIR = flags.DEFINE_string("cache_dir", None, "Where the Wikipedia dump is kept (default "
                                "$KERAS_BERT_HOME/datasets).")
INDEX_URL = flags.DEFINE_string("index_url", None, "Package index pip fetches gensim's wheel "
                                "from (default: pip's configuration).")
SHOWN = ("ndcg@10", "mrr@10", "recall@1", "recall@10")


def main(argv):
    del argv
    logging.set_verbosity(logging.ERROR)
    import keras_bert
    from keras_bert.data import wikipedia_pairs
    from keras_bert.text.truncation import TruncationWarning
    from keras_bert.training import embedding_evaluation, finetune_run

    warnings.simplefilter("ignore", TruncationWarning)  # long passages are cut on purpose
    try:
        splits = wikipedia_pairs.load(CACHE_DIR.value, seed=SEED.value,
                                      index_url=INDEX_URL.value)
        options = {} if SEQ_LENGTH.value is None else {"seq_length": SEQ_LENGTH.value}
        model = keras_bert.BertTextEmbedder.from_preset(PRESET.value, **options)
    except (ValueError, keras_bert.checkpoints.CheckpointError,
            wikipedia_pairs.DatasetError) as error:
        sys.exit(f"wikipedia_retrieval.py: {error}")
    queries, passages = (column[:MAX_TRAIN.value] for column in splits["train"])
    test_queries, test_passages = (column[:MAX_TEST.value] for column in splits["test"])
    print(f"{PRESET.value!r}: {len(queries):,} training pairs; {len(test_queries):,} test "
          f"queries search {len(test_passages):,} passages", flush=True)

    def evaluate():
        return embedding_evaluation.pair_retrieval(model, test_queries, test_passages,
                                                   batch_size=64, ks=(1, 10))

    with keras_bert.backend.quiet_native_stderr():
        before = evaluate()
        history = finetune_run.fine_tune(model, (queries, passages), None,
                                         batch_size=BATCH_SIZE.value, epochs=EPOCHS.value,
                                         learning_rate=LEARNING_RATE.value,
                                         verbose=1 if sys.stdout.isatty() else 2)
        after = evaluate()
    steps = int(model.optimizer.iterations)
    losses = ", ".join(f"{loss:.4f}" for loss in history.history["loss"])
    print(f"fine-tuned: {steps} steps in {history.train_seconds:.0f} s, mean loss per epoch "
          f"{losses}")
    print(f"{'':>10}{'before':>9}{'after':>9}")
    for key in SHOWN:
        print(f"{key:>10}{before[key]:9.4f}{after[key]:9.4f}")
    print(json.dumps({"preset": PRESET.value, "train_pairs": len(queries),
                      "test_queries": before["queries"], "corpus": before["corpus"],
                      "steps": steps, "batch_size": BATCH_SIZE.value,
                      "seq_length": model.preprocessor.seq_length,
                      "learning_rate": history.learning_rate,
                      "train_seconds": round(history.train_seconds, 1),
                      "before": {k: round(before[k], 4) for k in SHOWN},
                      "after": {k: round(after[k], 4) for k in SHOWN}}))


if __name__ == "__main__":
    app.run(main)
