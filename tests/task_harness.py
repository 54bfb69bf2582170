"""The contract every keras_bert task model keeps, checked in one call (as keras-hub's
``TestCase.run_task_test``), on the built-in ``tiny_random`` preset:

    from tests.task_harness import check_task
    check_task(BertClassifier, ["a great movie", "dull"], [1, 0], tmp_path=tmp_path,
               output_shape=(2, 2), num_classes=2)

`check_task` builds ``cls.from_preset(preset, **kwargs)`` and, on raw inputs ``x`` (what
``fit``/``predict`` take: texts, pairs, word lists, (context, choices)) and labels ``y``:

1. ``fit`` takes them (one step, a finite loss; ``fit=False`` for a task whose test file
   fits it on raw inputs already: a first ``fit`` traces the training step, the slowest
   part of the harness, ~4 s);
2. ``predict`` gives ``output_shape`` (a shape, or a dict of them), outputs that differ
   across the examples by far more than ``atol`` (so the equalities below have a signal);
3. ``get_config`` is JSON and ``from_config`` rebuilds a model with the same config;
4. a ``.keras`` round trip gives the same config and outputs on raw inputs;
5. ``save_to_preset`` / ``from_preset`` gives the same config (head and preprocessor
   arguments restored), and with ``preprocessor=None`` the same outputs on the packed
   inputs (what the model's preprocessor makes of ``x``), and a finite loss on them with
   the packed labels and sample weights (``evaluate``: a second ``fit`` would cost a
   training graph more for little);
6. with ``export_inputs`` (the serving signature's inputs, the same examples as ``x``), the
   ``model.export`` SavedModel's ``serving_default`` gives the Keras outputs
   (``serving_outputs(predictions)``: by default the prediction dict, or ``{"logits": ...}``).
   Leave it out for a task whose export `tests/export/test_task_export.py` already checks
   (exporting is the slow part).

``raw_predict=False`` is for tasks whose preprocessor draws at random (the masked-LM ones):
outputs are then compared on packed inputs packed once, never on raw ones. Returns a
`TaskCheck` with the models made, for checks of the task's own.
"""

import dataclasses
import json

import keras
import numpy as np
import tensorflow as tf

from tests.harness import _assert_close, _to_numpy

PRESET = "tiny_random"


@dataclasses.dataclass
class TaskCheck:
    """What `check_task` made: the fitted model, its ``.keras`` file and reload, its reload
    from the saved preset (with the preprocessor and without: ``bare``), the packed inputs
    and labels, and the raw predictions."""

    model: keras.Model
    keras_file: object
    keras_loaded: keras.Model
    preset_loaded: keras.Model
    bare: keras.Model
    packed: dict
    packed_labels: object
    predictions: object


def pack(preprocessor, x, y=None):
    """(packed inputs, labels, sample weights) the preprocessor makes of raw ``x``, ``y``,
    as numpy."""
    out = preprocessor(x) if y is None else preprocessor(x, y)
    if isinstance(out, tuple):
        px, py, sw = keras.utils.unpack_x_y_sample_weight(out)
    else:
        px, py, sw = out, None, None
    return tuple(None if v is None else _numpy(v) for v in (px, py, sw))


def _numpy(value):
    """A tensor, array or list as one array; a dict of them as a dict of arrays."""
    if isinstance(value, dict):
        return {k: _numpy(v) for k, v in value.items()}
    return np.asarray(keras.ops.convert_to_numpy(value))


def _shapes(outputs):
    if isinstance(outputs, dict):
        return {k: tuple(np.shape(v)) for k, v in outputs.items()}
    return tuple(np.shape(outputs))


def _assert_text_dependent(outputs, atol, what):
    spreads = [float(np.ptp(a, axis=0).max()) for a in tf.nest.flatten(_to_numpy(outputs))
               if np.ndim(a) and len(a) > 1]
    assert spreads and max(spreads) > 100 * atol, (
        f"{what}: outputs differ across the examples by at most {max(spreads or [0]):.2g}; "
        f"equal at atol={atol} would prove nothing. Give examples (or a model) whose outputs "
        "differ.")


