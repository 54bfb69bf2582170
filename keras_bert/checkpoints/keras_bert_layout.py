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
     "name": "...", "source": "...", "config": {...BertConfig fields...}}

``config`` repeats the `BertConfig` exactly (``hidden_act`` in our spelling); it wins over
``bert_config.json`` on load. Every file is written to a temporary name and renamed into
place, metadata last, so a directory with ``keras_bert.json`` is always complete.
"""

import os

from keras_bert import storage
from keras_bert.checkpoints import casing, google
from keras_bert.checkpoints.common import (
    CheckpointError, build_config, check_vocab, read_json_object, require_file,
)
from keras_bert.config import BertConfig

METADATA_FILE = "keras_bert.json"
FORMAT_VERSION = 1


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
    """``(what, do_lower_case)`` from the metadata, or None when it says null (unknown)."""
    metadata = read_metadata(directory) if metadata is None else metadata
    return casing.recorded(os.path.join(directory, METADATA_FILE), "do_lower_case",
                           metadata.get("do_lower_case"))


def read_config(directory):
    values = read_metadata(directory)
    config = values.get("config")
    if config is None:  # not recorded: Google's file says it
        return google.read_config(directory)
    path = os.path.join(directory, METADATA_FILE)
    if not isinstance(config, dict):
        raise CheckpointError(f'{path}: "config" is a {type(config).__name__}, not an object.')
    return build_config(path, lambda: BertConfig.from_dict(config))


def write(directory, config, weights, vocab_path=None, do_lower_case=None, name=None,
          source=None, extra=None):
    """Writes ``weights`` (canonical dict) with config, vocab and metadata into ``directory``;
    ``extra`` adds keys to the metadata (a task model's ``task`` and ``preprocessor``).

    The vocabulary is checked first (there, and of ``config.vocab_size`` tokens), so what is
    written loads back. Without one, a ``vocab.txt`` left in ``directory`` by an earlier save
    is removed: it belongs to another model. An earlier save's ``keras_bert.json`` is removed
    first and the new one written last, so a directory that has one is complete. Local
    paths, gs://, ram:// (see `keras_bert.storage`).
    """
    vocab_file = os.path.join(directory, google.VOCAB_FILE)
    if vocab_path is not None:
        require_file(vocab_path, "The model's vocabulary",
                     "It was there when the model was loaded; set model.vocab_path to the "
                     "vocabulary, or to None to save without one.")
        check_vocab(vocab_path, config, source=f"Saving to {directory}")
    storage.remove(os.path.join(directory, METADATA_FILE))  # incomplete from here on
    if vocab_path is None:
        storage.remove(vocab_file)
    google.write_directory(directory, config, weights, vocab_path=vocab_path)
    metadata = {
        "format": "keras_bert",
        "format_version": FORMAT_VERSION,
        "do_lower_case": do_lower_case,
        "name": name,
        "source": source,
        "config": config.to_dict(),
    }
    metadata.update(extra or {})
    storage.write_json(os.path.join(directory, METADATA_FILE), metadata)
    return directory

# ---- the format interface (`keras_bert.checkpoints.formats.FORMATS`) ----------------------
detect = is_layout
vocab_file = google.vocab_file
check_weights = google.check_weights
read_weights = google.read_weights
