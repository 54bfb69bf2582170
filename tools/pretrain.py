"""Pre-trains BERT (masked LM + next sentence) on tf.distribute: one CPU, GPUs, a TPU or
several machines, with the flags of google-research/bert's run_pretraining.py.

    # TFRecords made by create_pretraining_data.py (ours or the original), on a TPU:
    python tools/pretrain.py --tpu=my-tpu --preset=base --input_file='gs://b/data/*.tfrecord' \
        --model_dir=gs://b/run --train_batch_size=256 --num_train_steps=1000000
    # From scratch, straight from raw text (dynamic masking), on this machine's GPUs:
    python tools/pretrain.py --bert_config_file=bert_config.json --vocab_file=vocab.txt \
        --input_format=text --input_file='corpus/*.txt' --strategy=mirrored --num_gpus=4 \
        --model_dir=/tmp/run
    # Phase 2 of the two-phase recipe: seq 512 from the phase-1 model:
    python tools/pretrain.py --init_checkpoint=/tmp/run --max_seq_length=512 \
        --max_predictions_per_seq=80 --input_file='data512/*' --model_dir=/tmp/run512

Several machines: run the same command on each with its TF_CONFIG (the cluster and its task)
and --strategy=multi_worker_mirrored. Running a command again resumes from the last
checkpoint in --model_dir. At the end --model_dir holds metrics.json and the model, which
keras_bert.BertPretrainer.from_preset(model_dir) loads.
"""

import os
import pathlib
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # before TensorFlow is imported
# The strategy configures the devices (logical CPUs, collective ops) before TF's context starts.
os.environ["KERAS_BERT_DEFER_DEVICES"] = "1"
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))  # the keras_bert here

from absl import app, flags, logging  # noqa: E402

STRATEGIES = ("default", "one_device", "mirrored", "multi_worker_mirrored", "tpu")

# The model.
flags.DEFINE_string("preset", None, "Preset name or directory: config, weights, vocabulary.")
flags.DEFINE_string("bert_config_file", None, "Google's bert_config.json: the architecture "
                    "(fresh weights unless --init_checkpoint).")
flags.DEFINE_string("init_checkpoint", None, "Weights to start from: a TF1 checkpoint prefix "
                    "(.../bert_model.ckpt) or a model directory (e.g. a phase-1 --model_dir).")
flags.DEFINE_string("vocab_file", None, "vocab.txt (text input, and saved with the model).")
flags.DEFINE_bool("do_lower_case", None, "Lower-case the text (default: the preset's; True).")
# The data.
flags.DEFINE_string("input_file", None, "Training input: files, globs, comma lists.")
flags.DEFINE_enum("input_format", "tfrecord", ["tfrecord", "text"],
                  "tfrecord: create_pretraining_data.py's records; text: one sentence per "
                  "line, blank lines between documents, masked on the fly.")
flags.DEFINE_string("eval_input_file", None, "Evaluation input (same format).")
flags.DEFINE_integer("max_seq_length", 128, "Tokens per sequence.")
flags.DEFINE_integer("max_predictions_per_seq", 20, "Masked-LM predictions per sequence.")
flags.DEFINE_float("masked_lm_prob", 0.15, "Text input: share of tokens masked.")
flags.DEFINE_float("short_seq_prob", 0.1, "Text input: chance of a shorter sequence.")
flags.DEFINE_bool("do_whole_word_mask", False, "Text input: mask whole words.")
# Training.
flags.DEFINE_string("model_dir", None, "Checkpoints, logs, metrics.json, the final model.")
flags.DEFINE_integer("train_batch_size", 32, "Global batch (all replicas).")
flags.DEFINE_integer("eval_batch_size", 8, "Global eval batch.")
flags.DEFINE_integer("num_train_steps", 100000, "Training steps.")
flags.DEFINE_integer("num_warmup_steps", 10000, "Linear warm-up steps.")
flags.DEFINE_float("learning_rate", 5e-5, "Peak learning rate.")
flags.DEFINE_enum("optimizer", "adamw", ["adamw", "lamb"], "The optimizer.")
flags.DEFINE_enum("mixed_precision", "none", ["none", "bf16", "fp16"],
                  "Compute precision (fp16 with dynamic loss scaling).")
