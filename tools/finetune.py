"""Fine-tunes a BERT preset on a task, the way google-research/bert's run_classifier.py does.

    python tools/finetune.py --preset=base --task=classification --tfds_name=glue/sst2 \
        --model_dir=/tmp/sst2
    python tools/finetune.py --preset=minilm_l6 --task=classification \
        --train_file=train.tsv --eval_file=dev.tsv --text_column=sentence --label_column=label \
        --model_dir=/tmp/mine --export_dir=/tmp/mine/export/1

Tasks: classification and regression (a text or a text pair and a label; --num_classes=1 or
--task=regression for scores such as STS-B), tagging (words and one tag per word),
multiple_choice (a context and a JSON list of choices), and embedding (a BertTextEmbedder
trained with in-batch negatives on an anchor column, --text_column, default "anchor", its
positive, --positive_column, default "positive", and optionally a hard negative,
--negative_column; no labels; scored by how well each anchor finds its positive). Data:
--tfds_name (GLUE sets, IMDB, Yelp: columns and splits known) or
--train_file/--eval_file/--test_file as TSV, CSV or JSON Lines with a header; string labels
become class ids in sorted order, and their names the model's label_names (in model.keras,
metrics.json, test_predictions.jsonl and the export). --model_dir receives checkpoints,
TensorBoard logs, metrics.json, test_predictions.jsonl and model.keras (which
keras.saving.load_model opens after `import keras_bert`, taking raw strings). --lora_rank=8
trains LoRA factors and the head only (at a default learning rate of 5e-4) and also writes
model.lora.h5, what trained.
"""

import os
import pathlib
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # before TensorFlow is imported
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))  # the keras_bert here

from absl import app, flags, logging  # noqa: E402

TASKS = ("classification", "regression", "tagging", "multiple_choice", "embedding", "squad")
PRECISIONS = {"none": None, "bf16": "mixed_bfloat16", "fp16": "mixed_float16"}
LORA_FILE = "model.lora.h5"

flags.DEFINE_string("preset", None, "Preset name (keras_bert.presets()) or directory.",
                    required=True)
flags.DEFINE_enum("task", "classification", TASKS, "What to fine-tune for.")
flags.DEFINE_string("tfds_name", None, "A TFDS set with known columns, e.g. glue/sst2.")
flags.DEFINE_string("data_dir", None, "TFDS data directory.")
flags.DEFINE_string("train_file", None, "Training data (.tsv, .csv, .jsonl with a header).")
flags.DEFINE_string("eval_file", None, "Evaluation data, scored after each epoch and at the end.")
flags.DEFINE_string("test_file", None, "Test data: predictions written, scored if labelled.")
flags.DEFINE_string("text_column", None, "Column of the text (tagging: words; choice: context).")
flags.DEFINE_string("text_b_column", None,
                    "Column of the second text of pairs (multiple_choice: the choices).")
flags.DEFINE_string("positive_column", "positive", "embedding: the column of each anchor's "
                    "positive (--text_column is the anchors', default 'anchor').")
flags.DEFINE_string("negative_column", None, "embedding: a column of hard negatives, one per "
                    "anchor (optional; the other rows' positives are negatives anyway).")
flags.DEFINE_string("label_column", "label", "Column of the label (tagging: the tags).")
flags.DEFINE_integer("num_classes", None, "Classes (tags, choices); default: from the data.",
                     lower_bound=1)
flags.DEFINE_integer("seq_length", 128, "Longest packed sequence, in tokens: at least 3 "
                     "([CLS] a [SEP]), 5 for text pairs, multiple_choice and squad "
                     "([CLS] a [SEP] b [SEP]). embedding: the model's max_seq_length "
                     "(a sentence-transformers preset's; else 256) unless given.", lower_bound=3)
flags.DEFINE_integer("batch_size", 32, "Examples per step.", lower_bound=1)
flags.DEFINE_integer("epochs", 3, "Passes over the training data.", lower_bound=1)
flags.DEFINE_float("learning_rate", None, "Peak learning rate (default: 5e-5; 5e-4 with "
                   "--lora_rank).", lower_bound=0)
flags.DEFINE_integer("lora_rank", 0, "LoRA: train rank-N factors of the attention's query "
                     "and value projections and the head, everything else frozen (0: full "
                     "fine-tuning).", lower_bound=0)
