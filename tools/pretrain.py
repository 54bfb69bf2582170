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

from keras_bert import options as options_lib  # noqa: E402  (loads TensorFlow quietly)
from keras_bert.training import pretraining_run  # noqa: E402

STRATEGIES = ("default", "one_device", "mirrored", "multi_worker_mirrored", "tpu")

# The model, the data and training: PretrainingOptions' fields, declared there.
options_lib.define_flags(pretraining_run.PretrainingOptions)
# Distribution.
flags.DEFINE_string("tpu", None, "Cloud TPU name, 'local', or grpc://host:8470.")
flags.DEFINE_enum("strategy", "default", STRATEGIES, "tf.distribute strategy (default: TPU "
                  "with --tpu, multi-worker with a TF_CONFIG cluster, mirrored with "
                  "--num_gpus>1, else none).")
flags.DEFINE_integer("num_gpus", 0, "GPUs to use.")
flags.DEFINE_integer("num_cpu_devices", 1, "Split the CPU into this many logical devices "
                     "(data parallelism without accelerators, e.g. to test mirrored).")
FLAGS = flags.FLAGS


def main(argv):
    del argv
    logging.set_verbosity(logging.ERROR)
    import keras_bert
    from keras_bert.training import distribution
    from keras_bert.data.pretraining.record_input import PretrainingDataError

    options = options_lib.from_flags(pretraining_run.PretrainingOptions, FLAGS)
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
    for name, value in sorted(_flat(metrics).items()):
        print(f"  {name}: {value:.6g}" if isinstance(value, float) else f"  {name}: {value}")
    print(f"Wrote {FLAGS.model_dir}: metrics.json and the model "
          "(keras_bert.BertPretrainer.from_preset / BertEncoder.from_preset load it)")


def _flat(metrics):
    """{"last_loop": {"loss": ...}} -> {"last_loop.loss": ...}, for printing."""
    return {f"{name}.{key}" if isinstance(value, dict) else name: inner
            for name, value in metrics.items()
            for key, inner in (value.items() if isinstance(value, dict) else [(None, value)])}


if __name__ == "__main__":
    app.run(main)
