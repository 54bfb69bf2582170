"""Recognising a checkpoint directory (local, gs://, ram://: read through
`keras_bert.storage`), opening it in any supported format, and `Preset`, the one description
of a preset.

`FORMATS` is the one table of formats, in the order they are recognised. Each is a module
with the same functions:

* ``detect(directory)``: whether the directory holds this format;
* ``read_config(directory)``: its `BertConfig`;
* ``read_metadata(directory)``: what else it records (``{}`` but for keras_bert's layout);
* ``check_files(directory, metadata)``: `CheckpointError` when the files are not the ones
  the metadata was written with (keras_bert's layout; nothing to check in the others);
* ``recorded_casing(directory)``: ``(what, do_lower_case)`` where the files say, else None;
* ``vocab_file(directory)``: where the format keeps its vocabulary;
* ``check_weights(directory)``: `CheckpointError` now when weights files are missing;
* ``read_weights(directory, config)``: the canonical weights (Google's names), checked
  against ``config``.

Writers: `keras_bert_layout.write` (keras_bert), `google.write_directory`,
`huggingface.write_directory`; ``save_to_preset`` chooses among them in
`keras_bert.presets.preset_saver`.

`open_directory` returns a `Preset`: the config, vocabulary path and casing read eagerly
(cheap, and checked against each other at once), the weights read on demand.
"""

import os

import numpy as np

from keras_bert import storage
from keras_bert.checkpoints import casing, google, huggingface, keras_bert_layout, keras_hub
from keras_bert.checkpoints.common import CheckpointError, check_shapes, check_vocab

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


class Preset:
    """A preset: its config, vocabulary, casing and metadata, and its weights.

    The one description of a preset that the loader builds from and the saver writes
    (`keras_bert.presets.preset_loader`, `keras_bert.presets.preset_saver`): opened from a
    directory (`open_directory`, or `keras_bert.presets.load_preset` for any name, handle or
    path), with its weights read on demand; or made from a model to be saved, with its
    weights in memory. A registered preset not downloaded has a config and casing alone.

    Attributes: ``config`` (`BertConfig`), ``name``, ``source`` (the URL, package, handle,
    path or class it came from), ``path`` (the directory read, or None), ``format`` (a
    `FORMATS` key, or None), ``vocab_path`` (or None), ``vocab_file`` (where the format
    keeps its vocabulary, there or not), ``do_lower_case``, ``metadata`` (what else it
    records: keras_bert.json's contents; a task preset's ``task`` and ``preprocessor``).

    Example (`open_directory` returns one):

    >>> import os, tempfile
    >>> from keras_bert import BertEncoder
    >>> from keras_bert.checkpoints import open_directory
    >>> encoder = BertEncoder.from_preset("tiny_random")
    >>> path = encoder.save_to_preset(tempfile.mkdtemp())
    >>> preset = open_directory(path)
    >>> preset.format, preset.config == encoder.bert_config, os.path.basename(preset.vocab_path)
    ('keras_bert', True, 'vocab.txt')
    >>> preset.weights()["bert/embeddings/word_embeddings"].shape
    (92, 16)
    """

    def __init__(self, config, name=None, source=None, path=None, format=None,
                 vocab_path=None, vocab_file=None, do_lower_case=None, metadata=None,
                 weights=None):
        self.config = config
        self.name = name
        self.source = source
        self.path = path
        self.format = format
        self.vocab_path = vocab_path
        self.vocab_file = vocab_file or vocab_path
        self.do_lower_case = do_lower_case
        self.metadata = metadata or {}
        self._weights = weights

    def weights(self, config=None):
        """The canonical weights dict (Google's names and layouts), checked to fit ``config``
        (default: the preset's own) exactly: nothing missing, nothing the config has no
        place for. Read from the directory, then its files checked again (see
        ``check_files`` of the format), so that a save over it meanwhile is an error, not
        weights of another preset. Weights held in memory are checked against ``config``
        alike (when it is given)."""
        if self._weights is not None:
            if config is not None:
                check_shapes({k: np.shape(v) for k, v in self._weights.items()}, config,
                             self.name or self.source)
            return self._weights
        if self.path is None:
            raise CheckpointError(
                f"Preset {self.name!r} was opened without weights (require_weights=False); "
                "load it again with weights to download them."
            )
        module = FORMATS[self.format]
        weights = module.read_weights(self.path, config or self.config)
        module.check_files(self.path, self.metadata)
        return weights

    def variable_shapes(self):
        """Shapes without values where the format allows (Google-style), else from weights()."""
        if self.format in ("keras_bert", "google"):
            return google.variable_shapes(google.find_checkpoint_prefix(self.path))
        return {k: v.shape for k, v in self.weights().items()}

    def __repr__(self):
        layers, hidden = self.config.num_hidden_layers, self.config.hidden_size
        return (f"Preset(name={self.name!r}, format={self.format!r}, path={self.path!r}, "
                f"layers={layers}, hidden={hidden})")


def _vocab(path):
    return path if storage.isfile(path) else None


def open_directory(directory, do_lower_case=None, require_weights=True, known_casing=None):
    """Opens ``directory`` in whatever format it holds, as a `Preset` (named after the
    directory); checks vocab size against config.

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
    module.check_files(directory, metadata)
    config = module.read_config(directory)
    vocab_file = module.vocab_file(directory)
    recorded = module.recorded_casing(directory)
    if require_weights:
        module.check_weights(directory)
    vocab = _vocab(vocab_file)
    check_vocab(vocab, config, source=directory)
    sources = [s for s in (recorded, known_casing) if s is not None]
    lower = casing.resolve(sources, vocab, override=do_lower_case, where=directory)
    return Preset(config, name=os.path.basename(directory.rstrip("/")), source=directory,
                  path=directory, format=fmt, vocab_path=vocab, vocab_file=vocab_file,
                  do_lower_case=lower, metadata=metadata)