flags.DEFINE_float("warmup_ratio", 0.1, "Share of the steps spent warming up.", lower_bound=0,
                   upper_bound=1)
flags.DEFINE_enum("mixed_precision", "none", list(PRECISIONS), "Compute precision.")
flags.DEFINE_bool("jit_compile", False, "XLA for the training step.")
flags.DEFINE_string("model_dir", None, "Where the run's outputs go.", required=True)
flags.DEFINE_bool("save_optimizer_state", False, "Keep the optimizer's state in "
                  "model.keras (three times the model's size with AdamW), to resume training "
                  "from it; by default it holds the weights, config and vocabulary only.")
flags.DEFINE_string("export_dir", None, "Also export a SavedModel here (TF Serving layout: "
                    "<base>/<name>/<version>).")
flags.DEFINE_integer("seed", 0, "Random seed.")
# SQuAD (--task=squad; --train_file/--eval_file are SQuAD JSON), as run_squad.py's flags.
flags.DEFINE_bool("version_2_with_negative", False, "SQuAD 2.0: questions may have no answer.")
flags.DEFINE_integer("doc_stride", 128, "SQuAD: tokens between the starts of windows.",
                     lower_bound=1)
flags.DEFINE_integer("max_query_length", 64, "SQuAD: longest question, in tokens.",
                     lower_bound=1)
flags.DEFINE_integer("n_best_size", 20, "SQuAD: spans considered per question.", lower_bound=1)
flags.DEFINE_integer("max_answer_length", 30, "SQuAD: longest answer, in tokens.",
                     lower_bound=1)
flags.DEFINE_float("null_score_diff_threshold", 0.0, "SQuAD 2.0: answer '' when the null "
                   "score beats the best span by more than this.")
FLAGS = flags.FLAGS


@flags.multi_flags_validator(["tfds_name", "train_file"], message=(
    "Give --tfds_name or --train_file (with --eval_file/--test_file), exactly one."))
def _one_data_source(values):
    return bool(values["tfds_name"]) != bool(values["train_file"])


def main(argv):
    del argv
    logging.set_verbosity(logging.ERROR)
    import keras_bert  # first: loads TensorFlow quietly

    import keras
    from keras_bert.data import sources
    from keras_bert.training import finetune_run

    keras.utils.set_random_seed(FLAGS.seed)
    if FLAGS.task == "squad":
        return _squad(keras_bert)
    embedding = FLAGS.task == "embedding"
    try:
        splits = sources.load_splits(
            FLAGS.task, tfds_name=FLAGS.tfds_name, train_file=FLAGS.train_file,
            eval_file=FLAGS.eval_file, test_file=FLAGS.test_file,
            text_column=FLAGS.text_column or ("anchor" if embedding else None),
            text_b_column=FLAGS.positive_column if embedding else FLAGS.text_b_column,
            text_c_column=FLAGS.negative_column if embedding else None,
            label_column=None if embedding else FLAGS.label_column, data_dir=FLAGS.data_dir)
        num_classes = None if embedding else (
            FLAGS.num_classes or sources.num_classes(FLAGS.task, splits))
        model = _lora(_model(keras_bert, num_classes))
        finetune_run.check_seq_length(model, splits["train"], flag="--seq_length")
    except (ValueError, TypeError, keras_bert.checkpoints.CheckpointError) as error:
        sys.exit(f"finetune.py: {error}")
    print(f"{type(model).__name__} from {FLAGS.preset!r}{_lora_note(model)}: "
          f"{len(splits['train']):,} training examples, "
          + ", ".join(f"{len(v):,} {k}" for k, v in splits.items() if k != "train"), flush=True)
    with keras_bert.backend.quiet_native_stderr():
        metrics = finetune_run.run(
            model, splits, batch_size=FLAGS.batch_size, epochs=FLAGS.epochs,
            learning_rate=FLAGS.learning_rate, warmup_ratio=FLAGS.warmup_ratio,
            model_dir=FLAGS.model_dir, export_dir=FLAGS.export_dir,
            jit_compile=FLAGS.jit_compile, save_optimizer_state=FLAGS.save_optimizer_state)
    for name, value in sorted(_flat(metrics).items()):
        print(f"  {name}: {value:.6g}" if isinstance(value, float) else f"  {name}: {value}")
    lora_file = _save_lora(model)
    print(f"Wrote {FLAGS.model_dir}/model.keras{lora_file} and metrics.json"
          + (f"; exported to {FLAGS.export_dir}" if FLAGS.export_dir else ""))


