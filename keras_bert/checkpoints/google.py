"""Google's original TF1 BERT checkpoints (google-research/bert).

A checkpoint directory holds ``bert_config.json``, ``vocab.txt`` and the checkpoint
``bert_model.ckpt`` (files ``bert_model.ckpt.index`` and ``bert_model.ckpt.data-*``). Variable
names and layouts are already the canonical ones (see `keras_bert.checkpoints.common`), so
reading keeps the ``bert/`` and ``cls/`` variables and drops optimizer state (``*/adam_m``,
``*/adam_v``, ``global_step``, ...). Writing produces the same format with TensorFlow's own
``SaveV2`` op, readable by ``tf.compat.v1.train.Saver`` and ``tf.train.load_checkpoint``.
"""

import os

import numpy as np
import tensorflow as tf

from keras_bert import storage
from keras_bert.checkpoints.common import (
    CheckpointError, build_config, check_shapes, plain_vocabulary, read_json_object,
    require_file,
)
from keras_bert.config import BertConfig

CONFIG_FILE = "bert_config.json"
VOCAB_FILE = "vocab.txt"
CHECKPOINT_PREFIX = "bert_model.ckpt"
STATE_FILE = "checkpoint"  # TensorFlow's record of a directory's checkpoints
# Every file this format reads (see `keras_bert.checkpoints.formats.check_links`).
FILES = (CONFIG_FILE, VOCAB_FILE, "*.ckpt*", STATE_FILE)

_SLOT_SUFFIXES = ("/adam_m", "/adam_v", "/Adam", "/Adam_1", "/Momentum", "/ExponentialMovingAverage")


# Task heads of Google's fine-tuning scripts live outside bert/ (run_classifier.py's) or under
# cls/ (run_squad.py's cls/squad/*): see keras_bert.checkpoints.task_heads.
TASK_HEAD_VARIABLES = ("output_weights", "output_bias")


def _is_model_variable(name):
    if name in TASK_HEAD_VARIABLES:
        return True
    if not name.startswith(("bert/", "cls/")):
        return False
    return not name.endswith(_SLOT_SUFFIXES)


def find_checkpoint_prefix(directory):
    """The checkpoint prefix inside ``directory``: ``bert_model.ckpt``, else the only
    ``*.ckpt*.index``, else, of several (a fine-tuning run's ``--output_dir``, which keeps its
    last five ``model.ckpt-<step>``), the one its ``checkpoint`` file names, TensorFlow's
    latest."""
    prefix = os.path.join(directory, CHECKPOINT_PREFIX)
    if storage.isfile(prefix + ".index"):
        return prefix
    indexes = storage.glob(os.path.join(directory, "*.ckpt*.index"))
    if len(indexes) == 1:
        return indexes[0][: -len(".index")]
    if len(indexes) > 1:
        latest = _latest(directory)
        if latest is not None and storage.isfile(latest + ".index"):
            return latest
        names = sorted(os.path.basename(index)[: -len(".index")] for index in indexes)
        raise CheckpointError(
            f"{directory} holds {len(names)} TF checkpoints ({', '.join(names)}) and no "
            f"{STATE_FILE} file naming the latest: keep the one to load, or restore the "
            f"{STATE_FILE} file TensorFlow wrote beside them.")
    raise CheckpointError(
        f"No TF checkpoint in {directory}: expected {CHECKPOINT_PREFIX}.index and "
        f"{CHECKPOINT_PREFIX}.data-00000-of-00001 beside {CONFIG_FILE}."
    )


def _latest(directory):
    """The prefix the ``checkpoint`` state file of ``directory`` names, or None."""
    if not storage.isfile(os.path.join(directory, STATE_FILE)):
        return None
    try:
        return tf.train.latest_checkpoint(directory)
    except (tf.errors.OpError, ValueError):
        return None


def _reader(prefix):
    index = prefix + ".index"
    require_file(index, "Checkpoint index")
    data = storage.glob(prefix + ".data-*")
    if not data:
        raise CheckpointError(f"Checkpoint data file not found: {prefix}.data-00000-of-00001.")
    try:
        return tf.compat.v1.train.NewCheckpointReader(prefix)  # any tf.io.gfile path
    except Exception as e:  # tf raises DataLossError, NotFoundError, ... for broken files
        raise CheckpointError(
            f"Cannot read the TF checkpoint {prefix} ({index}, {', '.join(sorted(data))}): "
            f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        ) from None


def variable_shapes(prefix, reader=None):
    """``{name: shape}`` of the model variables in a checkpoint, from its index (the
    variable map of TensorFlow's checkpoint reader), without reading values."""
    reader = reader or _reader(prefix)
    shapes = {k: tuple(v) for k, v in reader.get_variable_to_shape_map().items()
              if _is_model_variable(k)}
    if not shapes:
        raise CheckpointError(
            f"{prefix}: no bert/ or cls/ variables; this is not a Google BERT checkpoint "
            "(TF2 Model Garden checkpoints use other names)."
        )
    return shapes


def read_checkpoint(prefix, config=None):
    """Reads the ``bert/`` and ``cls/`` variables of a TF1 checkpoint into a canonical dict.

    With ``config``, every variable's shape is checked against it before values are read.
    """
    reader = _reader(prefix)
    shapes = variable_shapes(prefix, reader)
    if config is not None:
        check_shapes(shapes, config, prefix)
    weights = {}
    for name in shapes:
        try:
            weights[name] = np.asarray(reader.get_tensor(name), dtype=np.float32)
        except Exception as e:
            raise CheckpointError(
                f"Cannot read variable {name} from {prefix}: {type(e).__name__}: {e}"
            ) from None
    return weights


