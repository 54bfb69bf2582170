"""A whole pre-training run: what ``tools/pretrain.py`` does, as a library call.

`pretrain(options, strategy)` builds the `BertPretrainer` and the optimizer in the
strategy's scope, the input pipelines with ``distribute_datasets_from_function`` (TFRecords
of the original format, or raw text with dynamic masking), and trains with
`keras_bert.training.pretraining_loop.PretrainingLoop`. In ``options.model_dir``:

* ``checkpoints/``: `tf.train.CheckpointManager` checkpoints (model, optimizer, step) every
  ``save_checkpoints_steps``. Running the same command again restores the latest one and
  goes on from its step; the input pipelines are a fixed function of the seed and the step,
  so the resumed run sees the batches and masks the uninterrupted one would have. With
  several workers every worker saves (the chief into ``checkpoints/``, the others into a
  scratch directory they delete) and all restore from the chief's.
* ``logs/train``, ``logs/eval``: TensorBoard summaries (loss, masked-LM and next-sentence
  accuracy and loss, learning rate, sequences/s), written by the chief.
* ``progress.jsonl``: one line per loop (the progress line's figures), appended.
* ``metrics.json`` at the end (`METRICS_KEYS`): ``total_train_steps`` (the model's step,
  runs before a resume included), ``train_steps_this_run`` and ``train_seconds_this_run``,
  the last loop's training figures under ``last_loop`` (they cover its ``steps`` only, not
  the run), the eval metrics on ``eval_input_file`` (the original's names:
  ``eval_masked_lm_accuracy``, ...) beside the accuracy of always predicting the most
  frequent masked token.
* the final model in keras_bert's preset layout (``bert_config.json``, ``vocab.txt``,
  ``bert_model.ckpt.*`` with Google's names, ``keras_bert.json``), which
  ``BertPretrainer.from_preset(model_dir)`` and ``BertEncoder.from_preset(model_dir)`` load
  and a phase-2 run takes as ``init_checkpoint``.
"""

import dataclasses
import json
import os
import time

import keras
import tensorflow as tf

from keras_bert import options as options_lib
from keras_bert import storage
from keras_bert.data.pretraining.record_input import (PretrainingDataError, check_tfrecord_files,
                                               list_files, tfrecord_dataset)
from keras_bert.data.pretraining.text_input import DynamicMaskingInput
from keras_bert.training import distribution
from keras_bert.optimizers.optimization import OPTIMIZERS, create_optimizer
from keras_bert.training.pretraining_loop import PretrainingLoop, most_frequent_token_baseline
from keras_bert.training.initial_model import PRECISIONS, build_pretrainer, tokenizer_of

INPUT_FORMATS = ("tfrecord", "text")
CHECKPOINTS = "checkpoints"
PROGRESS_FILE = "progress.jsonl"
METRICS_FILE = "metrics.json"
# What metrics.json holds at its top level (eval_* only with an eval_input_file).
METRICS_KEYS = ("total_train_steps", "train_batch_size", "train_steps_this_run",
                "train_seconds_this_run", "last_loop")
_RECORD_ERROR = "Pre-training record of another shape"


class PretrainingError(ValueError):
    """Options that contradict each other or cannot work; a run that cannot resume.

    >>> options = PretrainingOptions(model_dir="/tmp/run", input_file="/data/*.tfrecord")
    >>> try:
    ...     options.check()
    ... except PretrainingError as error:
    ...     print(error)
    Give the model: --preset, or --bert_config_file (fresh weights), or --init_checkpoint
    """


def _option(default, help, check=None):
    return options_lib.Option(default, help, check).field()


