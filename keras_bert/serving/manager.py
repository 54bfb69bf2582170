"""The model manager: which versions of which models are served, kept in step with the disk.

Each model has a base path whose numeric subdirectories are its versions (TF Serving's
layout, ``<base>/<version>/saved_model.pb``). The manager serves the versions its policy picks
(newest by default), polls the base path every ``poll_wait_seconds`` and loads a version
directory dropped in while serving without a restart. A new version is loaded before the old
one is retired, and the old one finishes the requests in flight on it before it is let go
(TF Serving's availability-preserving policy). A SavedModel version loads and warms up in a
process of its own while the old one answers, so the switch is one dictionary update that
blocks no request, and the old version's memory returns when its process ends
(`keras_bert.serving.version_process`). A version that fails to load is retried when its
files change; meanwhile the versions already loaded keep serving. A version whose process
died is loaded again at the next poll.

Write a new version elsewhere and rename it into place: a directory still being written may
be tried (and fail) before it is whole.
"""

import contextlib
import dataclasses
import logging
import os
import threading

from keras_bert import storage
from keras_bert.serving.errors import ServerConfigError, ServingError, invalid, not_found
from keras_bert.serving.servable import (
    Servable,
    ServableOptions,
    has_saved_model,
    has_tflite_model,
)

log = logging.getLogger("keras_bert.serving")


@dataclasses.dataclass(frozen=True)
class VersionStatus:
    """A version's state as GetModelStatus reports it (``AVAILABLE``, ``LOADING``,
    ``UNLOADING``, ``END``) and the error that ended it, if any.

    Example:

    >>> VersionStatus(2, "AVAILABLE")
    VersionStatus(version=2, state='AVAILABLE', error='')
    """

    version: int
    state: str
    error: str = ""


def list_versions(base_path):
    """The numeric version directories under `base_path`, as ints, oldest first."""
    versions = []
    for name in storage.listdir(base_path):  # local paths, gs://, ram://
        if name.isdigit() and storage.isdir(os.path.join(base_path, name)):  # a decimal int64
            versions.append(int(name))
    return sorted(versions)


def _fingerprint(path):
    """What changes when a version directory's files do (retries a failed load)."""
    found = []
    for name in storage.walk_files(path):
        try:
            stat = storage.stat(os.path.join(path, name))
        except Exception:  # noqa: BLE001 - gone meanwhile (tf.errors or OSError)
            continue
        found.append((name, stat.length, stat.mtime_nsec))
    return tuple(sorted(found))


class _Model:
    def __init__(self, config):
        self.config = config
        self.serving = {}   # version -> AVAILABLE Servable
        self.loading = set()
        self.retired = {}   # version -> Servable (UNLOADING or END)
        self.failed = {}    # version -> (fingerprint, error)

    def wanted(self, versions):
        policy = self.config.version_policy
        if policy[0] == "latest":
            return set(versions[-policy[1]:])
        if policy[0] == "all":
            return set(versions)
        return set(versions) & set(policy[1])


