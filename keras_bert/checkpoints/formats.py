"""Recognising a checkpoint directory (local, gs://, ram://: read through
`keras_bert.storage`) and opening it in any supported format.

`FORMATS` is the one table of formats, in the order they are recognised. Each is a module
with the same functions:

* ``detect(directory)``: whether the directory holds this format;
* ``read_config(directory)``: its `BertConfig`;
* ``read_metadata(directory)``: what else it records (``{}`` but for keras_bert's layout);
* ``recorded_casing(directory)``: ``(what, do_lower_case)`` where the files say, else None;
* ``vocab_file(directory)``: where the format keeps its vocabulary;
* ``check_weights(directory)``: `CheckpointError` now when weights files are missing;
* ``read_weights(directory, config)``: the canonical weights (Google's names), checked
  against ``config``.

Writers: `keras_bert_layout.write` (keras_bert), `google.write_directory`, `huggingface.write_directory`.

`open_directory` returns a `LocalCheckpoint`: the config, vocabulary path and casing read
eagerly (cheap, and checked against each other at once), the weights read on demand.
"""

import os

from keras_bert import storage
from keras_bert.checkpoints import casing, google, huggingface, keras_bert_layout, keras_hub
from keras_bert.checkpoints.common import CheckpointError, check_vocab

FORMATS = {  # recognised in this order: a keras_bert preset is also a Google directory
    "keras_bert": keras_bert_layout,
    "google": google,
    "keras_hub": keras_hub,
    "huggingface": huggingface,
}


def detect_format(directory):
    """Which format ``directory`` holds, or a `CheckpointError` that says what is missing."""
    directory = os.fspath(directory)
    if not storage.isdir(directory):
        raise CheckpointError(f"Not a directory: {directory}")
    for name, module in FORMATS.items():
        if module.detect(directory):
            return name
    raise CheckpointError(
        f"{directory} is not a BERT checkpoint directory: expected {keras_bert_layout.METADATA_FILE} "
        f"(keras_bert), {google.CONFIG_FILE} + {google.CHECKPOINT_PREFIX}.* (Google), "
        f"{huggingface.CONFIG_FILE} + {huggingface.SAFETENSORS_FILE} (Hugging Face) or a "
        f"keras-hub preset ({keras_hub.CONFIG_FILE} + {keras_hub.WEIGHTS_FILE}). "
        f"Found: {storage.listdir(directory)[:10]}."
    )


class LocalCheckpoint:
    """A checkpoint directory on disk in one of `FORMATS`.

    Attributes: ``path``, ``format``, ``config`` (`BertConfig`), ``vocab_path`` (or None),
    ``vocab_file`` (where the format keeps its vocabulary, there or not), ``do_lower_case``. ``weights()`` reads the canonical dict, checked against ``config``
    (or another `BertConfig`, e.g. one with overridden fields).

    Example (`open_directory` returns one):

    >>> import tempfile
    >>> from keras_bert import BertConfig, BertEncoder
    >>> from keras_bert.checkpoints import open_directory
    >>> config = BertConfig(vocab_size=30, hidden_size=8, num_hidden_layers=1,
    ...                     num_attention_heads=2, intermediate_size=16)
    >>> path = tempfile.mkdtemp()
    >>> BertEncoder(config).save_to_preset(path) == path
    True
    >>> checkpoint = open_directory(path)
    >>> checkpoint.format, checkpoint.config == config, checkpoint.vocab_path
    ('keras_bert', True, None)
    >>> checkpoint.weights()["bert/embeddings/word_embeddings"].shape
    (30, 8)
    """

    def __init__(self, path, format, config, vocab_path, do_lower_case, metadata=None,
                 vocab_file=None):
        self.path = path
        self.vocab_file = vocab_file or vocab_path
        self.format = format
        self.config = config
        self.vocab_path = vocab_path
        self.do_lower_case = do_lower_case
        self.metadata = metadata or {}

    def weights(self, config=None):
        """The canonical weights, checked to fit ``config`` (default: the directory's own)
        exactly: nothing missing, nothing the config has no place for."""
        return FORMATS[self.format].read_weights(self.path, config or self.config)

    def variable_shapes(self):
        """Shapes without values where the format allows (Google-style), else from weights()."""
        if self.format in ("keras_bert", "google"):
            return google.variable_shapes(google.find_checkpoint_prefix(self.path))
        return {k: v.shape for k, v in self.weights().items()}

    def __repr__(self):
        return f"LocalCheckpoint({self.path!r}, format={self.format!r})"


def _vocab(path):
    return path if storage.isfile(path) else None


def open_directory(directory, do_lower_case=None, require_weights=True, known_casing=None):
    """Opens ``directory`` in whatever format it holds; checks vocab size against config.

    Casing comes from the directory's metadata, then ``known_casing`` (a ``(what,
    do_lower_case)`` from outside the directory, e.g. the registry entry of a registry
    preset), then the vocabulary (see `keras_bert.checkpoints.casing`); sources that disagree
    are an error. ``do_lower_case`` is the caller's choice and overrides them all. With
    ``require_weights`` (the default) a Google-style directory without its checkpoint files
    fails here, at once; pass False to open only config and vocabulary (an architecture
    without weights).
    """
    directory = os.fspath(directory)
    fmt = detect_format(directory)
    module = FORMATS[fmt]
    metadata = module.read_metadata(directory)
    config = module.read_config(directory)
    vocab_file = module.vocab_file(directory)
    recorded = module.recorded_casing(directory)
    if require_weights:
        module.check_weights(directory)
    vocab = _vocab(vocab_file)
    check_vocab(vocab, config, source=directory)
    sources = [s for s in (recorded, known_casing) if s is not None]
    lower = casing.resolve(sources, vocab, override=do_lower_case, where=directory)
    return LocalCheckpoint(directory, fmt, config, vocab, lower, metadata, vocab_file)