@dataclasses.dataclass
class PretrainingOptions(options_lib.Options):
    """The settings of a run; the names are ``run_pretraining.py``'s flags (and
    ``create_pretraining_data.py``'s for dynamic masking), ``model_dir`` Model Garden's.

    Each field is declared once with its default, help text and check: `check()` raises
    `PretrainingError` naming the flag, and `keras_bert.options.define_flags` makes the
    flags of ``tools/pretrain.py`` from the same declarations.

    Example (`pretrain` runs them; ``check`` says what cannot work, as `PretrainingError`):

    >>> options = PretrainingOptions(model_dir="/tmp/run", input_file="/data/*.tfrecord",
    ...                              preset="tiny", train_batch_size=256, num_train_steps=1000,
    ...                              num_warmup_steps=100)
    >>> options.check() is options
    True
    >>> options.max_seq_length, options.max_predictions_per_seq, options.optimizer
    (128, 20, 'adamw')
    >>> PretrainingOptions(model_dir="/tmp/run", input_file="x", preset="tiny",
    ...                    num_train_steps=0).check()
    Traceback (most recent call last):
    ...
    keras_bert...PretrainingError: --num_train_steps must be a positive integer, got 0
    """

    error = PretrainingError

    model_dir: str = _option(options_lib.REQUIRED, "Checkpoints, logs, metrics.json, the final "
                             "model.", options_lib.given())
    input_file: str = _option(options_lib.REQUIRED, "Training input: files, globs, comma lists.")
    input_format: str = _option(
        "tfrecord", "tfrecord: create_pretraining_data.py's records; text: one sentence per "
        "line, blank lines between documents, masked on the fly.",
        options_lib.one_of(INPUT_FORMATS))
    eval_input_file: str = _option(None, "Evaluation input (same format).")
    preset: str = _option(None, "Preset name or directory: config, weights, vocabulary.")
    bert_config_file: str = _option(None, "Google's bert_config.json: the architecture (fresh "
                                    "weights unless --init_checkpoint).")
    init_checkpoint: str = _option(
        None, "Weights to start from: a TF1 checkpoint prefix (.../bert_model.ckpt) or a model "
        "directory (e.g. a phase-1 --model_dir).")
    vocab_file: str = _option(None, "vocab.txt (text input, and saved with the model).")
    do_lower_case: bool = _option(None, "Lower-case the text (default: the preset's; True).")
    max_seq_length: int = options_lib.MAX_SEQ_LENGTH.field()
    max_predictions_per_seq: int = options_lib.MAX_PREDICTIONS_PER_SEQ.field()
    train_batch_size: int = _option(32, "Global batch (all replicas).",
                                    options_lib.positive_integer())
    eval_batch_size: int = _option(8, "Global eval batch.", options_lib.positive_integer())
    num_train_steps: int = _option(100000, "Training steps.", options_lib.positive_integer())
    num_warmup_steps: int = _option(10000, "Linear warm-up steps.", options_lib.integer(0))
    learning_rate: float = _option(5e-5, "Peak learning rate.", options_lib.greater_than(0))
    optimizer: str = _option("adamw", "The optimizer.", options_lib.one_of(OPTIMIZERS))
    mixed_precision: str = _option("none", "Compute precision (fp16 with dynamic loss "
                                   "scaling).", options_lib.one_of(PRECISIONS))
    jit_compile: bool = _option(False, "XLA for the per-replica forward and backward pass.")
    steps_per_loop: int = _option(1000, "Steps inside one tf.function call (and between "
                                  "progress lines; run_pretraining.py's iterations_per_loop).",
                                  options_lib.positive_integer())
    save_checkpoints_steps: int = _option(1000, "Steps between checkpoints.",
                                          options_lib.positive_integer())
    keep_checkpoint_max: int = _option(5, "Checkpoints kept.", options_lib.positive_integer())
    max_eval_steps: int = _option(100, "Eval batches.", options_lib.positive_integer())
    masked_lm_prob: float = options_lib.MASKED_LM_PROB.field()
    short_seq_prob: float = options_lib.SHORT_SEQ_PROB.field()
    do_whole_word_mask: bool = options_lib.DO_WHOLE_WORD_MASK.field()
    seed: int = _option(12345, "Seed of initialisation, shuffling and masking.",
                        options_lib.integer(0))

    def check_together(self):
        """What one flag alone cannot tell: the step counts, the model's sources, the files."""
        if self.num_warmup_steps > self.num_train_steps:
            raise PretrainingError(f"--num_warmup_steps={self.num_warmup_steps} must be in "
                                   f"[0, --num_train_steps={self.num_train_steps}]")
        if self.max_predictions_per_seq > self.max_seq_length:
            raise PretrainingError(
                f"--max_predictions_per_seq={self.max_predictions_per_seq} is more than "
                f"--max_seq_length={self.max_seq_length} tokens")
        if self.preset and (self.bert_config_file or self.init_checkpoint):
            raise PretrainingError("--preset gives config and weights: do not combine it with "
                                   "--bert_config_file or --init_checkpoint")
        if not (self.preset or self.bert_config_file or self.init_checkpoint):
            raise PretrainingError("Give the model: --preset, or --bert_config_file (fresh "
                                   "weights), or --init_checkpoint")
        if self.preset and self.vocab_file:
            raise PretrainingError("--preset has its own vocabulary: drop --vocab_file")
        if self.vocab_file and not storage.isfile(self.vocab_file):
            raise PretrainingError(f"--vocab_file={self.vocab_file}: no such file")
        if self.bert_config_file and not storage.isfile(self.bert_config_file):
            raise PretrainingError(f"--bert_config_file={self.bert_config_file}: no such file")
        if self.input_format == "text" and not (self.preset or self.vocab_file or (
                self.init_checkpoint and not self.bert_config_file)):
            raise PretrainingError("--input_format=text tokenizes: give --vocab_file (and "
                                   "--do_lower_case) or a --preset with a vocabulary")