def _unnamed(config):
    """``config`` (JSON) without the ``name`` entries: each model and layer made gets a name
    of its own (``bert_classifier_1``)."""
    if isinstance(config, dict):
        return {k: _unnamed(v) for k, v in config.items() if k != "name"}
    if isinstance(config, list):
        return [_unnamed(v) for v in config]
    return config


def _assert_same_config(got, want, what):
    got, want = (_unnamed(json.loads(json.dumps(c))) for c in (got, want))
    assert got == want, (what, got, want)


def _default_serving_outputs(predictions):
    return predictions if isinstance(predictions, dict) else {"logits": predictions}


def check_task(cls, x, y=None, *, tmp_path, output_shape=None, preset=PRESET, fit=True,
               raw_predict=True, export_inputs=None, export_options=None,
               serving_outputs=_default_serving_outputs, atol=1e-5, **kwargs):
    """The checks of the module docstring for task class ``cls`` on ``preset`` (built with
    ``kwargs``: head, preprocessor and `BertConfig` arguments). ``tmp_path``: a directory for
    the files made. Returns a `TaskCheck`."""
    name = cls.__name__
    model = cls.from_preset(preset, **kwargs)
    assert isinstance(model, cls) and model.preprocessor is not None, name

    # 1. fit on raw inputs: one step
    if fit:
        history = model.fit(x, y, epochs=1, verbose=0)
        assert np.isfinite(history.history["loss"]).all(), (name, history.history)
        assert int(model.optimizer.iterations) == 1, name

    # 2. predict: shape, and outputs that depend on the input
    px, py, psw = pack(model.preprocessor, x, y)
    predictions = _to_numpy(model.predict(x, verbose=0))
    if output_shape is not None:
        want = ({k: tuple(v) for k, v in output_shape.items()}
                if isinstance(output_shape, dict) else tuple(output_shape))
        assert _shapes(predictions) == want, (name, _shapes(predictions), want)
    reference = predictions if raw_predict else _to_numpy(model.predict(px, verbose=0))
    _assert_text_dependent(reference, atol, name)

    def outputs(other):  # what ``other`` predicts, comparable to ``reference``
        return other.predict(x if raw_predict else px, verbose=0)

    # 3. get_config / from_config
    config = model.get_config()
    json.dumps(config)
    rebuilt = cls.from_config(config)
    _assert_same_config(rebuilt.get_config(), config, f"{name}.from_config")

    # 4. .keras round trip
    path = tmp_path / f"{name}.keras"
    model.save(path)
    keras_loaded = keras.saving.load_model(path)
    assert isinstance(keras_loaded, cls), type(keras_loaded)
    _assert_same_config(keras_loaded.get_config(), config, f"{name} after .keras")
    _assert_close(outputs(keras_loaded), reference, atol, f"{name} after a .keras round trip")

    # 5. save_to_preset / from_preset, with and without the preprocessor
    directory = str(tmp_path / f"{name}_preset")
    assert model.save_to_preset(directory) == directory
    preset_loaded = cls.from_preset(directory)
    _assert_same_config(preset_loaded.get_config(), config, f"{name} from its saved preset")
    bare = cls.from_preset(directory, preprocessor=None)
    assert bare.preprocessor is None, name
    want = predictions if raw_predict else reference
    _assert_close(bare.predict(px, verbose=0), want, atol,
                  f"{name} from its saved preset, preprocessor=None, on packed inputs")
    loss = bare.evaluate(px, py, sample_weight=psw, verbose=0, return_dict=True)["loss"]
    assert np.isfinite(loss), (name, loss)

    # 6. the serving export gives predict's outputs
    if export_inputs is not None:
        export_dir = model.export(str(tmp_path / f"{name}_export" / "1"),
                                  **(export_options or {}))
        serve = tf.saved_model.load(export_dir).signatures["serving_default"]
        served = serve(**{k: tf.constant(v) for k, v in export_inputs.items()})
        for key, value in serving_outputs(predictions).items():
            _assert_close(served[key], value, atol, f"{name} export: {key}")

    return TaskCheck(model, path, keras_loaded, preset_loaded, bare, px, py, predictions)
