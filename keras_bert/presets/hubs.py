"""Downloads from the Hugging Face Hub and Kaggle, through the hubs' own clients.

``hf://owner/name[@revision]`` goes through ``huggingface_hub`` (``HfApi.model_info`` for
the file list and the commit, then ``hf_hub_download`` of the files a BERT needs: the config,
one weights file, the vocabulary and the tokenizer config; a sentence-transformers model's
modules too, whose description the converted copy keeps); ``kaggle://owner/model/framework/
variation[/version]`` through ``kagglehub.model_download`` (keras-hub's preset layout:
``config.json``, ``model.weights.h5``, ``assets/tokenizer/vocabulary.txt``...). Both are the
``[hub]`` extra (``requirements-hub.txt``), imported only here, when a handle is loaded.

What arrives is checked (the expected files; the weights file's sha256 against the one the
Hugging Face Hub lists for it, and against ``sha256=`` when given; every variable's shape
against the config) and converted once into keras_bert's layout under the cache root::

    hub/hf/<owner>/<name>/<revision or main>/
    hub/kaggle/<owner>/<model>/<framework>/<variation>/<version or latest>/

The hub's files are fetched into a locked ``.tmp-*`` directory beside that target, converted
there and the result renamed into place, so nothing half-written is ever taken for a preset,
and the raw files go with the temporary directory. A handle without a revision or version
is resolved once, when it is first loaded; the converted copy's ``keras_bert.json`` records
the commit (or version) it came from.

Endpoints: ``HF_ENDPOINT`` (huggingface_hub's variable, read at each load) and kagglesdk's
``KAGGLE_API_ENVIRONMENT``. Offline, a load fails within ``KERAS_BERT_DOWNLOAD_TIMEOUT``
seconds (10 by default) with a message naming the handle, the address tried and how to
fetch the files by hand: the first request to the Hugging Face Hub is made with that timeout
and without retries, and the Kaggle API's host is probed with it before kagglehub, whose
requests have no timeout, is called.
"""

import contextlib
import os
import socket
import sys
import urllib.parse
import urllib.request

from keras_bert import storage
from keras_bert.checkpoints import huggingface, keras_bert_layout, keras_hub, sentence_transformers
from keras_bert.checkpoints.common import CheckpointError
from keras_bert.checkpoints.formats import open_directory
from keras_bert.presets import download
from keras_bert.presets.preset_saver import PresetSaver

HF_DEFAULT_ENDPOINT = "https://huggingface.co"
# The first one there (tf_model.h5: a repository of transformers' TensorFlow classes alone).
HF_WEIGHTS = (huggingface.SAFETENSORS_FILE, huggingface.TORCH_FILE, huggingface.TF_FILE)
HF_FILES = (huggingface.CONFIG_FILE, huggingface.VOCAB_FILE, huggingface.TOKENIZER_CONFIG_FILE)
KERAS_HUB_FILES = (keras_hub.CONFIG_FILE, keras_hub.WEIGHTS_FILE, keras_hub.TOKENIZER_FILE,
                   keras_hub.VOCAB_FILE, "metadata.json", keras_hub.TASK_FILE,
                   keras_hub.TASK_WEIGHTS_FILE)  # (the task's, where a task preset has them)
INSTALL = "pip install 'keras-bert-zoo[hub]' (requirements-hub.txt)"


def cache_dir(handle):
    """The converted copy of ``handle`` (a `keras_bert.presets.handles.Handle`)."""
    return os.path.join(download.cache_root(), "hub", *handle.cache_parts)


def hf_endpoint():
    return os.environ.get("HF_ENDPOINT", HF_DEFAULT_ENDPOINT).rstrip("/")


def hf_url(handle):
    """The web page of the repository at the handle's revision."""
    url = f"{hf_endpoint()}/{handle.repo_id}"
    return url + (f"/tree/{urllib.parse.quote(handle.revision, safe='')}"
                  if handle.revision else "")


def kaggle_endpoint():
    """The Kaggle API's address, as kagglesdk chooses it (``KAGGLE_API_ENVIRONMENT``)."""
    from kagglesdk.kaggle_env import get_endpoint, get_env

    return get_endpoint(get_env())


def kaggle_url(handle):
    """The model's page on Kaggle (what ``kagglehub`` calls its URL)."""
    from kagglesdk.kaggle_env import get_env, get_web_endpoint

    return f"{get_web_endpoint(get_env())}/models/{handle.kaggle_handle}"


