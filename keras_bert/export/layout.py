"""Where exports go: checks of the target directory and the atomic write of a SavedModel.

An export is written into a locked ``.tmp-*`` directory beside its target (see
`keras_bert.checkpoints.tempdirs`) and renamed into place once `tf.saved_model.save` has
finished, so the target is either absent or a complete SavedModel: a failed or killed export
leaves nothing half-written that a server watching the parent could pick up.

TF Serving's layout: ``tensorflow_model_server --model_base_path=<base>/<name>`` serves the
numbered version directories under it (the newest, by default), so a serving export goes
to ``<base>/<name>/<version>``, e.g. ``model.export("/models/sentiment/1")``.
"""

import os

import tensorflow as tf

from keras_bert.checkpoints import tempdirs


class ExportError(ValueError):
    """An export that cannot be written: a bad target directory, a model of the wrong kind,
    or a model that lacks what the export needs (a preprocessor, a vocabulary).

    >>> from keras_bert.export import ExportError
    >>> from keras_bert.export.layout import check_target
    >>> try:
    ...     check_target("gs://my-bucket/models/sentiment/1")
    ... except ExportError as error:
    ...     print(error)
    export_dir=gs://my-bucket/models/sentiment/1: exports are written to a local directory ...
    """


def check_target(export_dir, versioned=False):
    """``export_dir`` as an absolute local path that can receive an export, or ExportError.

    The directory must not exist or be empty (an export never overwrites one), its parent
    must be creatable, and with ``versioned`` its name must be a version number (digits),
    as TF Serving only loads numbered version directories.
    """
    if not isinstance(export_dir, (str, os.PathLike)) or not os.fspath(export_dir):
        raise ExportError(f"export_dir must be a directory path, got {export_dir!r}.")
    export_dir = os.fspath(export_dir)
    if "://" in export_dir:
        raise ExportError(
            f"export_dir={export_dir}: exports are written to a local directory (atomically, "
            "by a rename); export locally, then copy it (e.g. gsutil cp -r).")
    export_dir = os.path.abspath(export_dir)
    if versioned:
        base, version = os.path.split(export_dir)
        if not version.isdigit():
            raise ExportError(
                f"export_dir={export_dir}: TF Serving loads a model from numbered version "
                "directories, <base>/<name>/<version> (its --model_base_path is "
                "<base>/<name>); give the version directory, e.g. "
                f"{os.path.join(export_dir, '1')}.")
    if os.path.lexists(export_dir):
        if not os.path.isdir(export_dir):
            raise ExportError(f"export_dir={export_dir} exists and is not a directory.")
        if os.listdir(export_dir):
            raise ExportError(
                f"export_dir={export_dir} already exists and is not empty; an export never "
                "overwrites one: remove it, or export to a new version directory.")
    parent = os.path.dirname(export_dir)
    existing = parent
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing) or not os.access(existing, os.W_OK | os.X_OK):
        raise ExportError(f"export_dir={export_dir}: cannot create it ({existing} is not a "
                          "writable directory).")
    return export_dir


def next_version(model_base_path):
    """The version directory after the newest one under ``model_base_path``
    (``<base>/<name>/1`` when there is none), for exporting a new version."""
    base = os.path.abspath(os.fspath(model_base_path))
    versions = [int(n) for n in (os.listdir(base) if os.path.isdir(base) else [])
                if n.isdigit() and os.path.isdir(os.path.join(base, n))]
    return os.path.join(base, str(max(versions, default=0) + 1))


def save(root, export_dir, signatures=None, versioned=False):
    """Saves the trackable ``root`` as a SavedModel at ``export_dir`` atomically (see the
    module docstring); returns the absolute path."""
    export_dir = check_target(export_dir, versioned=versioned)
    parent = os.path.dirname(export_dir)
    with tempdirs.locked_tempdir(parent) as work:
        tmp = os.path.join(work, os.path.basename(export_dir))
        tf.saved_model.save(root, tmp, signatures=signatures)
        check_target(export_dir, versioned=versioned)  # nothing appeared meanwhile
        if os.path.isdir(export_dir):
            os.rmdir(export_dir)  # empty (checked): the rename takes its place
        os.replace(tmp, export_dir)
    return export_dir
