"""`PresetSaver`: the one way keras_bert writes a preset, beside `PresetLoader`, which reads
them (`keras_bert.presets.preset_loader`).

keras-hub's ``PresetSaver`` shape: a saver is made for a directory and a format and writes
what a model gives through its public methods, so this module, two rows below the models,
imports none of them:

* `save_encoder` (``BertEncoder.save_to_preset``): ``bert_config``,
  ``get_canonical_weights()``, and the vocabulary, casing and name ``from_preset`` recorded
  on the encoder (``vocabulary``, ``do_lower_case``, ``preset_name``);
* `save_task` (``Task.save_to_preset``): the encoder's weights and the head's
  (``head_variables()``, under Google's names: `head_weights`), ``head_config()`` and the
  preprocessor's ``get_config()`` and vocabulary, recorded under `TASK_KEY` and
  `PREPROCESSOR_KEY` for the loader to rebuild the same model;
* `save_preset`: a `Preset` as it is (the preset cache converts a downloaded checkpoint
  with it).

The formats (`WRITERS`): ``"keras_bert"`` (the default: Google's layout plus
``keras_bert.json``, which records everything ``from_preset`` needs to rebuild the same
model), ``"huggingface"`` (what transformers' ``Auto*`` classes read: ``config.json`` naming the
``BertFor*`` class of the task, with ``id2label``, ``problem_type``, keras_bert's own task
arguments under ``"keras_bert"``; ``model.safetensors``; the tokenizer files) and
``"google"`` (what the original scripts read: ``bert_config.json``, ``vocab.txt`` and
``bert_model.ckpt`` with their head names, ``output_weights`` or ``cls/squad/*``; nothing
else, so no label names).

Each gathers a `Preset` (the description the loader builds from) and writes it with the
writer `WRITERS` names for the format, into a new directory that then takes the place of
what is there (`keras_bert.storage.replacing_dir`). A reader finds the old preset or the
new one: on a local disk even when the writer is killed; on an object store, while a save
replaces the files one by one (or after a writer was killed there), loading is an error
that says so, never a mix of the two (``keras_bert.json`` goes first and records the
sha256 of the files it goes with: `keras_bert.checkpoints.keras_bert_layout`). Files of the
directory that are not the format's (a training run's logs) stay.

A format is one row of `WRITERS`: the function that writes a `Preset` into an empty
directory, and the files it replaces (glob patterns) with the order they replace earlier ones.

>>> import tempfile
>>> from keras_bert import BertEncoder
>>> from keras_bert.presets import load_preset
>>> path = PresetSaver(tempfile.mkdtemp()).save_encoder(BertEncoder.from_preset("tiny_random"))
>>> load_preset(path).format
'keras_bert'
"""

import collections
import copy
import errno
import hashlib
import os

import numpy as np

from keras_bert import storage, vocab
from keras_bert.checks import keyword_parameters
from keras_bert.checkpoints import (
    google, huggingface, keras_bert_layout, sentence_transformers, task_heads,
)
from keras_bert.checkpoints.common import POOLER, CheckpointError, check_vocab
from keras_bert.checkpoints.formats import Preset
# keras_bert.json keys of a task preset: the task (class, kind and head arguments) and the
# preprocessor's arguments.
from keras_bert.checkpoints.task_heads import PREPROCESSOR_KEY, TASK_KEY

Writer = collections.namedtuple("Writer", "write files first last")
Writer.__doc__ = """How one format is saved: ``write(directory, preset)`` fills an empty
directory; ``files`` are the files it replaces (glob patterns: those of an earlier save, in
this format or another keras_bert writes, that this one lacks are removed), ``first`` and
``last`` the ones moved first and last when a directory is
replaced file by file (see `keras_bert.storage.replacing_dir`).

>>> WRITERS["keras_bert"].first, WRITERS["keras_bert"].last
(('keras_bert.json',), ('bert_model.ckpt.index',))
"""


def _write_keras_bert(directory, preset):
    extra = dict(preset.metadata)
    if preset.head is not None:  # what the files said of the head (id2label, ...)
        extra[task_heads.HEAD_KEY] = preset.head.to_dict()
    keras_bert_layout.write(directory, preset.config, preset.weights(),
                            vocab_path=preset.vocab_path, do_lower_case=preset.do_lower_case,
                            name=preset.name, source=preset.source, extra=extra)


def _write_google(directory, preset):
    google.write_directory(directory, preset.config, preset.weights(),
                           vocab_path=preset.vocab_path)