def _squad(keras_bert):
    from keras_bert.training import squad_run

    if FLAGS.tfds_name:
        sys.exit("finetune.py: --task=squad reads SQuAD JSON: give --train_file (and "
                 "--eval_file), e.g. train-v1.1.json and dev-v1.1.json.")
    try:
        model = _lora(keras_bert.BertSpanLabeler.from_preset(
            FLAGS.preset, seq_length=FLAGS.seq_length,
            dtype=PRECISIONS[FLAGS.mixed_precision]))
        print(f"BertSpanLabeler from {FLAGS.preset!r}{_lora_note(model)}: SQuAD "
              f"{'2.0' if FLAGS.version_2_with_negative else '1.1'} from {FLAGS.train_file}",
              flush=True)
        with keras_bert.backend.quiet_native_stderr():
            metrics = squad_run.run(
                model, FLAGS.train_file, FLAGS.eval_file,
                version_2_with_negative=FLAGS.version_2_with_negative,
                max_seq_length=FLAGS.seq_length, doc_stride=FLAGS.doc_stride,
                max_query_length=FLAGS.max_query_length, batch_size=FLAGS.batch_size,
                epochs=FLAGS.epochs, learning_rate=FLAGS.learning_rate,
                warmup_ratio=FLAGS.warmup_ratio, n_best_size=FLAGS.n_best_size,
                max_answer_length=FLAGS.max_answer_length,
                null_score_diff_threshold=FLAGS.null_score_diff_threshold,
                model_dir=FLAGS.model_dir, jit_compile=FLAGS.jit_compile,
                save_optimizer_state=FLAGS.save_optimizer_state)
    except (ValueError, TypeError, OSError, keras_bert.checkpoints.CheckpointError) as error:
        sys.exit(f"finetune.py: {error}")
    for name, value in sorted(_flat(metrics).items()):
        print(f"  {name}: {value:.6g}" if isinstance(value, float) else f"  {name}: {value}")
    lora_file = _save_lora(model)
    print(f"Wrote {FLAGS.model_dir}/model.keras{lora_file}, metrics.json and predictions.json")


def _lora(model):
    if FLAGS.lora_rank:
        model.enable_lora(FLAGS.lora_rank)
    return model


def _save_lora(model):
    """With LoRA, writes what trained (factors and head) to model_dir/model.lora.h5."""
    if not FLAGS.lora_rank:
        return ""
    model.save_lora_weights(os.path.join(FLAGS.model_dir, LORA_FILE))
    return f", {LORA_FILE}"


def _lora_note(model):
    if not FLAGS.lora_rank:
        return ""
    from keras_bert.training import finetune_run

    counts = finetune_run.trainable_summary(model)
    return (f" with LoRA rank {FLAGS.lora_rank} ({counts['trainable_parameters']:,} of "
            f"{counts['parameters']:,} parameters trainable)")


def _model(keras_bert, num_classes):
    common = dict(seq_length=FLAGS.seq_length, dtype=PRECISIONS[FLAGS.mixed_precision])
    if FLAGS.task == "embedding":
        if not FLAGS["seq_length"].present:  # the model's own (256 for minilm_l6)
            del common["seq_length"]
        return keras_bert.BertTextEmbedder.from_preset(FLAGS.preset, **common)
    if FLAGS.task == "tagging":
        return keras_bert.BertTokenClassifier.from_preset(FLAGS.preset, num_classes=num_classes,
                                                          **common)
    if FLAGS.task == "multiple_choice":
        return keras_bert.BertMultipleChoice.from_preset(FLAGS.preset, num_choices=num_classes,
                                                         **common)
    if FLAGS.task == "regression":
        num_classes = 1
    return keras_bert.BertClassifier.from_preset(FLAGS.preset, num_classes=num_classes, **common)


def _flat(metrics):
    """{"last_epoch": {"train_loss": ...}} -> {"last_epoch.train_loss": ...}, for printing."""
    return {f"{name}.{key}" if isinstance(value, dict) else name: inner
            for name, value in metrics.items()
            for key, inner in (value.items() if isinstance(value, dict) else [(None, value)])}


if __name__ == "__main__":
    app.run(main)
