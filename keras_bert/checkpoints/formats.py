"""Recognising a checkpoint directory (local, gs://, ram://: read through
`keras_bert.storage`), opening it in any supported format, and `Preset`, the one description
of a preset.

`FORMATS` is the one table of formats, in the order they are recognised. Each is a module
with the same functions:

* ``detect(directory)``: whether the directory holds this format;
* ``read_config(directory)``: its `BertConfig`;
* ``read_metadata(directory)``: what else it records (keras_bert's layout: keras_bert.json;
  Hugging Face: the task and preprocessor arguments keras_bert keeps in ``config.json``; else
  ``{}``);
* ``read_head(directory, metadata)``: the `TaskHead` its files describe (which task its head
  belongs to, label names, ...: `keras_bert.checkpoints.task_heads`), or None;
* ``check_files(directory, metadata)``: `CheckpointError` when the files are not the ones
  the metadata was written with (keras_bert's layout; nothing to check in the others);
* ``recorded_casing(directory)``: ``[(what, do_lower_case)]``, what the files say (``[]``:
  nothing);
* ``vocab_file(directory)``: where the format keeps its vocabulary (there or not);
* ``vocabulary(directory)``: ``(vocab_path, tokens)``: the plain vocabulary file (one token a
  line) when there is one, else the tokens when the format keeps them in another file (a
  Hugging Face ``tokenizer.json``), else ``(None, None)``;
* ``check_weights(directory)``: `CheckpointError` now when weights files are missing;
* ``list_variables(directory, config)``: ``(shapes, unexplained, source)``, the checkpoint's
  variables (task heads too) in Google's names with their shapes, read without reading a
  tensor (Google: the checkpoint reader's variable map; Hugging Face: the safetensors header;
  keras-hub: the h5 datasets), the names in the encoder's part that have no place for ``config``, and the
  file; `Preset.check_variables` holds them to ``config`` with `common.check_shapes`;
* ``read_weights(directory, config)``: the canonical weights (Google's names), task heads
  included, checked against ``config``;
* ``FILES``: the files it reads (glob patterns), which `check_links` holds inside the
  directory.

Writers: `keras_bert_layout.write` (keras_bert), `google.write_directory`,
`huggingface.write_directory`, `sentence_transformers.write`; ``save_to_preset(directory,
format=...)`` chooses among them in `keras_bert.presets.preset_saver`.

`open_directory` returns a `Preset`: the config, vocabulary and casing read eagerly (cheap,
and checked against each other at once), the weights read on demand.
"""

import os

import numpy as np

from keras_bert import storage
from keras_bert.checkpoints import (casing, google, huggingface, keras_bert_layout, keras_hub,
                                    sentence_transformers)
from keras_bert.checkpoints.common import CheckpointError, check_shapes, check_vocab
from keras_bert.vocab import load_vocabulary

FORMATS = {  # recognised in this order: a keras_bert preset is also a Google directory
    "keras_bert": keras_bert_layout,
    "google": google,
    "keras_hub": keras_hub,
    "sentence_transformers": sentence_transformers,  # a Hugging Face checkpoint and more
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
    `FORMATS` key, or None), ``vocab_path`` (the vocabulary file, one token a line, or None),
    ``tokens`` (the vocabulary when it is in no such file: a Hugging Face ``tokenizer.json``'s;
    else None), ``vocab_file`` (where the format keeps its vocabulary, there or not),
    ``do_lower_case``, ``metadata`` (what else it records: keras_bert.json's contents; a task
    preset's ``task`` and ``preprocessor``), ``head`` (the `TaskHead` its files describe, or
    None). ``vocabulary`` is the list of tokens (from either) or None, ``has_vocabulary``
    says whether there is one.

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
                 weights=None, tokens=None, head=None):
        self.config = config
        self.name = name
        self.source = source
        self.path = path
        self.format = format
        self.vocab_path = vocab_path
        self.tokens = tokens
        self.vocab_file = vocab_file or vocab_path
        self.do_lower_case = do_lower_case
        self.metadata = metadata or {}
        self.head = head
        self._weights = weights

    @property
    def has_vocabulary(self):
        return self.vocab_path is not None or self.tokens is not None

    @property
    def vocabulary(self):
        """The tokens (id = position), or None when the preset has no vocabulary."""
        if self.tokens is not None:
            return list(self.tokens)
        return None if self.vocab_path is None else load_vocabulary(self.vocab_path)

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
        config = config or self.config
        self.check_variables(config)  # names and shapes first, from the file's index
        module = FORMATS[self.format]
        weights = module.read_weights(self.path, config)
        module.check_files(self.path, self.metadata)
        return weights

    def variable_shapes(self, config=None):
        """``{name: shape}`` of the checkpoint's variables (Google's names and layouts),
        read without reading a tensor (see ``list_variables`` of the formats)."""
        if self._weights is not None:
            return {name: tuple(np.shape(value)) for name, value in self._weights.items()}
        return self._list_variables(config or self.config)[0]

    def check_variables(self, config=None):
        """`CheckpointError` unless the checkpoint's variables fit ``config`` (default: the
        preset's own) exactly, names and shapes (`common.check_shapes`), checked from the
        file's index or header, before any tensor is read or any model built."""
        config = config or self.config
        if self._weights is not None:
            shapes, unexplained, source = self.variable_shapes(), [], self.name
        else:
            shapes, unexplained, source = self._list_variables(config)
        check_shapes(shapes, config, source, unexplained)

    def _list_variables(self, config):
        if self.path is None:
            raise CheckpointError(
                f"Preset {self.name!r} was opened without weights (require_weights=False); "
                "load it again with weights to download them."
            )
        return FORMATS[self.format].list_variables(self.path, config)

    def __repr__(self):
        layers, hidden = self.config.num_hidden_layers, self.config.hidden_size
        return (f"Preset(name={self.name!r}, format={self.format!r}, path={self.path!r}, "
                f"layers={layers}, hidden={hidden})")