def _write_huggingface(directory, preset):
    kept = {key: preset.metadata[key] for key in (TASK_KEY, PREPROCESSOR_KEY)
            if key in preset.metadata}
    huggingface.write_directory(directory, preset.config, preset.weights(),
                                vocab_path=preset.vocab_path, head=preset.head,
                                do_lower_case=preset.do_lower_case, extra=kept or None)


def _write_sentence_transformers(directory, preset):
    """A sentence-transformers folder: the embedding a `BertTextEmbedder` (or a
    sentence-transformers preset) describes; an encoder alone gets mean pooling, as
    sentence-transformers gives a plain BERT. Another task's head has no place in it."""
    description = preset.metadata.get(sentence_transformers.METADATA_KEY)
    task = (preset.metadata.get(TASK_KEY) or {}).get("class_name")
    if description is None and task is not None:
        raise CheckpointError(
            f"A sentence-transformers model is an embedder (pooling, projections, "
            f"normalization); a {task}'s head has no place in it. Save a BertTextEmbedder, "
            "or this model in another format.")
    sentence_transformers.write(
        directory, preset.config, preset.weights(),
        description or sentence_transformers.default_description(),
        vocab_path=preset.vocab_path, do_lower_case=preset.do_lower_case)


# Every file of the layouts keras_bert writes: a save in one removes an earlier save's files
# in another, which would be read first (keras_bert.json, then bert_config.json;
# sentence-transformers' modules.json) or by other tools (transformers reads config.json) and
# no longer go with the new files. (Google's layout is keras_bert's without keras_bert.json;
# another checkpoint of a training run, model.ckpt-<step>, is not one of these and stays; so
# do folders such as 1_Pooling/, which nothing reads without modules.json, but for a
# sentence-transformers save, which writes its own.)
_ST_MODULE_FILES = "[0-9]*_*/*"
_WRITTEN_FILES = tuple(dict.fromkeys(
    keras_bert_layout.FILES + huggingface.FILES
    + tuple(f for f in sentence_transformers.FILES if f != _ST_MODULE_FILES)))

# The formats a preset is saved in: {format: Writer}.
WRITERS = {
    "keras_bert": Writer(_write_keras_bert, _WRITTEN_FILES, keras_bert_layout.FIRST,
                         keras_bert_layout.LAST),
    "google": Writer(_write_google, _WRITTEN_FILES, (), (keras_bert_layout.INDEX_FILE,)),
    "huggingface": Writer(_write_huggingface, _WRITTEN_FILES, (), (huggingface.CONFIG_FILE,)),
    "sentence_transformers": Writer(_write_sentence_transformers,
                                    _WRITTEN_FILES + (_ST_MODULE_FILES,), (),
                                    sentence_transformers.LAST),
}


