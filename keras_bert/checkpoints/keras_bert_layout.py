"""keras_bert's own saved layout, written by ``save_to_preset`` and by the preset cache.

A keras_bert preset directory is a Google BERT checkpoint directory plus one metadata file,
so Google's own scripts (``run_classifier.py --init_checkpoint=DIR/bert_model.ckpt``) read it
too::

    DIR/
      keras_bert.json                       metadata (below)
      bert_config.json                      Google's config ("gelu" = tanh; "gelu_exact" = erf)
      vocab.txt                             WordPiece vocabulary, one token a line (optional)
      bert_model.ckpt.index                 TF1 checkpoint with Google's variable names,
      bert_model.ckpt.data-00000-of-00001   including cls/ pre-training heads when known

``keras_bert.json``::

    {"format": "keras_bert", "format_version": 1, "do_lower_case": true,
     "name": "...", "source": "...", "config": {...BertConfig fields...},
     "files": {"bert_model.ckpt.index": "<sha256>", "vocab.txt": "<sha256>"}}

``config`` repeats the `BertConfig` exactly (``hidden_act`` in keras_bert's spelling), and
``bert_config.json`` must say the same in Google's: a ``bert_config.json`` that is not JSON,
or from which Google's scripts would build another model, is an error naming both files
and the fields that differ (`read_config`). ``files`` binds the metadata to the files it
was written with: the checkpoint's index (which holds the checksum of every tensor in the
data file) and the vocabulary. A directory whose files are not those (`check_files`: a save
over it replaced some of its files and not yet the others, or was killed in between) is
refused, never read as a mix of two presets; ``save_to_preset``
(`keras_bert.presets.preset_saver`) writes ``keras_bert.json`` first when it replaces a
directory file by file, for that. Metadata without ``files`` is read as it is.
"""

import os

from keras_bert import storage
from keras_bert.checkpoints import casing, google, task_heads
from keras_bert.checkpoints.common import (
    CheckpointError, build_config, check_vocab, read_json_object, require_file,
)
from keras_bert.config import BertConfig

METADATA_FILE = "keras_bert.json"
FORMAT_VERSION = 1
INDEX_FILE = google.CHECKPOINT_PREFIX + ".index"
# Every file of the layout (glob patterns), and the order in which a save that replaces a
# directory file by file (`keras_bert.storage.replacing_dir`) moves them: the metadata
# first, so that a reader checks every other file against it from then on; the index last,
# after the data it describes.
FILES = (METADATA_FILE, google.CONFIG_FILE, google.VOCAB_FILE, INDEX_FILE,
         google.CHECKPOINT_PREFIX + ".data-*")
FIRST = (METADATA_FILE,)
LAST = (INDEX_FILE,)
_BOUND = (INDEX_FILE, google.VOCAB_FILE)  # the files "files" records the sha256 of


def is_layout(directory):
    return storage.isfile(os.path.join(directory, METADATA_FILE))


def read_metadata(directory):
    path = os.path.join(directory, METADATA_FILE)
    values = read_json_object(path, "keras_bert metadata")
    if values.get("format") != "keras_bert":
        raise CheckpointError(f"{path} is not a keras_bert preset metadata file.")
    version = values.get("format_version")
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise CheckpointError(
            f"{path} has format_version {version!r}; this keras_bert reads up to "
            f"{FORMAT_VERSION}. Upgrade keras_bert."
        )
    return values


def recorded_casing(directory, metadata=None):
    """``[(what, do_lower_case)]`` from the metadata; ``[]`` when it says null (unknown)."""
    metadata = read_metadata(directory) if metadata is None else metadata
    source = casing.recorded(os.path.join(directory, METADATA_FILE), "do_lower_case",
                             metadata.get("do_lower_case"))
    return [] if source is None else [source]


def check_files(directory, metadata):
    """`CheckpointError` when the checkpoint index or the vocabulary of ``directory`` is not
    the one its ``metadata`` (keras_bert.json, as read) was written with, or the vocabulary
    it records is missing: files of two saves, which must not be read together. (A missing
    index is left to `check_weights`: a directory may hold an architecture alone.)"""
    recorded = metadata.get("files")
    if recorded is None:
        return
    where = os.path.join(directory, METADATA_FILE)
    if not isinstance(recorded, dict):
        raise CheckpointError(f'{where}: "files" is a {type(recorded).__name__}, not an object.')
    changed = []
    for name, digest in sorted(recorded.items()):
        path = os.path.join(directory, name)
        if not storage.isfile(path):
            if name != INDEX_FILE:
                changed.append(f"{name} (missing)")
        elif storage.sha256(path) != digest:
            changed.append(name)
    if changed:
        raise CheckpointError(
            f"{directory} holds files of two different saves: {', '.join(changed)} "
            f"{'is' if len(changed) == 1 else 'are'} not what {METADATA_FILE} was written "
            "with. A save_to_preset over this directory was interrupted (or is still "
            "running): save the preset there again, or load another copy."
        )