def _input(options, model, files, batch_size, is_training):
    """dataset_fn(input_context, start_step) for this run's input format."""
    if options.input_format == "text":
        tokenizer = tokenizer_of(model)
        if tokenizer is None:
            raise PretrainingError("--input_format=text needs a vocabulary (--vocab_file)")
        text = DynamicMaskingInput(
            tokenizer, max_seq_length=options.max_seq_length,
            max_predictions_per_seq=options.max_predictions_per_seq,
            masked_lm_prob=options.masked_lm_prob, short_seq_prob=options.short_seq_prob,
            do_whole_word_mask=options.do_whole_word_mask,
            seed=options.seed + (0 if is_training else 1))

        def make(context, start_batch):
            return text.dataset(files, context.get_per_replica_batch_size(batch_size),
                                input_context=context, is_training=is_training,
                                start_batch=start_batch)
        return make
    check_tfrecord_files(files, options.max_seq_length, options.max_predictions_per_seq)

    def make(context, start_batch):
        return tfrecord_dataset(files, options.max_seq_length,
                                options.max_predictions_per_seq,
                                context.get_per_replica_batch_size(batch_size),
                                input_context=context, is_training=is_training,
                                seed=options.seed, start_batch=start_batch)
    return make


def _distributed(strategy, make, start_step=0):
    def dataset_fn(context):
        per_pipeline = context.num_replicas_in_sync // context.num_input_pipelines
        return make(context, start_step * per_pipeline)
    return iter(strategy.distribute_datasets_from_function(dataset_fn))


def _learning_rate(optimizer):
    inner = getattr(optimizer, "inner_optimizer", optimizer)
    schedule = inner.learning_rate_schedule
    if schedule is None:
        return float(inner.learning_rate)
    return float(schedule(inner.iterations))


def _record_error(error):
    """A data error raised inside the pipeline, as a `PretrainingDataError` (or None)."""
    message = getattr(error, "message", str(error))
    if _RECORD_ERROR not in message:
        return None
    detail = message[message.index(_RECORD_ERROR):].splitlines()[0]
    return PretrainingDataError(detail.replace("] [", " ").strip("[] "))


def _summaries(writer, step, values):
    with writer.as_default(step=step):
        for name, value in values.items():
            if isinstance(value, float):
                tf.summary.scalar(name, value)
    writer.flush()