class PresetSaver:
    """Writes presets into ``directory`` (local, gs://, ram://) in ``format``.

    Args:
        directory: where the preset goes: absent, empty, or holding an earlier preset (which
            the new one replaces at once; see the module docstring) and other files (which
            stay).
        format: a key of `WRITERS` (``-`` for ``_`` too: ``"sentence-transformers"``).

    Example:

    >>> import tempfile
    >>> from keras_bert import BertClassifier
    >>> saver = PresetSaver(tempfile.mkdtemp())
    >>> path = saver.save_task(BertClassifier.from_preset("tiny_random", num_classes=3))
    >>> BertClassifier.from_preset(path).num_classes
    3
    """

    def __init__(self, directory, format="keras_bert"):
        format = format.replace("-", "_") if isinstance(format, str) else format
        if format not in WRITERS:
            raise ValueError(f"Unknown preset format {format!r}; presets are saved in "
                             f"{', '.join(map(repr, WRITERS))}.")
        self.directory = os.fspath(directory)
        self.format = format

    def save_encoder(self, encoder):
        """Writes ``encoder`` (a `BertEncoder`): config, weights, and the vocabulary, casing
        and name its ``from_preset`` recorded (none for an encoder built from a config).
        Returns the directory."""
        preset = Preset(encoder.bert_config, name=encoder.preset_name or encoder.name,
                        source=type(encoder).__name__, do_lower_case=encoder.do_lower_case,
                        weights=encoder_weights(encoder))
        return self._save(preset, encoder.vocabulary)

    def save_task(self, task):
        """Writes the task model ``task``: the encoder and the head (Google's names), the
        config, the preprocessor's vocabulary and casing (without a preprocessor, the
        encoder's), and the task's kind (its ``head_task``) and its and the preprocessor's
        arguments. Returns the directory."""
        weights = encoder_weights(task.encoder)
        weights.update(head_weights(task))
        kind, head_config = getattr(task, "head_task", None), task.head_config()
        metadata = {TASK_KEY: {"class_name": type(task).__name__, "config": head_config}}
        if kind is not None:
            metadata[TASK_KEY]["head"] = kind
        metadata.update(task.preset_metadata())
        if task.preprocessor is not None:
            config = task.preprocessor.get_config()
            metadata[PREPROCESSOR_KEY] = {k: config[k] for k in preprocessor_arguments(type(task))
                                          if k in config}
        tokenizer = getattr(task.preprocessor, "tokenizer", None)
        if tokenizer is not None:
            tokens, do_lower_case = tokenizer.get_vocabulary(), tokenizer.do_lower_case
        else:
            tokens, do_lower_case = task.encoder.vocabulary, task.encoder.do_lower_case
        head = None if kind is None else task_heads.from_task_config(
            kind, head_config, type(task).__name__)
        preset = Preset(task.encoder.bert_config, name=task.name, source=type(task).__name__,
                        do_lower_case=do_lower_case, metadata=metadata, weights=weights,
                        head=head)
        return self._save(preset, tokens)

    def save_preset(self, preset):
        """Writes ``preset`` (a `Preset`: its config, ``weights()``, the file at
        ``vocab_path``, casing, name, source and metadata) as it is. Returns the
        directory."""
        if storage.isfile(self.directory):
            raise NotADirectoryError(errno.ENOTDIR, "A preset is a directory; this is a file",
                                     self.directory)
        if preset.vocab_path is None and preset.tokens is not None:
            # tokens from a file of another kind (tokenizer.json): written as vocab.txt
            return self._save(copy.copy(preset), preset.tokens)
        check_vocab(preset.vocab_path, preset.config, source=f"Saving to {self.directory}")
        writer = WRITERS[self.format]
        with storage.replacing_dir(self.directory, first=writer.first, last=writer.last,
                                   replaces=writer.files) as new:
            writer.write(new, preset)
        return self.directory

    def _save(self, preset, tokens):
        """`save_preset` of ``preset`` with ``tokens`` (or None) as its vocabulary."""
        with vocab.vocabulary_file(tokens, beside=_parent(self.directory)) as vocab_path:
            preset.vocab_path = vocab_path
            return self.save_preset(preset)


def _parent(directory):
    """Where a save's temporaries go: beside ``directory``, on its store."""
    directory = directory.rstrip("/")
    return os.path.dirname(directory if storage.is_remote(directory)
                           else os.path.abspath(directory))


# -------------------------------------------------------------------- weights
def pooler_fingerprint(encoder):
    """The sha256 of the encoder's pooler weights. The loader records it on an encoder whose
    checkpoint had no pooler, which it leaves as initialised (``encoder.fresh_pooler``, see
    `keras_bert.presets.preset_loader.assign_encoder_weights`); `encoder_weights` compares."""
    variables = encoder.canonical_variables()
    digest = hashlib.sha256()
    for name in POOLER:
        digest.update(np.ascontiguousarray(variables[name].numpy()).tobytes())
    return digest.hexdigest()


def encoder_weights(encoder):
    """The encoder's canonical weights as a preset holds them: without the pooler when it is
    still the fresh one ``from_preset`` gave a checkpoint without a pooler (nothing trained
    or set it since), so that a saved preset does not pass it off as trained; loading the
    preset then starts it fresh again, and says so."""
    weights = encoder.get_canonical_weights()
    fresh = getattr(encoder, "fresh_pooler", None)
    if fresh is not None and fresh == pooler_fingerprint(encoder):
        for name in POOLER:
            del weights[name]
    return weights


# -------------------------------------------------------------------- task presets
def head_weights(model):
    """The head's weights in Google's names and layouts (numpy), from the task model's
    ``head_variables()``; `keras_bert.presets.preset_loader.load_head_weights` assigns them
    back."""
    out = {}
    for name, (variable, transposed) in model.head_variables().items():
        value = np.asarray(variable.numpy(), dtype=np.float32)
        out[name] = value.T if transposed else value
    return out


def preprocessor_arguments(task_cls):
    """The keyword arguments of the task's preprocessor class (and its keras_bert bases):
    what a task preset records of its preprocessor, and what the loader passes on."""
    pre = task_cls.preprocessor_cls
    skip = ("tokenizer", "do_lower_case")
    names = set(keyword_parameters(pre.__init__, skip=skip))
    for base in pre.__mro__[1:]:
        if base.__module__.startswith("keras_bert.") and "__init__" in vars(base):
            names |= set(keyword_parameters(base.__init__, skip=skip))
    return tuple(sorted(names - {"name", "dtype", "trainable", "autocast"}))
