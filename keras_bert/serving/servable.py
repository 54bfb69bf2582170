"""One loaded model version: its SavedModel (or LiteRT model), its signatures, its requests in
flight.

A version directory holds a SavedModel (``saved_model.pb``) and may hold a LiteRT model beside
it (``model.tflite``, TF Serving's name). With ``prefer_tflite_model`` (TF Serving's
``--prefer_tflite_model``) the LiteRT model is served when there is one, else the SavedModel,
as TF Serving falls back; without it the SavedModel is served, and a directory that holds
only ``model.tflite`` does not load (the error names the flag). Which file serves is logged.

A version is AVAILABLE once loaded. When the manager retires it (a newer version took its
place) it turns UNLOADING, takes no new requests, and is let go (END) when the last request in
flight on it has finished: TF Serving's states and its availability-preserving unload.
"""

import logging
import os
import threading

from keras_bert import storage
from keras_bert.export.litert_model import SERVING_FILE as TFLITE_FILE
from keras_bert.serving.batching import Batcher
from keras_bert.serving.errors import ServingError, invalid
from keras_bert.serving.signatures import Signature

DEFAULT_SIGNATURE = "serving_default"
log = logging.getLogger("keras_bert.serving")


def has_saved_model(path):
    return any(storage.isfile(os.path.join(path, name))
               for name in ("saved_model.pb", "saved_model.pbtxt"))


def has_tflite_model(path):
    return storage.isfile(os.path.join(path, TFLITE_FILE))


def served_file(path, prefer_tflite_model=False):
    """Which file of version directory ``path`` serves: ``"model.tflite"`` or
    ``"saved_model.pb"`` (``.pbtxt``) (see the module docstring); FileNotFoundError when
    none can."""
    if prefer_tflite_model and has_tflite_model(path):
        return TFLITE_FILE
    if has_saved_model(path):
        if prefer_tflite_model:
            log.warning("%s has no %s: serving its SavedModel (--prefer_tflite_model falls "
                        "back, as TF Serving does)", path, TFLITE_FILE)
        elif has_tflite_model(path):
            log.info("%s also holds %s, not served: --prefer_tflite_model is off", path,
                     TFLITE_FILE)
        text = not storage.isfile(os.path.join(path, "saved_model.pb"))
        return "saved_model.pbtxt" if text else "saved_model.pb"
    if has_tflite_model(path):
        raise FileNotFoundError(f"{path} holds only {TFLITE_FILE} (a LiteRT model) and no "
                                "saved_model.pb: serve it with --prefer_tflite_model")
    raise FileNotFoundError(f"no saved_model.pb in {path}")


def read_signature_defs(path):
    """The SignatureDefs of the SavedModel in `path` (its first MetaGraph), by key."""
    from google.protobuf import text_format
    from tensorflow.core.protobuf import saved_model_pb2

    saved_model = saved_model_pb2.SavedModel()
    pb = os.path.join(path, "saved_model.pb")
    if storage.isfile(pb):
        saved_model.ParseFromString(storage.read_bytes(pb))
    else:
        text_format.Parse(storage.read_text(os.path.join(path, "saved_model.pbtxt")),
                          saved_model)
    return dict(saved_model.meta_graphs[0].signature_def)


