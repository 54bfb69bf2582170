"""The model a pre-training run starts from: a preset, a config with fresh weights, or a
config with the weights of an earlier checkpoint (phase 2 of the two-phase recipe).

* ``preset``: config, weights (encoder and, when the checkpoint has them, the ``cls/``
  heads), vocabulary and casing: ``BertPretrainer.from_preset``.
* ``bert_config_file`` alone: Google's ``bert_config.json``, fresh weights (pre-training
  from scratch); ``vocab_file``/``do_lower_case`` give the vocabulary.
* ``init_checkpoint``: weights to start from, as the original ``run_pretraining.py``'s
  flag: a TF1 checkpoint prefix (``.../bert_model.ckpt``) or any directory ``from_preset``
  reads (a finished run's ``--model_dir``), with ``bert_config_file`` or, for a directory,
  its own config.
"""

from keras_bert import storage
from keras_bert.checkpoints import google
from keras_bert.checkpoints.common import CheckpointError
from keras_bert.models.encoder import BertEncoder
from keras_bert.models.pretrainer import BertPretrainer
from keras_bert.presets.preset_loader import (
    PresetLoader, assign_encoder_weights, load_head_weights,
)
from keras_bert.text.masked_lm_preprocessor import BertPretrainerPreprocessor
from keras_bert.text.tokenizer import BertTokenizer

PRECISIONS = {"none": "float32", "bf16": "mixed_bfloat16", "fp16": "mixed_float16"}


def _init_weights(init_checkpoint, config, loader=None):
    """(canonical weights, source) of ``init_checkpoint``, checked against ``config``;
    ``loader``: the directory already resolved, if it was."""
    if loader is not None:
        return loader.load_weights(config), loader.path
    if storage.isfile(init_checkpoint + ".index"):  # first: on ram:// a prefix is a "dir"
        return google.read_checkpoint(init_checkpoint, config), init_checkpoint
    if storage.isdir(init_checkpoint):
        loader = PresetLoader(init_checkpoint)
        return loader.load_weights(config), loader.path
    raise CheckpointError(f"--init_checkpoint={init_checkpoint}: neither a directory nor "
                          f"a TF checkpoint prefix ({init_checkpoint}.index is missing)")


def build_pretrainer(preset=None, bert_config_file=None, init_checkpoint=None, vocab_file=None,
                     do_lower_case=None, max_seq_length=128, max_predictions_per_seq=20,
                     mixed_precision="none"):
    """A `BertPretrainer` (call it inside ``strategy.scope()``), not compiled (the pre-training
    loop brings its own optimizer), with a
    `BertPretrainerPreprocessor` when a vocabulary is known (its settings are then saved
    with the model), and the config it has.

    Raises `CheckpointError` / `ValueError` for files that cannot be read or do not fit, and
    for ``max_seq_length`` beyond the config's ``max_position_embeddings``.
    """
    dtype = PRECISIONS[mixed_precision]
    pre_args = dict(seq_length=max_seq_length, max_predictions_per_seq=max_predictions_per_seq)
    if preset is not None:  # resolved once: the config is checked, then the model built
        options = {} if do_lower_case is None else {"do_lower_case": do_lower_case}
        loader = PresetLoader(preset, require_vocab=True, **options)
        _check_length(loader.load_config(), max_seq_length, preset)
        return loader.load_task(BertPretrainer, dtype=dtype, compile=False, **pre_args)
    source, resolved = bert_config_file, None
    if bert_config_file is not None:
        config = google.config_from_json(bert_config_file)
    else:  # --init_checkpoint=<a directory> alone: its own config and weights, resolved once
        resolved = PresetLoader(init_checkpoint)
        config, source = resolved.load_config(), resolved.path
        if vocab_file is None:  # its file, or the tokens of its tokenizer.json
            vocab_file = resolved.vocab_path or resolved.preset.vocabulary
        if do_lower_case is None:
            do_lower_case = resolved.do_lower_case
    _check_length(config, max_seq_length, source)
    encoder = BertEncoder(config, dtype=dtype)
    preprocessor = None
    if vocab_file is not None:
        lower = True if do_lower_case is None else do_lower_case
        tokenizer = BertTokenizer(vocab_file, do_lower_case=lower)
        preprocessor = BertPretrainerPreprocessor(tokenizer, **pre_args)
        if isinstance(vocab_file, list):
            encoder.vocabulary = vocab_file
        else:
            encoder.vocab_path = vocab_file
        encoder.do_lower_case = lower
    model = BertPretrainer(encoder, preprocessor=preprocessor, compile=False)
    if init_checkpoint is not None:
        weights, where = _init_weights(init_checkpoint, config, resolved)
        assign_encoder_weights(encoder, weights, source=where)
        load_head_weights(model, weights, source=where)
    return model


def _check_length(config, max_seq_length, source):
    if max_seq_length > config.max_position_embeddings:
        raise ValueError(f"--max_seq_length={max_seq_length} is longer than the model takes: "
                         f"{source} has max_position_embeddings="
                         f"{config.max_position_embeddings}")


def tokenizer_of(model):
    """The model's `BertTokenizer`, or None when it has no vocabulary."""
    return getattr(model.preprocessor, "tokenizer", None)