def write_checkpoint(weights, prefix):
    """Writes a canonical dict as a TF1 checkpoint at ``prefix`` (atomically, file by file).

    The files are written into a temporary directory beside the target (see
    `keras_bert.storage.staging_dir`) and then moved beside ``prefix``, the ``.index`` last,
    so an interrupted write never leaves a half-written checkpoint under ``prefix``, and
    what a killed writer left locally is swept. Local paths, gs://, ram://.
    """
    prefix = os.fspath(prefix)
    directory = os.path.dirname(prefix if storage.is_remote(prefix) else os.path.abspath(prefix))
    base = os.path.basename(prefix)
    names = sorted(weights)
    with storage.staging_dir(directory, prefix=".tmp-ckpt-") as tmp:
        with tf.device("CPU:0"):
            tf.raw_ops.SaveV2(
                prefix=os.path.join(tmp, base),
                tensor_names=names,
                shape_and_slices=[""] * len(names),
                tensors=[tf.constant(np.asarray(weights[n], dtype=np.float32)) for n in names],
            )
        # An earlier checkpoint's index goes first (it does not describe the new data), the
        # new data next, its index last: a checkpoint is only visible once its index is.
        storage.remove(os.path.join(directory, base + ".index"))
        storage.move_files(tmp, directory, last=[base + ".index"])
    return prefix


# What Google's "hidden_act" strings really compute, and back.
ACT_TO_OURS = {
    "gelu": "gelu_tanh",  # google-research/bert modeling.gelu is the tanh approximation.
    "gelu_exact": "gelu",  # written by us for erf-GELU models; Google's code cannot run it.
    "relu": "relu",
    "tanh": "tanh",
    "linear": "linear",
    "silu": "silu",
}
OURS_TO_ACT = {"gelu_tanh": "gelu", "gelu": "gelu_exact"}


def config_from_json(path):
    """`BertConfig` from a Google ``bert_config.json`` ("gelu" there is the tanh form); any
    problem is a `CheckpointError` naming ``path``."""
    require_file(path, "Google BERT config")
    values = read_json_object(path, "Google BERT config")
    act = values.get("hidden_act", "gelu")
    if act not in ACT_TO_OURS:
        raise CheckpointError(f"{path}: hidden_act {act!r} is not one Google's modeling.py "
                              f"computes ({sorted(ACT_TO_OURS)}).")
    values["hidden_act"] = ACT_TO_OURS[act]
    # Fields we do not model ("directionality" of the multilingual and Chinese checkpoints,
    # pooler_* in some) are ignored.
    return build_config(path, lambda: BertConfig.from_file_values(path, values))


def config_to_json(config):
    """The ``bert_config.json`` values of ``config``, in Google's spelling."""
    values = config.to_dict()
    values["hidden_act"] = OURS_TO_ACT.get(config.hidden_act, config.hidden_act)
    return values


def write_config(config, path):
    """Writes ``config`` as Google's ``bert_config.json``, atomically."""
    storage.write_json(path, config_to_json(config))


def read_config(directory):
    """`BertConfig` from ``directory/bert_config.json``."""
    return config_from_json(os.path.join(directory, CONFIG_FILE))


def write_directory(directory, config, weights, vocab_path=None):
    """Writes a Google-format directory: ``bert_config.json``, ``vocab.txt``, ``bert_model.ckpt.*``."""
    storage.makedirs(directory)
    write_checkpoint(weights, os.path.join(directory, CHECKPOINT_PREFIX))
    write_config(config, os.path.join(directory, CONFIG_FILE))
    if vocab_path is not None:
        storage.copy(vocab_path, os.path.join(directory, VOCAB_FILE))
    return directory

# ---- the format interface (`keras_bert.checkpoints.formats.FORMATS`) ----------------------
def detect(directory):
    """True when ``directory`` holds Google's layout (``bert_config.json``)."""
    return storage.isfile(os.path.join(directory, CONFIG_FILE))


def read_metadata(directory):
    """Google's layout records nothing beyond the config."""
    return {}


def check_files(directory, metadata):
    """Google's layout records nothing to check its files against."""


def read_head(directory, metadata):
    """Google's files do not say which task a head belongs to (its names tell what they can:
    `keras_bert.checkpoints.task_heads`): None."""
    return None


def recorded_casing(directory):
    """Google's files do not record the casing (the registry or the vocabulary tells)."""
    return []


def vocab_file(directory):
    return os.path.join(directory, VOCAB_FILE)


def vocabulary(directory):
    """``(vocab.txt, None)``, or ``(None, None)`` when there is none."""
    return plain_vocabulary(vocab_file(directory))


def check_weights(directory):
    """`CheckpointError` now when the checkpoint files are missing."""
    find_checkpoint_prefix(directory)


def list_variables(directory, config):
    """``(shapes, unexplained, source)``: the checkpoint's variables and their shapes, read
    from its index alone (no tensor is read); nothing unexplained (Google's names are the
    canonical ones)."""
    prefix = find_checkpoint_prefix(directory)
    return variable_shapes(prefix), [], prefix


def read_weights(directory, config):
    """The canonical weights of ``directory``'s checkpoint, checked against ``config``."""
    return read_checkpoint(find_checkpoint_prefix(directory), config)