class ModelManager:
    """Serves the models of a list of `ModelConfig`; see the module docstring.

    Args:
      models: the `ModelConfig`s.
      poll_wait_seconds: seconds between looks at the base paths; 0 looks once at start, a
        negative value never (TF Serving's ``--file_system_poll_wait_seconds``).
      **options: how every version is served: the fields of
        `keras_bert.serving.servable.ServableOptions` (``batching``, ``limits``,
        ``prefer_tflite_model``, ...).

    Example (`keras_bert.serving.ModelServer` wraps one; see there for requests):

    >>> import tempfile
    >>> from keras_bert.serving import ModelConfig
    >>> manager = ModelManager([ModelConfig("m", tempfile.mkdtemp())])
    >>> manager.start()
    Traceback (most recent call last):
    ...
    keras_bert.serving.errors.ServerConfigError: model 'm': no version directory ...
    """

    def __init__(self, models, poll_wait_seconds=1.0, **options):
        names = [m.name for m in models]
        if not names:
            raise ServerConfigError("no model to serve")
        if len(set(names)) != len(names):
            raise ServerConfigError(f"model names must be unique, got {names}")
        self._models = {m.name: _Model(m) for m in models}
        try:
            self.options = ServableOptions(**options)
        except (TypeError, ValueError) as error:
            raise ServerConfigError(str(error)) from None
        self.poll_wait_seconds = poll_wait_seconds
        self._lock = threading.Lock()
        self._poll_lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = None

    @property
    def batching(self):
        return self.options.batching

    @property
    def limits(self):
        return self.options.limits

    @property
    def model_names(self):
        return list(self._models)

    def start(self):
        """Loads every model's versions (a `ServerConfigError` names what is missing or does
        not load), then polls in a background thread."""
        for model in self._models.values():
            self._check_startup(model)
            self._poll_model(model, startup=True)
        if self.poll_wait_seconds > 0:
            self._thread = threading.Thread(target=self._poll_forever, daemon=True,
                                            name="model-manager-poll")
            self._thread.start()

    def _check_startup(self, model):
        base, name = model.config.base_path, model.config.name
        if not storage.exists(base):
            raise ServerConfigError(f"model {name!r}: base path {base} does not exist")
        if not storage.isdir(base):
            raise ServerConfigError(f"model {name!r}: base path {base} is not a directory")
        versions = list_versions(base)
        if not versions:
            held = "a SavedModel" if has_saved_model(base) else \
                "a LiteRT model (model.tflite)" if has_tflite_model(base) else None
            hint = f" (it holds {held} itself: put it in a version directory, e.g. " \
                f"{os.path.join(base, '1')})" if held else ""
            raise ServerConfigError(f"model {name!r}: no version directory (a number, e.g. "
                                    f"{os.path.join(base, '1')}) under {base}{hint}")
        if not model.wanted(versions):
            raise ServerConfigError(f"model {name!r}: none of the versions "
                                    f"{list(model.config.version_policy[1])} the config asks "
                                    f"for are under {base} (found {versions})")

    def stop(self):
        """Stops polling and lets every version go (requests still queued get UNAVAILABLE)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=60)
        with self._lock:
            servables = [s for m in self._models.values() for s in m.serving.values()]
            for model in self._models.values():
                model.retired.update(model.serving)
                model.serving = {}
        for servable in servables:
            servable.retire()
        for servable in servables:  # their processes end: nothing is left running
            servable.wait_unloaded(30)

    def _poll_forever(self):
        while not self._stop.wait(self.poll_wait_seconds):
            self.poll()

    def poll(self):
        """Looks at every base path once: loads new versions, retires the ones replaced."""
        for model in self._models.values():
            if self._stop.is_set():
                return
            try:
                self._poll_model(model)
            except Exception:  # the poller must outlive any one model's trouble
                log.exception("polling model %r failed", model.config.name)

    def _poll_model(self, model, startup=False):
        config = model.config
        with self._poll_lock:
            try:
                versions = list_versions(config.base_path)
            except OSError as error:
                log.error("model %r: cannot list %s: %s", config.name, config.base_path, error)
                return
            wanted = model.wanted(versions)
            with self._lock:
                dead = [model.serving.pop(v) for v, s in sorted(model.serving.items())
                        if not s.healthy]
            for servable in dead:  # loaded again below
                log.error("model %r: the process of version %d died; loading it again",
                          config.name, servable.version)
                servable.retire()
            for version in sorted(wanted - set(model.serving)):
                self._load(model, version, startup)
            with self._lock:
                # Availability preserving: retire only once a wanted version serves.
                if not wanted & set(model.serving):
                    return
                retiring = [model.serving.pop(v) for v in sorted(set(model.serving) - wanted)]
                model.retired.update((s.version, s) for s in retiring)
        for servable in retiring:
            log.info("model %r: retiring version %d (%d request(s) in flight)", config.name,
                     servable.version, servable.in_flight)
            servable.retire()

    def _load(self, model, version, startup):
        config = model.config
        path = os.path.join(config.base_path, str(version))
        fingerprint = _fingerprint(path)
        if model.failed.get(version, (None,))[0] == fingerprint:
            return  # failed before and unchanged since
        servable = Servable(config.name, version, path, self.options)
        with self._lock:
            model.loading.add(version)
        try:
            servable.load()
        except Exception as error:
            model.failed[version] = (fingerprint, servable.error)
            if startup:
                raise ServerConfigError(f"model {config.name!r}: version {version} at {path} "
                                        f"does not load: {servable.error}") from error
            log.error("model %r: version %d at %s does not load (kept serving %s): %s",
                      config.name, version, path, sorted(model.serving) or "nothing",
                      servable.error)
            return
        finally:
            with self._lock:
                model.loading.discard(version)
        with self._lock:
            model.failed.pop(version, None)
            model.retired.pop(version, None)
            model.serving[version] = servable
        warmed = f" (warmed up: {servable.warmed_up})" if servable.warmed_up else ""
        log.info("model %r: serving version %d from %s%s", config.name, version,
                 os.path.join(path, servable.served_file), warmed)

    # ---- lookups -------------------------------------------------------------------------
    def _model(self, name):
        model = self._models.get(name)
        if model is None:
            raise not_found(f"Servable not found for request: Latest({name}): this server "
                            f"serves models {sorted(self._models)}")
        return model

    def resolve(self, name, version=None, label=None):
        """The AVAILABLE servable for a request (newest version by default)."""
        model = self._model(name)
        if label:
            labels = model.config.labels()
            if label not in labels:
                raise invalid(f"Unrecognized servable version label: {label!r} (model "
                              f"{name!r} has labels {sorted(labels)})")
            version = labels[label]
        with self._lock:
            if version is None:
                if not model.serving:
                    raise ServingError("UNAVAILABLE", f"model {name!r} has no version loaded")
                return model.serving[max(model.serving)]
            servable = model.serving.get(version)
        if servable is None:
            raise not_found(f"Servable not found for request: Specific({name}, {version}): "
                            f"model {name!r} serves version(s) {sorted(model.serving)}")
        return servable

    @contextlib.contextmanager
    def servable(self, name, version=None, label=None):
        """The servable for a request, held for the block: it is not unloaded meanwhile."""
        while True:
            servable = self.resolve(name, version, label)
            try:
                servable.acquire()
                break
            except ServingError:  # retired between resolve and acquire: look again
                if version is not None or label:
                    raise
        try:
            yield servable
        finally:
            servable.release()

    def status(self, name, version=None):
        """`VersionStatus` of each version of model `name` the manager knows (newest first),
        or of `version` only."""
        model = self._model(name)
        with self._lock:
            found = {v: VersionStatus(v, s.state, s.error) for v, s in model.retired.items()}
            found.update((v, VersionStatus(v, "END", error))
                         for v, (_, error) in model.failed.items())
            found.update((v, VersionStatus(v, "LOADING")) for v in model.loading)
            found.update((v, VersionStatus(v, s.state)) for v, s in model.serving.items())
        if version is not None:
            if version not in found:
                raise not_found(f"Could not find version {version} of model {name!r}; known "
                                f"versions: {sorted(found)}")
            return [found[version]]
        return [found[v] for v in sorted(found, reverse=True)]
