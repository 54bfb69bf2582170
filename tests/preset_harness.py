"""The routes a preset loads by, checked in one call for a class with ``from_preset`` (as
keras-hub's ``TestCase.run_preset_test``): the encoder, a task model, a text layer.

    from tests.preset_harness import check_preset
    check_preset(BertEncoder, "tiny_random", packed_inputs, tmp_path=tmp_path,
                 config={"num_hidden_layers": 2})

`check_preset` loads ``cls.from_preset(preset, **kwargs)`` and runs it on ``inputs`` (a
model: ``predict``; a text layer: a call), then checks that:

1. a name that is no preset is an `UnknownPresetError` (before anything else);
2. the model's config has the ``config`` fields given (`BertConfig` fields), a text layer's
   vocabulary ``config["vocab_size"]`` tokens;
3. the outputs have ``output_shape`` and start with ``expected_partial_output`` (the first
   numbers of the flattened first output: the preset's weights are the ones it had);
4. loaded from a directory, the outputs are the same: the directory ``directory`` (a path
   in any format), else one written by ``save_to_preset`` (the instance's own, or for a
   text layer the encoder's, which holds the vocabulary);
5. each name of ``aliases`` resolves to the same preset (its name and config, without
   downloading: `load_preset` with ``require_weights=False``);
6. a model with ``load_weights=False`` has the same config and other outputs (the weights
   were loaded, not drawn).

Task models are built under one Keras seed (`SEED`) each time, so that the fresh heads of
two loads are the same and their outputs comparable. Returns the outputs.
"""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert import BertEncoder
from keras_bert.presets import UnknownPresetError, load_preset
from tests.harness import _assert_close, _to_numpy

SEED = 1234


def _load(cls, preset, **kwargs):
    keras.utils.set_random_seed(SEED)
    return cls.from_preset(preset, **kwargs)


def _run(instance, inputs):
    if isinstance(instance, keras.Model):
        return _to_numpy(instance.predict(inputs, verbose=0))
    outputs = tf.nest.map_structure(
        lambda t: t.to_tensor() if isinstance(t, tf.RaggedTensor) else t, instance(inputs),
        expand_composites=False)
    return _to_numpy(outputs)


def _first(outputs):
    flat = tf.nest.flatten(outputs)
    return np.asarray(flat[0]).reshape(-1)


def _bert_config(instance):
    encoder = getattr(instance, "encoder", instance)
    return getattr(encoder, "bert_config", None)


def _vocabulary(instance):
    tokenizer = getattr(instance, "tokenizer", instance)
    if hasattr(tokenizer, "get_vocabulary"):
        return tokenizer.get_vocabulary()
    return getattr(instance, "vocabulary", None)


def check_preset(cls, preset, inputs, *, tmp_path, config=None, output_shape=None,
                 expected_partial_output=None, directory=None, aliases=(), atol=1e-5,
                 partial_atol=1e-3, **kwargs):
    """The checks of the module docstring. ``kwargs``: what ``from_preset`` takes besides
    the preset (``num_classes=2``, ``seq_length=8``, ...). Returns the outputs."""
    name = cls.__name__
    with pytest.raises(UnknownPresetError):
        cls.from_preset("no_such_preset_anywhere", **kwargs)

    instance = _load(cls, preset, **kwargs)
    assert isinstance(instance, cls), (name, type(instance))
    outputs = _run(instance, inputs)

    bert_config = _bert_config(instance)
    for field, value in (config or {}).items():
        if bert_config is not None:
            assert getattr(bert_config, field) == value, (name, field, bert_config)
        elif field == "vocab_size":
            assert len(_vocabulary(instance)) == value, (name, field)
    if output_shape is not None:
        got = tf.nest.map_structure(lambda a: tuple(np.shape(a)), outputs)
        assert got == output_shape, (name, got, output_shape)
    if expected_partial_output is not None:
        want = np.asarray(expected_partial_output, dtype=np.float32)
        np.testing.assert_allclose(_first(outputs)[:len(want)], want, atol=partial_atol,
                                   err_msg=f"{name}.from_preset({preset!r}): first outputs")

    if directory is None:
        directory = str(tmp_path / f"{name}_preset")
        saver = instance if hasattr(instance, "save_to_preset") else \
            BertEncoder.from_preset(preset)
        assert saver.save_to_preset(directory) == directory
    _assert_close(_run(_load(cls, directory, **kwargs), inputs), outputs, atol,
                  f"{name}.from_preset of {preset!r} saved to a directory")

    resolved = load_preset(preset, require_weights=False)
    for alias in aliases:
        other = load_preset(alias, require_weights=False)
        assert (other.name, other.config) == (resolved.name, resolved.config), (alias, preset)

    if isinstance(instance, keras.Model):
        fresh = _load(cls, preset, load_weights=False, **kwargs)
        assert _bert_config(fresh) == bert_config, name
        drawn = _run(fresh, inputs)
        assert not np.allclose(_first(drawn), _first(outputs), atol=atol), (
            f"{name}.from_preset({preset!r}, load_weights=False) gives the loaded outputs")
    return outputs