class Servable:
    """Version `version` of model `name`, a SavedModel in `path`.

    Args:
      name, version, path: what it is and where.
      batching: `BatchingOptions` to batch requests per signature, or None.
      max_request_batch: most rows one request may have (0: no limit).
      prefer_tflite_model: serve ``model.tflite`` when the directory has one.
      num_tflite_pools: LiteRT interpreters that run at once (the CPUs shared among them).

    Example:

    >>> import tempfile
    >>> import tensorflow as tf
    >>> class Doubler(tf.Module):
    ...     @tf.function(input_signature=[tf.TensorSpec([None], tf.float32, name="x")])
    ...     def double(self, x):
    ...         return {"y": 2 * x}
    >>> doubler = Doubler()
    >>> import numpy as np
    >>> path = tempfile.mkdtemp()
    >>> tf.saved_model.save(doubler, path, signatures={"serving_default": doubler.double})
    >>> servable = Servable("doubler", 1, path)
    >>> servable.load()
    >>> servable
    Servable('doubler', version=1, state=AVAILABLE)
    >>> signature = servable.signature("")  # "": serving_default
    >>> signature.run(signature.check({"x": np.array([1.0, 2.5], "float32")}))
    {'y': array([2., 5.], dtype=float32)}
    >>> servable.retire()  # no request in flight: unloaded at once
    >>> servable.state
    'END'
    """

    def __init__(self, name, version, path, batching=None, max_request_batch=0,
                 prefer_tflite_model=False, num_tflite_pools=1):
        self.name = name
        self.version = version
        self.path = path
        self.batching = batching
        self.max_request_batch = max_request_batch
        self.prefer_tflite_model = prefer_tflite_model
        self.num_tflite_pools = num_tflite_pools
        self.served_file = None  # "saved_model.pb" or "model.tflite", once loaded
        self.state = "START"
        self.error = ""
        self.signatures = {}
        self.signature_defs = {}
        self._loaded = None
        self._batchers = {}
        self._in_flight = 0
        self._lock = threading.Condition()

    def __repr__(self):
        return f"Servable({self.name!r}, version={self.version}, state={self.state})"

    def load(self):
        """Loads the SavedModel (tensorflow_text is imported first: its ops must be
        registered) or the LiteRT model (see the module docstring). Raises what loading
        raised; the state tells the outcome."""
        self.state = "LOADING"
        try:
            served = served_file(self.path, self.prefer_tflite_model)
            if served == TFLITE_FILE:
                loaded, signatures = self._load_litert()
            else:
                loaded, signatures = self._load_saved_model()
        except Exception as error:
            self.state, self.error = "END", f"{type(error).__name__}: {error}"
            raise
        self._loaded, self.signatures = loaded, signatures
        self.signature_defs = {key: s.signature_def for key, s in signatures.items()}
        self.served_file = served
        self.state = "AVAILABLE"

    def _load_saved_model(self):
        import tensorflow as tf
        import tensorflow_text  # noqa: F401  (registers the tf.text ops the graphs use)

        defs = read_signature_defs(self.path)
        loaded = tf.saved_model.load(self.path)
        return loaded, {key: Signature(key, function, defs[key])
                        for key, function in loaded.signatures.items() if key in defs}

    def _load_litert(self):
        from keras_bert.serving.litert_signatures import InterpreterPool, LiteRTSignature

        pool = InterpreterPool(storage.read_bytes(os.path.join(self.path, TFLITE_FILE)),
                               size=self.num_tflite_pools)
        return pool, {key: LiteRTSignature(key, pool) for key in pool.signatures}

    # ---- requests in flight --------------------------------------------------------------
    def acquire(self):
        with self._lock:
            if self.state != "AVAILABLE":
                raise ServingError("UNAVAILABLE", f"version {self.version} of model "
                                   f"{self.name!r} is {self.state.lower()}")
            self._in_flight += 1

    def release(self):
        with self._lock:
            self._in_flight -= 1
            finish = self.state == "UNLOADING" and self._in_flight == 0
        if finish:
            self._finish()

    @property
    def in_flight(self):
        return self._in_flight

    def retire(self):
        """Takes no new requests; unloads once those in flight are done."""
        with self._lock:
            if self.state != "AVAILABLE":
                return
            self.state = "UNLOADING"
            finish = self._in_flight == 0
        if finish:
            self._finish()

    def wait_unloaded(self, timeout=None):
        with self._lock:
            return self._lock.wait_for(lambda: self.state == "END", timeout)

    def _finish(self):
        for batcher in list(self._batchers.values()):
            batcher.stop()
        with self._lock:
            self._batchers = {}
            self._loaded = None
            self.signatures = {}
            self.state = "END"
            self._lock.notify_all()

    # ---- prediction ----------------------------------------------------------------------
    def signature(self, name):
        """The signature `name` (empty: ``serving_default``); FAILED_PRECONDITION, as TF
        Serving answers, when there is none of that name."""
        name = name or DEFAULT_SIGNATURE
        try:
            return self.signatures[name]
        except KeyError:
            raise ServingError(
                "FAILED_PRECONDITION", f"Serving signature key \"{name}\" not found: version "
                f"{self.version} of model {self.name!r} has {sorted(self.signatures)}") from None

    def predict(self, signature, inputs, output_filter=(), timeout=None):
        """Checks `inputs` against `signature` and runs it (batched with other requests when
        batching is on; `timeout`: seconds it may wait for its batch); returns name -> numpy
        array, only `output_filter`'s if given."""
        signature.check(inputs)
        for key in output_filter:
            if key not in signature.outputs:
                raise invalid(f"output tensor alias not found in signature {signature.name!r}: "
                              f"{key!r}; its outputs are {sorted(signature.outputs)}")
        rows = signature.rows(inputs)
        if self.max_request_batch and rows is not None and rows > self.max_request_batch:
            raise invalid(f"the request has a batch of {rows} rows; this server takes at most "
                          f"{self.max_request_batch} per request (--max_request_batch)")
        if self.batching is not None and rows:
            outputs = self._batcher(signature).submit(inputs, timeout=timeout)
        else:
            outputs = signature.run(inputs)
        if output_filter:
            outputs = {key: outputs[key] for key in output_filter}
        return outputs

    def _batcher(self, signature):
        with self._lock:
            batcher = self._batchers.get(signature.name)
            if batcher is None:
                batcher = self._batchers[signature.name] = Batcher(
                    signature.run, self.batching,
                    name=f"{self.name}/{self.version}/{signature.name}")
            return batcher

    def batchers(self):
        return dict(self._batchers)
