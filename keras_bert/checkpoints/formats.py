"""Recognising a local checkpoint directory and opening it in any supported format.

`open_directory` returns a `LocalCheckpoint`: the config, vocabulary path and casing read
eagerly (cheap, and checked against each other at once), the weights read on demand.
"""

import os

from keras_bert.checkpoints import casing, google, huggingface, keras_hub, layout
from keras_bert.checkpoints.common import CheckpointError, check_vocab

FORMATS = ("keras_bert", "google", "huggingface", "keras_hub")


def detect_format(directory):
    """Which format ``directory`` holds, or a `CheckpointError` that says what is missing."""
    directory = os.fspath(directory)
    if not os.path.isdir(directory):
        raise CheckpointError(f"Not a directory: {directory}")
    if layout.is_layout(directory):
        return "keras_bert"
    if os.path.isfile(os.path.join(directory, google.CONFIG_FILE)):
        return "google"
    if keras_hub.is_keras_hub_preset(directory):
        return "keras_hub"
    if os.path.isfile(os.path.join(directory, huggingface.CONFIG_FILE)):
        return "huggingface"
    raise CheckpointError(
        f"{directory} is not a BERT checkpoint directory: expected {layout.METADATA_FILE} "
        f"(keras_bert), {google.CONFIG_FILE} + {google.CHECKPOINT_PREFIX}.* (Google), "
        f"{huggingface.CONFIG_FILE} + {huggingface.SAFETENSORS_FILE} (Hugging Face) or a "
        f"keras-hub preset ({keras_hub.CONFIG_FILE} + {keras_hub.WEIGHTS_FILE}). "
        f"Found: {sorted(os.listdir(directory))[:10]}."
    )


class LocalCheckpoint:
    """A checkpoint directory on disk in one of `FORMATS`.

    Attributes: ``path``, ``format``, ``config`` (`BertConfig`), ``vocab_path`` (or None),
    ``vocab_file`` (where the format keeps its vocabulary, there or not), ``do_lower_case``. ``weights()`` reads the canonical dict, checked against ``config``
    (or another `BertConfig`, e.g. one with overridden fields).
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
        config = config or self.config
        if self.format in ("keras_bert", "google"):
            return google.read_checkpoint(google.find_checkpoint_prefix(self.path), config)
        if self.format == "huggingface":
            return huggingface.read_weights(self.path, config)
        return keras_hub.read_weights(self.path, config)

    def variable_shapes(self):
        """Shapes without values where the format allows (Google-style), else from weights()."""
        if self.format in ("keras_bert", "google"):
            return google.variable_shapes(google.find_checkpoint_prefix(self.path))
        return {k: v.shape for k, v in self.weights().items()}

    def __repr__(self):
        return f"LocalCheckpoint({self.path!r}, format={self.format!r})"


def _vocab(path):
    return path if os.path.isfile(path) else None


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
    metadata, recorded = {}, None
    if fmt == "keras_bert":
        metadata = layout.read_metadata(directory)
        config = layout.read_config(directory)
        vocab_file = os.path.join(directory, google.VOCAB_FILE)
        recorded = layout.recorded_casing(directory, metadata)
    elif fmt == "google":
        config = google.read_directory_config(directory)
        vocab_file = os.path.join(directory, google.VOCAB_FILE)
    elif fmt == "huggingface":
        config = huggingface.read_config(directory)
        vocab_file = os.path.join(directory, huggingface.VOCAB_FILE)
        recorded = huggingface.recorded_casing(directory)
    else:
        config = keras_hub.read_config(directory)
        vocab_file = os.path.join(directory, keras_hub.VOCAB_FILE)
        recorded = keras_hub.recorded_casing(directory)
    if require_weights and fmt in ("keras_bert", "google"):
        google.find_checkpoint_prefix(directory)
    vocab = _vocab(vocab_file)
    check_vocab(vocab, config, source=directory)
    sources = [s for s in (recorded, known_casing) if s is not None]
    lower = casing.resolve(sources, vocab, override=do_lower_case, where=directory)
    return LocalCheckpoint(directory, fmt, config, vocab, lower, metadata, vocab_file)