def read_config(directory, metadata=None):
    """The `BertConfig` ``keras_bert.json`` records (Google's ``bert_config.json`` when it
    records none), checked against ``bert_config.json``: one that is not JSON, or from which
    Google's scripts would build another model, is a `CheckpointError` naming both files and
    the fields that differ."""
    values = read_metadata(directory) if metadata is None else metadata
    config = values.get("config")
    if config is None:  # not recorded: Google's file says it
        return google.read_config(directory)
    path = os.path.join(directory, METADATA_FILE)
    if not isinstance(config, dict):
        raise CheckpointError(f'{path}: "config" is a {type(config).__name__}, not an object.')
    config = build_config(path, lambda: BertConfig.from_dict(config))
    _check_google_config(directory, config)
    return config


def _check_google_config(directory, config):
    """`CheckpointError` unless ``bert_config.json`` (when there) describes ``config``,
    compared as the models they build (``hidden_act``: Google's "gelu" is keras_bert's
    "gelu_tanh"), not as text."""
    google_path = os.path.join(directory, google.CONFIG_FILE)
    if not storage.isfile(google_path):
        return
    ours = os.path.join(directory, METADATA_FILE)
    try:
        theirs = google.config_from_json(google_path)
    except CheckpointError as e:
        raise CheckpointError(
            f"{google_path} disagrees with {ours}, which records the config: Google's "
            f"scripts cannot build a model from it ({e}). Save the preset again, or write "
            f"{google.CONFIG_FILE} from {ours}'s config."
        ) from None
    differ = []
    for field, want in config.to_dict().items():
        got = getattr(theirs, field)
        if got == want:
            continue
        if field == "hidden_act":
            spelled = google.config_to_json(theirs)["hidden_act"]
            differ.append(f"hidden_act {spelled!r} (keras_bert's {got!r}) in "
                          f"{google.CONFIG_FILE}, {want!r} in {METADATA_FILE}")
        else:
            differ.append(f"{field} {got!r} in {google.CONFIG_FILE}, {want!r} in "
                          f"{METADATA_FILE}")
    if differ:
        raise CheckpointError(
            f"{google_path} disagrees with {ours}: {'; '.join(differ)}. Google's scripts "
            f"would build another model from {google.CONFIG_FILE} than keras_bert builds from "
            f"{METADATA_FILE}: save the preset again, or make the two files agree."
        )


def write(directory, config, weights, vocab_path=None, do_lower_case=None, name=None,
          source=None, extra=None):
    """Writes ``weights`` (canonical dict) with config, vocab and metadata into a new
    ``directory``; ``extra`` adds keys to the metadata (a task model's ``task`` and
    ``preprocessor``, a hub preset's ``hub``; the layout's own keys win).

    The vocabulary is checked first (there, and of ``config.vocab_size`` tokens), so what is
    written loads back. ``keras_bert.json`` is written last, with the sha256 of the index and
    the vocabulary. To replace an existing preset, write through ``save_to_preset``
    (`keras_bert.presets.preset_saver`), which writes a new directory with this and puts it
    in place of the old one. Local paths, gs://, ram:// (see `keras_bert.storage`).
    """
    vocab_file = os.path.join(directory, google.VOCAB_FILE)
    if vocab_path is not None:
        require_file(vocab_path, "The model's vocabulary",
                     "It was there when the model was loaded; set model.vocab_path to the "
                     "vocabulary, or to None to save without one.")
        check_vocab(vocab_path, config, source=f"Saving to {directory}")
    else:
        storage.remove(vocab_file)  # an earlier one belongs to another model
    google.write_directory(directory, config, weights, vocab_path=vocab_path)
    files = {file: storage.sha256(os.path.join(directory, file)) for file in _BOUND
             if storage.isfile(os.path.join(directory, file))}
    metadata = dict(extra or {})
    metadata.update({
        "format": "keras_bert",
        "format_version": FORMAT_VERSION,
        "do_lower_case": do_lower_case,
        "name": name,
        "source": source,
        "config": config.to_dict(),
        "files": files,
    })
    storage.write_json(os.path.join(directory, METADATA_FILE), metadata)
    return directory

# ---- the format interface (`keras_bert.checkpoints.formats.FORMATS`) ----------------------
detect = is_layout


def read_head(directory, metadata):
    """The `TaskHead` of the task a task preset records (``task``: its class, kind and head
    arguments), or None."""
    return task_heads.recorded_task(metadata, os.path.join(directory, METADATA_FILE))


vocab_file = google.vocab_file
vocabulary = google.vocabulary
check_weights = google.check_weights
list_variables = google.list_variables
read_weights = google.read_weights