def manual_route(handle):
    """How to fetch ``handle`` by hand and load it from a directory."""
    if handle.hub == "hf":
        files = " ".join(HF_FILES[:2] + HF_WEIGHTS[:1])
        revision = f" --revision {handle.revision}" if handle.revision else ""
        return (f"To load it by hand, on a machine with internet access run `hf download "
                f"{handle.repo_id} {files}{revision} --local-dir DIR` (huggingface_hub's CLI; "
                f"or download those files from {hf_url(handle)}), copy DIR here and pass it "
                "to from_preset(DIR).")
    return (f"To load it by hand, download the model from {kaggle_url(handle)} on a machine "
            "with internet access (a .tar.gz of its files), unpack it into a directory, copy "
            "it here and pass it to from_preset(directory).")


def _import(module):
    try:
        return __import__(module)
    except ImportError:
        raise CheckpointError(
            f"Loading a hub handle needs {module}, which is not installed: {INSTALL}."
        ) from None


def _unreachable(handle, url, reason):
    return download.DownloadError(
        f"Cannot download {handle}: {url} cannot be reached ({reason}). {manual_route(handle)}")


# ------------------------------------------------------------------------ Hugging Face
def _hf_files(handle, siblings):
    """The files to fetch from a repository holding ``siblings`` (name -> sibling)."""
    names = set(siblings)
    if keras_hub.WEIGHTS_FILE in names and keras_hub.CONFIG_FILE in names:  # keras-hub layout
        return [f for f in KERAS_HUB_FILES if f in names], keras_hub.WEIGHTS_FILE
    weights = next((w for w in HF_WEIGHTS if w in names), None)
    missing = [f for f in (huggingface.CONFIG_FILE,) if f not in names]
    if weights is None:
        sharded = sorted(n for n in names if n.endswith(".index.json"))
        missing.append(" or ".join(HF_WEIGHTS) + (
            f" (sharded weights, {sharded[0]}, are not supported)" if sharded else ""))
    if missing:
        raise download.DownloadError(
            f"{handle} holds no {' and no '.join(missing)}; not a BERT checkpoint keras_bert "
            f"reads. Its files: {sorted(names)[:20]}.")
    files = [f for f in HF_FILES if f in names]
    if huggingface.VOCAB_FILE not in names and huggingface.TOKENIZER_FILE in names:
        files.append(huggingface.TOKENIZER_FILE)  # the vocabulary is read from it
    files += sentence_transformers.hub_files(names)  # a sentence-transformers model's modules
    return files + [weights], weights


def _download_hf(handle, into, progress):
    """Fetches the files of ``handle`` into ``into``; returns (commit, weights file, the
    sha256 the Hub lists for it or None, the files)."""
    hub = _import("huggingface_hub")
    from huggingface_hub import errors

    endpoint, timeout = hf_endpoint(), download.timeout()
    api = hub.HfApi(endpoint=endpoint, library_name="keras_bert")
    url = f"{endpoint}/api/models/{handle.repo_id}"
    try:  # one request, with a timeout and no retries: offline fails here, in seconds
        info = api.model_info(handle.repo_id, revision=handle.revision, timeout=timeout,
                              files_metadata=True)
    except (errors.RepositoryNotFoundError, errors.RevisionNotFoundError,
            errors.GatedRepoError) as e:
        raise download.DownloadError(
            f"Cannot download {handle}: {type(e).__name__} from {url}: "
            f"{str(e).splitlines()[0]}") from None
    except errors.HfHubHTTPError as e:
        status = getattr(getattr(e, "response", None), "status_code", "an error")
        raise download.DownloadError(
            f"Cannot download {handle}: {url} answered {status} ({str(e).splitlines()[0]}). "
            f"{manual_route(handle)}") from None
    except Exception as e:  # httpx2's connection errors and timeouts
        raise _unreachable(handle, url, f"{type(e).__name__}: {e}") from None
    siblings = {s.rfilename: s for s in info.siblings or ()}
    files, weights = _hf_files(handle, siblings)
    lfs = getattr(siblings[weights], "lfs", None)
    listed = getattr(lfs, "sha256", None) if lfs else None
    if progress:
        sys.stderr.write(f"Downloading {handle} (commit {info.sha[:12]}): {', '.join(files)}\n")
    with _hf_progress(hub, progress):
        for name in files:
            try:
                hub.hf_hub_download(handle.repo_id, name, revision=info.sha, local_dir=into,
                                    endpoint=endpoint, etag_timeout=timeout,
                                    library_name="keras_bert")
            except Exception as e:
                raise download.DownloadError(
                    f"Download of {name} of {handle} from {endpoint} failed: "
                    f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}. "
                    f"{manual_route(handle)}") from None
    return info.sha, weights, listed, files


@contextlib.contextmanager
def _hf_progress(hub, progress):
    """huggingface_hub's progress bars on or off for the downloads (then as they were)."""
    from huggingface_hub.utils import are_progress_bars_disabled

    was_disabled = are_progress_bars_disabled()
    if not progress:
        hub.utils.disable_progress_bars()
    try:
        yield
    finally:
        if not progress and not was_disabled:
            hub.utils.enable_progress_bars()