def _within(path, root):
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _hub_cache_blobs(directory):
    """The blobs of a Hugging Face Hub cache's repository when ``directory`` is one of its
    snapshots (huggingface_hub's layout: ``models--<owner>--<name>/snapshots/<commit>/<file>``
    links to ``models--<owner>--<name>/blobs/<hash>``), else None."""
    snapshots = os.path.dirname(os.path.abspath(directory).rstrip(os.sep))
    repository = os.path.dirname(snapshots)
    if os.path.basename(snapshots) == "snapshots" and \
            os.path.basename(repository).startswith("models--"):
        return os.path.realpath(os.path.join(repository, "blobs"))
    return None


def check_links(directory):
    """`CheckpointError` when a file that any format reads in the local ``directory`` (the
    ``FILES`` of `FORMATS`) is a link to somewhere outside it, or lies under a linked folder
    that is: a preset directory holds its files, and a ``vocab.txt`` linked to a system file
    is neither read nor reported on. Links within the directory are followed, and so are the
    links of a Hugging Face Hub cache's snapshot into the same repository's blobs (how
    huggingface_hub lays out its cache). Object stores (``gs://``) have no links."""
    directory = os.fspath(directory)
    if storage.is_remote(directory):
        return
    roots = [os.path.realpath(directory), _hub_cache_blobs(directory)]
    patterns = sorted({pattern for module in FORMATS.values() for pattern in module.FILES})
    for pattern in patterns:
        for path in storage.glob(os.path.join(directory, pattern)):
            target = os.path.realpath(path)
            if any(root and _within(target, root) for root in roots):
                continue
            how = ("is a link to" if os.path.islink(path)
                   else "lies in a linked folder and leads to")
            raise CheckpointError(
                f"{path} {how} {target}, outside the preset directory {directory}: a preset's "
                "files must lie inside it (links within it are fine). Copy the file in.")


def open_directory(directory, do_lower_case=None, require_weights=True, known_casing=None):
    """Opens ``directory`` in whatever format it holds, as a `Preset` (named after the
    directory); checks vocab size against config. Its files must lie inside it
    (`check_links`), checked before any is read.

    Casing comes from the directory's metadata, then ``known_casing`` (a ``(what,
    do_lower_case)`` from outside the directory, e.g. the registry entry of a registry
    preset), then the vocabulary (see `keras_bert.checkpoints.casing`); sources that disagree
    are an error. ``do_lower_case`` is the caller's choice and overrides them all. With
    ``require_weights`` (the default) a Google-style directory without its checkpoint files
    fails here, at once; pass False to open only config and vocabulary (an architecture
    without weights).
    """
    directory = os.fspath(directory)
    check_links(directory)
    fmt = detect_format(directory)
    module = FORMATS[fmt]
    metadata = module.read_metadata(directory)
    module.check_files(directory, metadata)
    config = module.read_config(directory)
    head = module.read_head(directory, metadata)
    vocab_file = module.vocab_file(directory)
    # What the files say of the casing; nothing to read when the caller decides it.
    recorded = module.recorded_casing(directory) if do_lower_case is None else []
    if require_weights:
        module.check_weights(directory)
    vocab, tokens = module.vocabulary(directory)
    check_vocab(vocab, config, source=directory, tokens=tokens, tokens_from=vocab_file)
    sources = recorded + ([known_casing] if known_casing is not None else [])
    lower = casing.resolve(sources, vocab or (vocab_file if tokens is not None else None),
                           override=do_lower_case, where=directory, tokens=tokens)
    return Preset(config, name=os.path.basename(directory.rstrip("/")), source=directory,
                  path=directory, format=fmt, vocab_path=vocab, vocab_file=vocab_file,
                  do_lower_case=lower, metadata=metadata, tokens=tokens, head=head)