flags.DEFINE_bool("jit_compile", False, "XLA for the per-replica forward and backward pass.")
flags.DEFINE_integer("steps_per_loop", 1000, "Steps inside one tf.function call (and between "
                     "progress lines; run_pretraining.py's iterations_per_loop).")
flags.DEFINE_integer("save_checkpoints_steps", 1000, "Steps between checkpoints.")
flags.DEFINE_integer("keep_checkpoint_max", 5, "Checkpoints kept.")
flags.DEFINE_integer("max_eval_steps", 100, "Eval batches.")
flags.DEFINE_integer("seed", 12345, "Seed of initialisation, shuffling and masking.")
# Distribution.
flags.DEFINE_string("tpu", None, "Cloud TPU name, 'local', or grpc://host:8470.")
flags.DEFINE_enum("strategy", "default", STRATEGIES, "tf.distribute strategy (default: TPU "
                  "with --tpu, multi-worker with a TF_CONFIG cluster, mirrored with "
                  "--num_gpus>1, else none).")
flags.DEFINE_integer("num_gpus", 0, "GPUs to use.")
flags.DEFINE_integer("num_cpu_devices", 1, "Split the CPU into this many logical devices "
                     "(data parallelism without accelerators, e.g. to test mirrored).")
FLAGS = flags.FLAGS
flags.mark_flags_as_required(["input_file", "model_dir"])

OPTION_FLAGS = (
    "model_dir", "input_file", "input_format", "eval_input_file", "preset", "bert_config_file",
    "init_checkpoint", "vocab_file", "do_lower_case", "max_seq_length",
    "max_predictions_per_seq", "train_batch_size", "eval_batch_size", "num_train_steps",
    "num_warmup_steps", "learning_rate", "optimizer", "mixed_precision", "jit_compile",
    "steps_per_loop", "save_checkpoints_steps", "keep_checkpoint_max", "max_eval_steps",
    "masked_lm_prob", "short_seq_prob", "do_whole_word_mask", "seed")


def main(argv):
    del argv
    logging.set_verbosity(logging.ERROR)
    from keras_bert.training import distribution  # loads TensorFlow quietly

    import keras_bert
    from keras_bert.data.pretraining.record_input import PretrainingDataError
    from keras_bert.training import pretraining_run

    options = pretraining_run.PretrainingOptions(
        **{name: getattr(FLAGS, name) for name in OPTION_FLAGS})
    errors = (ValueError, TypeError, OSError, PretrainingDataError,
              keras_bert.checkpoints.CheckpointError)
    try:
        options.check()
        if FLAGS.num_cpu_devices < 1:
            raise distribution.StrategyError("--num_cpu_devices must be >= 1")
        with keras_bert.backend.quiet_native_stderr():
            distribution.split_cpu(FLAGS.num_cpu_devices)
            strategy = distribution.strategy_from_flags(FLAGS.strategy, tpu=FLAGS.tpu,
                                                        num_gpus=FLAGS.num_gpus)
        print(f"Pre-training with {distribution.strategy_name(strategy)} "
              f"({strategy.num_replicas_in_sync} replica(s)), global batch "
              f"{FLAGS.train_batch_size}, into {FLAGS.model_dir}", flush=True)
        with keras_bert.backend.quiet_native_stderr():
            metrics = pretraining_run.pretrain(options, strategy,
                                               log=lambda line: print(line, flush=True))
    except errors as error:
        sys.exit(f"pretrain.py: {error}")
    for name, value in sorted(metrics.items()):
        print(f"  {name}: {value:.6g}" if isinstance(value, float) else f"  {name}: {value}")
    print(f"Wrote {FLAGS.model_dir}: metrics.json and the model "
          "(keras_bert.BertPretrainer.from_preset / BertEncoder.from_preset load it)")


if __name__ == "__main__":
    app.run(main)
