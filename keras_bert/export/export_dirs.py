"""Where exports go: checks of the target directory and the atomic write of a SavedModel.

Exports go to a local directory or to an object store (``gs://...``, ``ram://...``) through
`keras_bert.storage`. A local export is written into a locked ``.tmp-*`` directory beside its
target and renamed into place once `tf.saved_model.save` has finished, so the target is
either absent or a complete SavedModel. On an object store (which renames files, not
directories) it is written in a ``.tmp-*`` directory beside the target and its files are
then moved into the target with ``saved_model.pb`` last: the file TF Serving and
`tf.saved_model.load` read first is there only once everything else is. Either way a failed
or killed export leaves nothing that a server watching the parent takes for a SavedModel.

TF Serving's layout: ``tensorflow_model_server --model_base_path=<base>/<name>`` serves the
numbered version directories under it (the newest, by default), so a serving export goes
to ``<base>/<name>/<version>``, e.g. ``model.export("/models/sentiment/1")`` or
``model.export("gs://bucket/models/sentiment/1")``.
"""

import os

import tensorflow as tf

from keras_bert import storage

SAVED_MODEL_FILE = "saved_model.pb"


class ExportError(ValueError):
    """An export that cannot be written: a bad target directory, a model of the wrong kind,
    or a model that lacks what the export needs (a preprocessor, a vocabulary).

    >>> from keras_bert.export import ExportError
    >>> from keras_bert.export.export_dirs import check_target
    >>> try:
    ...     check_target("gs://my-bucket/models/sentiment/latest", versioned=True)
    ... except ExportError as error:
    ...     print(error)
    export_dir=gs://my-bucket/models/sentiment/latest: TF Serving loads a model from numbered ...
    """


def check_target(export_dir, versioned=False):
    """``export_dir`` as a path that can receive an export (absolute, when local), or
    ExportError.

    The directory must not exist or be empty (an export never overwrites one), a local one's
    parent must be creatable, and with ``versioned`` its name must be a version number
    (digits), as TF Serving only loads numbered version directories. ``gs://...`` and other
    object stores are welcome (see the module docstring).
    """
    if not isinstance(export_dir, (str, os.PathLike)) or not os.fspath(export_dir):
        raise ExportError(f"export_dir must be a directory path, got {export_dir!r}.")
    export_dir = os.fspath(export_dir).rstrip("/") or os.fspath(export_dir)
    remote = storage.is_remote(export_dir)
    if not remote:
        export_dir = os.path.abspath(export_dir)
    if versioned:
        base, version = os.path.split(export_dir)
        if not version.isdigit():
            raise ExportError(
                f"export_dir={export_dir}: TF Serving loads a model from numbered version "
                "directories, <base>/<name>/<version> (its --model_base_path is "
                "<base>/<name>); give the version directory, e.g. "
                f"{os.path.join(export_dir, '1')}.")
    if remote:
        if storage.isfile(export_dir):
            raise ExportError(f"export_dir={export_dir} exists and is not a directory.")
        if storage.isdir(export_dir) and storage.listdir(export_dir):
            raise _not_empty(export_dir)
        return export_dir  # whether the store takes writes is known by writing
    if os.path.lexists(export_dir):
        if not os.path.isdir(export_dir):
            raise ExportError(f"export_dir={export_dir} exists and is not a directory.")
        if storage.listdir(export_dir):
            raise _not_empty(export_dir)
    parent = os.path.dirname(export_dir)
    existing = parent
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing) or not os.access(existing, os.W_OK | os.X_OK):
        raise ExportError(f"export_dir={export_dir}: cannot create it ({existing} is not a "
                          "writable directory).")
    return export_dir


def _not_empty(export_dir):
    return ExportError(
        f"export_dir={export_dir} already exists and is not empty; an export never "
        "overwrites one: remove it, or export to a new version directory.")


def next_version(model_base_path):
    """The version directory after the newest one under ``model_base_path``
    (``<base>/<name>/1`` when there is none), for exporting a new version. Local paths,
    gs://, ram://."""
    base = os.fspath(model_base_path).rstrip("/")
    if not storage.is_remote(base):
        base = os.path.abspath(base)
    names = storage.listdir(base) if storage.isdir(base) else []
    versions = [int(n) for n in names if n.isdigit() and storage.isdir(os.path.join(base, n))]
    return os.path.join(base, str(max(versions, default=0) + 1))


def save(root, export_dir, signatures=None, versioned=False, write_more=None, options=None):
    """Saves the trackable ``root`` as a SavedModel at ``export_dir`` atomically (see the
    module docstring); returns the path (absolute, for a local one). ``write_more(tmp)``,
    if given, adds files to the export before it is moved into place. ``options``: a
    `tf.saved_model.SaveOptions`."""
    export_dir = check_target(export_dir, versioned=versioned)
    with storage.atomic_dir(export_dir, last=(SAVED_MODEL_FILE,)) as tmp:
        tf.saved_model.save(root, tmp, signatures=signatures, options=options)
        if write_more is not None:
            write_more(tmp)
        check_target(export_dir, versioned=versioned)  # nothing appeared meanwhile
    return export_dir