def pretrain(options, strategy=None, log=print):
    """Runs (or resumes) the pre-training ``options`` describe; returns the final metrics.

    ``log`` receives the progress lines (the chief's); pass ``lambda line: None`` for none.
    Raises `PretrainingError`, `PretrainingDataError`, `keras_bert.checkpoints.
    CheckpointError` or `keras_bert.training.distribution.StrategyError` with a message that
    names the flag or file at fault.
    """
    options.check()
    strategy = strategy or tf.distribute.get_strategy()
    is_chief, task_type, task_id = distribution.worker_role(strategy)
    say = log if is_chief else (lambda line: None)
    global_batch = options.train_batch_size
    if global_batch % strategy.num_replicas_in_sync:
        raise PretrainingError(f"--train_batch_size={global_batch} must be a multiple of the "
                               f"{strategy.num_replicas_in_sync} replicas")
    train_files = list_files(options.input_file)
    eval_files = (list_files(options.eval_input_file, "--eval_input_file")
                  if options.eval_input_file else None)

    keras.utils.set_random_seed(options.seed)
    with strategy.scope():
        model = build_pretrainer(
            preset=options.preset, bert_config_file=options.bert_config_file,
            init_checkpoint=options.init_checkpoint, vocab_file=options.vocab_file,
            do_lower_case=options.do_lower_case, max_seq_length=options.max_seq_length,
            max_predictions_per_seq=options.max_predictions_per_seq,
            mixed_precision=options.mixed_precision)
        optimizer = create_optimizer(options.learning_rate, options.num_train_steps,
                                     num_warmup_steps=options.num_warmup_steps,
                                     optimizer=options.optimizer)
        if options.mixed_precision == "fp16":
            optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
        step = tf.Variable(0, dtype=tf.int64, trainable=False, name="global_step")
        batch_size = tf.Variable(global_batch, dtype=tf.int64, trainable=False,
                                 name="train_batch_size")
    loop = PretrainingLoop(model, optimizer, strategy, global_batch_size=global_batch,
                           jit_compile=options.jit_compile)
    train_input = _input(options, model, train_files, global_batch, is_training=True)
    eval_input = (_input(options, model, eval_files, options.eval_batch_size, is_training=False)
                  if eval_files else None)

    # The non-trainable variables are the dropout layers' seed states (Keras 3 keeps them
    # out of the model's checkpoint): a resumed run draws the dropout masks it would have.
    checkpoint = tf.train.Checkpoint(
        model=model, optimizer=optimizer, step=step, train_batch_size=batch_size,
        random_states=[v.value for v in model.non_trainable_variables])
    chief_dir = os.path.join(options.model_dir, CHECKPOINTS)
    own_dir = chief_dir if is_chief else os.path.join(
        options.model_dir, "workers", f"{task_type}_{task_id}")
    manager = tf.train.CheckpointManager(checkpoint, own_dir,
                                         max_to_keep=options.keep_checkpoint_max)
    latest = tf.train.latest_checkpoint(chief_dir)
    if latest:
        checkpoint.restore(latest).expect_partial()
        if int(batch_size.numpy()) != global_batch:
            raise PretrainingError(
                f"{latest} was trained with --train_batch_size={int(batch_size.numpy())}, this "
                f"command says {global_batch}: resume with the same batch size, or give "
                "another --model_dir")
        say(f"Resumed from {latest} at step {int(step.numpy())}")
    writers = {name: (tf.summary.create_file_writer(os.path.join(options.model_dir, "logs",
                                                                 name))
                      if is_chief else tf.summary.create_noop_writer())
               for name in ("train", "eval")}

    last, seconds = {}, 0.0
    iterator = None
    first_step = int(step.numpy())
    while int(step.numpy()) < options.num_train_steps:
        done = int(step.numpy())
        if iterator is None:
            iterator = _distributed(strategy, train_input, done)
        boundary = (done // options.save_checkpoints_steps + 1) * options.save_checkpoints_steps
        steps = min(options.steps_per_loop, options.num_train_steps - done, boundary - done)
        start = time.perf_counter()
        try:
            loop.train_loop(iterator, steps)
        except tf.errors.InvalidArgumentError as error:
            data_error = _record_error(error)
            if data_error is None:
                raise
            raise data_error from None
        elapsed = time.perf_counter() - start
        seconds += elapsed
        step.assign_add(steps)
        done = int(step.numpy())
        last = loop.take_train_metrics()
        last.update(step=done, learning_rate=_learning_rate(optimizer),
                    sequences_per_second=last["sequences"] / max(elapsed, 1e-9))
        say(f"step {done}/{options.num_train_steps}  loss {last['loss']:.4f}  "
            f"mlm_acc {last['masked_lm_accuracy']:.4f}  nsp_acc "
            f"{last['next_sentence_accuracy']:.4f}  lr {last['learning_rate']:.3g}  "
            f"{last['sequences_per_second']:.1f} seq/s")
        if is_chief:
            _summaries(writers["train"], done, last)
            storage.append_text(os.path.join(options.model_dir, PROGRESS_FILE),
                                json.dumps({k: round(v, 6) if isinstance(v, float) else v
                                            for k, v in last.items()}) + "\n")
        if done % options.save_checkpoints_steps == 0 or done >= options.num_train_steps:
            manager.save(checkpoint_number=done)

    global_step = int(step.numpy())
    # The last loop's figures cover its steps only: under a key that says so, beside the
    # run's own counts (a 4-step run in loops of 2 once read "train_steps: 2").
    last_loop = {}
    if last:
        last_loop = {"first_step": last["step"] - last["steps"] + 1, "last_step": last["step"],
                     **{k: v for k, v in last.items() if k != "step"}}
    metrics = {"total_train_steps": global_step, "train_batch_size": global_batch,
               "train_steps_this_run": global_step - first_step,
               "train_seconds_this_run": round(seconds, 3), "last_loop": last_loop}
    if eval_input is not None:
        evaluated = loop.evaluate(_distributed(strategy, eval_input), options.max_eval_steps)
        _summaries(writers["eval"], global_step, evaluated)
        metrics.update({f"eval_{k}": v for k, v in evaluated.items()})
        # What always predicting the most frequent masked token scores on the eval data.
        baseline_batches = eval_input(tf.distribute.InputContext(), 0).take(
            options.max_eval_steps).as_numpy_iterator()
        metrics["eval_most_frequent_token_accuracy"], metrics["eval_most_frequent_token"] = \
            most_frequent_token_baseline(baseline_batches)
        say("eval  " + "  ".join(f"{k} {v:.4f}" for k, v in sorted(evaluated.items())
                                 if isinstance(v, float)))
    if is_chief:
        model.save_to_preset(options.model_dir)
        storage.write_json(os.path.join(options.model_dir, METRICS_FILE), metrics)
    elif storage.isdir(own_dir):
        storage.rmtree(own_dir)
        parent = os.path.dirname(own_dir)
        if not storage.listdir(parent):
            storage.rmtree(parent)
    return metrics
