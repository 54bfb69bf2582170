"""`SavedModelEncoder`: an exported BERT encoder (TF Hub format) as a fine-tunable Keras 3
layer."""

import os

import keras
import tensorflow as tf

from keras_bert import storage
from keras_bert.checks import check_layer_kwargs
from keras_bert.config import INPUT_NAMES



@keras.saving.register_keras_serializable(package="keras_bert")
class SavedModelEncoder(keras.layers.Layer):
    """A BERT encoder SavedModel in the TF Hub format (`keras_bert.export.export_encoder`,
    or TF Hub's own BERT encoders) as a Keras 3 layer that fine-tunes.

    It loads the SavedModel with `tf.saved_model.load`, wraps each of its variables in a
    `keras.Variable` (the same `tf.Variable`, named without ``:0`` and with ``/`` replaced,
    so that optimizers can name their slots after it) and calls it with ``training=``
    (dropout on while training). Any Keras optimizer trains it, AdamW included, inside a
    functional or subclassed Keras 3 model. (``keras.layers.TFSMLayer`` breaks with
    stateful optimizers on variable names ending in ``:0`` and never runs with
    ``training=True``; ``hub.KerasLayer`` needs tf-keras, not Keras 3.)

    Call it on a dict of ``input_word_ids``, ``input_mask``, ``input_type_ids`` (integer
    ``[batch, seq]``); it returns the SavedModel's dict: ``pooled_output``,
    ``sequence_output``, ``encoder_outputs`` (one per layer) and ``default``.

    Args:
        path: the SavedModel directory.
        trainable: whether its weights train (False: a frozen feature extractor).

    A model saved to ``.keras`` with this layer keeps ``path`` and the fine-tuned weights;
    loading it needs the SavedModel at ``path`` again and, since a SavedModel is a program,
    ``safe_mode=False`` (as ``TFSMLayer``).

    Raises:
        ValueError: ``path`` is not a SavedModel, or one without the encoder's
            ``__call__(inputs, training=)`` on the three inputs (a preprocessing or
            serving export, say); a ``.keras`` load in safe mode.
        TypeError: inputs that are not a dict with the three names.

    Example (a tiny encoder exported, then fine-tuned under a classifier head):

    >>> import tempfile, keras, numpy as np
    >>> from keras_bert import BertEncoder
    >>> from keras_bert.export import export_encoder
    >>> from keras_bert.layers import SavedModelEncoder
    >>> path = export_encoder(BertEncoder.from_preset("tiny_random"), tempfile.mkdtemp() + "/enc")
    >>> inputs = {name: keras.Input((None,), dtype="int32", name=name)
    ...           for name in ("input_word_ids", "input_mask", "input_type_ids")}
    >>> pooled = SavedModelEncoder(path)(inputs)["pooled_output"]
    >>> model = keras.Model(inputs, keras.layers.Dense(2)(pooled))
    >>> model.compile(keras.optimizers.AdamW(1e-3),
    ...               keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    >>> ids = np.array([[2, 5, 3], [2, 6, 3]], "int32")
    >>> x = {"input_word_ids": ids, "input_mask": np.ones_like(ids),
    ...      "input_type_ids": np.zeros_like(ids)}
    >>> history = model.fit(x, np.array([0, 1]), epochs=2, verbose=0)
    >>> len(model.trainable_weights)  # the encoder's 23 and the head's 2
    25
    """

    def __init__(self, path, trainable=True, **kwargs):
        check_layer_kwargs(self, kwargs)
        super().__init__(trainable=trainable, **kwargs)
        if not isinstance(path, (str, os.PathLike)):
            raise ValueError(f"SavedModelEncoder: path must be a SavedModel directory, got "
                             f"{path!r}.")
        self.saved_model_path = os.fspath(path)  # (Keras layers have a `path` of their own)
        self._loaded = _load_encoder(self.saved_model_path)
        for variable in self._loaded.variables:
            self._track_variable(keras.Variable(
                initializer=variable,  # the loaded tf.Variable itself, not a copy
                trainable=variable.trainable,
                dtype=variable.dtype,
                shape=variable.shape,
                name=_keras_name(variable.name),
            ))
        self.built = True

    def call(self, inputs, training=False):
        if not isinstance(inputs, dict) or any(n not in inputs for n in INPUT_NAMES):
            raise TypeError(f"SavedModelEncoder takes a dict of {', '.join(INPUT_NAMES)}, "
                            f"got {type(inputs).__name__}"
                            + (f" with keys {sorted(inputs)}" if isinstance(inputs, dict)
                               else ""))
        inputs = {name: tf.cast(inputs[name], tf.int32) for name in INPUT_NAMES}
        return self._loaded(inputs, training=bool(training))

    def get_config(self):
        config = super().get_config()
        config["path"] = self.saved_model_path
        return config

    @classmethod
    def from_config(cls, config, safe_mode=None):
        # Keras loads objects inside its safe-mode scope; it has no public reader of it
        # (keras.layers.TFSMLayer reads it the same way).
        from keras.src.saving import serialization_lib

        safe = serialization_lib.in_safe_mode() if safe_mode is None else safe_mode
        if safe is not False:
            raise ValueError(
                "Loading a SavedModelEncoder runs the graph of the SavedModel at "
                f"{config.get('path')!r}, so it is refused in safe mode: if you trust it, "
                "pass safe_mode=False to keras.saving.load_model (or call "
                "keras.config.enable_unsafe_deserialization()).")
        return cls(**config)


def _keras_name(name):
    """A loaded variable's name as a Keras variable name: ``a/b:0`` -> ``a_b``."""
    return name.rsplit(":", 1)[0].replace("/", "_")


def _load_encoder(path):
    """The loaded SavedModel, checked to be an encoder in the TF Hub format."""
    if not storage.isfile(os.path.join(path, "saved_model.pb")):
        raise ValueError(f"SavedModelEncoder: {path} is not a SavedModel (no "
                         "saved_model.pb there).")
    loaded = tf.saved_model.load(path)
    signatures = []
    if callable(loaded) and hasattr(loaded, "variables"):
        signatures = [f.structured_input_signature
                      for f in getattr(loaded.__call__, "concrete_functions", ())]
    takes_ids = any(args and isinstance(args[0], dict) and set(INPUT_NAMES) <= set(args[0])
                    for args, _ in signatures)
    if not takes_ids:
        raise ValueError(
            f"SavedModelEncoder: the SavedModel at {path} is not a BERT encoder in the TF "
            "Hub format (a reusable SavedModel whose __call__ takes a dict of "
            f"{', '.join(INPUT_NAMES)} and has variables); export one with "
            "keras_bert.export.export_encoder.")
    return loaded