# ------------------------------------------------------------------------ Kaggle
def _probe(handle, endpoint):
    """`DownloadError` unless the Kaggle API's host (or the proxy the environment names for
    it) accepts a connection within the download timeout (kagglehub's own requests have
    none)."""
    parsed = urllib.parse.urlsplit(endpoint)
    proxy = urllib.request.getproxies().get(parsed.scheme)
    if proxy and not urllib.request.proxy_bypass(parsed.hostname):
        parsed = urllib.parse.urlsplit(proxy if "://" in proxy else f"http://{proxy}")
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    try:
        socket.create_connection((parsed.hostname, port), timeout=download.timeout()).close()
    except OSError as e:
        raise _unreachable(handle, endpoint, f"{type(e).__name__}: {e}") from None


def _download_kaggle(handle, into, progress):
    """Fetches the files of ``handle`` into ``into`` (a new directory) with kagglehub;
    returns (the version or "latest", weights file, None, the files)."""
    kagglehub = _import("kagglehub")
    endpoint = kaggle_endpoint()
    _probe(handle, endpoint)
    if progress:
        sys.stderr.write(f"Downloading {handle} from {kaggle_url(handle)}\n")
    try:
        path = kagglehub.model_download(handle.kaggle_handle, output_dir=into)
    except Exception as e:
        status = getattr(getattr(e, "response", None), "status_code", None)
        text = " ".join(str(e).split())
        what = f"answered {status} ({text})" if status else f"failed ({type(e).__name__}: {text})"
        raise download.DownloadError(
            f"Cannot download {handle}: {endpoint} {what}. {manual_route(handle)}") from None
    found = storage.walk_files(path)
    files = [f for f in found if not f.startswith(".complete/")]
    missing = [f for f in (keras_hub.CONFIG_FILE, keras_hub.WEIGHTS_FILE) if f not in files]
    if missing:
        raise download.DownloadError(
            f"{handle} holds no {' and no '.join(missing)}: not a keras-hub preset "
            f"(its files: {files[:20]}).")
    return handle.revision or _kaggle_version(found), keras_hub.WEIGHTS_FILE, None, files


def _kaggle_version(found):
    """The version kagglehub resolved an unversioned handle to, read from the completion
    marker it leaves in the output directory
    (``.complete/models/<owner>/<model>/<framework>/<variation>/<version>/bundle.complete``);
    "latest" when that is not there."""
    for name in found:
        parts = name.split("/")
        if parts[:2] == [".complete", "models"] and len(parts) == 8 and parts[6].isdigit():
            return parts[6]
    return "latest"


# ------------------------------------------------------------------------ both
def load(handle, sha256=None, progress=True):
    """The directory of ``handle``'s converted copy: fetched and converted unless there."""
    target = cache_dir(handle)
    if keras_bert_layout.is_layout(target):
        return target
    if storage.exists(target):
        raise CheckpointError(
            f"{target} exists but is not a complete keras_bert preset (no "
            f"{keras_bert_layout.METADATA_FILE}); remove it and try again.")
    fetch = _download_hf if handle.hub == "hf" else _download_kaggle
    with storage.staging_dir(os.path.dirname(target), legacy=True) as work:
        raw = os.path.join(work, "raw")
        resolved, weights, listed, files = fetch(handle, raw, progress)
        _check_weights_file(handle, os.path.join(raw, weights), listed, sha256)
        out = os.path.join(work, "converted")
        source = hf_url(handle) if handle.hub == "hf" else kaggle_url(handle)
        try:
            checkpoint = open_directory(raw)
            checkpoint.name, checkpoint.source = str(handle), source
            checkpoint.metadata = {**checkpoint.metadata,  # (a sentence-transformers model's)
                                   "hub": {"handle": str(handle), "resolved": resolved,
                                           "files": sorted(files)}}
            PresetSaver(out).save_preset(checkpoint)
        except CheckpointError as e:  # name the hub's file, not the temporary copy
            raise download.DownloadError(
                str(e).replace(raw + os.sep, f"{handle}/").replace(raw, str(handle))
                + " Nothing was cached.") from None
        try:
            os.rename(out, target)  # the cache is a local directory (see download.cache_root)
        except OSError:
            if not keras_bert_layout.is_layout(target):  # another process finishing first is fine
                raise
    return target


def _check_weights_file(handle, path, listed, sha256):
    what = f"{os.path.basename(path)} of {handle}"
    if not storage.isfile(path):
        raise download.DownloadError(f"{what} did not arrive. {manual_route(handle)}")
    if listed:
        download.check_sha256(path, listed, what=what,
                              consequence=" The hub lists that sha256 for it; nothing was cached.")
    if sha256:
        download.check_sha256(path, sha256, what=what, consequence=" Nothing was cached.")
