"""SavedModelEncoder: an exported encoder fine-tunes in Keras 3 with AdamW; and the same
export fine-tunes in tf-keras through tensorflow_hub.KerasLayer (in its own process)."""

import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_bert
from keras_bert.export import export_encoder, export_preprocessor
from keras_bert.layers import SavedModelEncoder
from keras_bert.training import create_optimizer
from tests.dependencies import require_installed
from tests.models.tiny import NEGATIVE, POSITIVE, VOCAB, tiny_encoder

NAMES = ("input_word_ids", "input_mask", "input_type_ids")


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    keras.utils.set_random_seed(0)
    model = keras_bert.BertClassifier(tiny_encoder(), 2,
                                      preprocessor=keras_bert.BertPreprocessor(VOCAB, 12))
    return export_encoder(model, tmp_path_factory.mktemp("export") / "encoder"), model


@pytest.fixture(scope="module")
def data(exported):
    texts = POSITIVE + NEGATIVE
    x = {k: v.numpy() for k, v in exported[1].preprocessor(texts).items()}
    y = np.array([1] * len(POSITIVE) + [0] * len(NEGATIVE))
    return x, y


def _classifier(layer):
    inputs = {n: keras.Input((None,), dtype="int32", name=n) for n in NAMES}
    logits = keras.layers.Dense(2)(layer(inputs)["pooled_output"])
    return keras.Model(inputs, logits)


def test_fine_tunes_with_adamw(exported, data):
    path, original = exported
    keras.utils.set_random_seed(1)
    layer = SavedModelEncoder(path)
    model = _classifier(layer)
    # keras_bert's recipe: AdamW with weight decay by variable name, warm-up, clipping (a
    # high peak rate: a tiny random encoder on 16 examples).
    model.compile(create_optimizer(1e-2, num_train_steps=40, num_warmup_steps=4),
                  keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    names = [w.name for w in layer.trainable_weights]
    assert len(names) == len(original.encoder.trainable_weights)
    assert all(":" not in n and "/" not in n for n in names)
    assert "embeddings_word_embeddings" in names
    before = [w.numpy().copy() for w in layer.trainable_weights]
    x, y = data
    history = model.fit(x, y, epochs=10, batch_size=4, verbose=0)
    losses = history.history["loss"]
    assert losses[-1] < 0.5 * losses[0], losses
    changed = [np.abs(w.numpy() - b).max() > 0 for w, b in zip(layer.trainable_weights, before)]
    assert all(changed)
    # The Keras variables are the SavedModel's own: its function sees the trained weights.
    assert layer.trainable_weights[0].value is layer._loaded.trainable_variables[0]
    assert np.mean(np.argmax(model.predict(x, verbose=0), -1) == y) == 1.0


def test_training_flag_runs_dropout_and_frozen_layer(exported, data):
    path, original = exported
    x = data[0]
    layer = SavedModelEncoder(path, trainable=False)
    assert layer.trainable_weights == [] and len(layer.non_trainable_weights) == len(
        original.encoder.variables)
    inference = layer(x)["pooled_output"].numpy()
    np.testing.assert_allclose(inference, original.encoder(x)["pooled_output"], atol=1e-6)
    training = layer(x, training=True)["pooled_output"].numpy()
    assert np.abs(training - inference).max() > 1e-4
    assert sorted(layer(x)) == ["default", "encoder_outputs", "pooled_output",
                                "sequence_output"]


def test_keras_file_round_trip_needs_unsafe_mode(exported, data, tmp_path):
    model = _classifier(SavedModelEncoder(exported[0]))
    model.save(tmp_path / "m.keras")
    with pytest.raises(ValueError, match="refused in safe mode"):
        keras.saving.load_model(tmp_path / "m.keras")
    again = keras.saving.load_model(tmp_path / "m.keras", safe_mode=False)
    np.testing.assert_allclose(again.predict(data[0], verbose=0),
                               model.predict(data[0], verbose=0), atol=1e-6)


def test_errors(exported, tmp_path):
    with pytest.raises(ValueError, match="is not a SavedModel"):
        SavedModelEncoder(tmp_path)
    preprocessor = export_preprocessor(exported[1], tmp_path / "preprocessor")
    with pytest.raises(ValueError, match="is not a BERT encoder in the TF Hub format"):
        SavedModelEncoder(preprocessor)
    with pytest.raises(TypeError, match="takes a dict of input_word_ids"):
        SavedModelEncoder(exported[0])({"input_word_ids": tf.constant([[2, 3]])})


HUB_FINE_TUNING = """
import sys
sys.modules["keras_bert"] = None  # the TF Hub user's process: no keras_bert
import json
import numpy as np
import tensorflow as tf
import tensorflow_hub as hub
import tf_keras

values = json.loads(sys.argv[1])
tf_keras.utils.set_random_seed(1)
names = ("input_word_ids", "input_mask", "input_type_ids")
inputs = {n: tf_keras.Input((None,), dtype="int32", name=n) for n in names}
layer = hub.KerasLayer(values["path"], trainable=True)
logits = tf_keras.layers.Dense(2)(layer(inputs)["pooled_output"])
model = tf_keras.Model(inputs, logits)
learning_rate = tf_keras.optimizers.schedules.PolynomialDecay(1e-2, 40, 0.0)  # to 0 at the end
model.compile(tf_keras.optimizers.AdamW(learning_rate, global_clipnorm=1.0),
              tf_keras.losses.SparseCategoricalCrossentropy(from_logits=True))
x = {n: np.array(values["x"][n], "int32") for n in names}
y = np.array(values["y"])
before = [w.numpy().copy() for w in layer.trainable_weights]
history = model.fit(x, y, epochs=10, batch_size=4, verbose=0)
changed = sum(bool(np.abs(w.numpy() - b).max() > 0)
              for w, b in zip(layer.trainable_weights, before))
print(json.dumps({"losses": history.history["loss"], "changed": changed,
                  "trainable": len(layer.trainable_weights)}))
"""


def test_fine_tunes_in_tf_keras_with_tensorflow_hub(exported, data, tmp_path):
    import json

    for module in ("tensorflow_hub", "tf_keras"):
        require_installed(module)
    x, y = data
    values = {"path": exported[0], "x": {k: v.tolist() for k, v in x.items()},
              "y": y.tolist()}
    result = subprocess.run([sys.executable, "-c", HUB_FINE_TUNING, json.dumps(values)],
                            cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-4000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["trainable"] == len(exported[1].encoder.trainable_weights)
    assert report["changed"] == report["trainable"]
    assert report["losses"][-1] < 0.5 * report["losses"][0], report["losses"]
