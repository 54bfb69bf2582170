"""Serving SavedModels of keras_bert task models, for the local server's tests and benchmark.

Until `model.export` (issue 10's export half) is merged, this is how the server's tests get
something real to serve: a `tf.Module` around a `BertClassifier` WITH its `BertPreprocessor`
(tensorflow-text ops in the graph), saved in TF Serving's versioned layout with two
signatures:

- ``serving_default``: ``text`` (tf.string ``[batch]``) -> ``probabilities``
  (float32 ``[batch, num_classes]``) and ``label_ids`` (int64 ``[batch]``);
- ``token_ids``: ``input_word_ids``, ``input_mask``, ``input_type_ids`` (int32
  ``[batch, seq]``) -> the same outputs.

After the merge, `write_serving_model` can become ``model.export(export_dir)``: the tests only
rely on the signature and tensor names above.
"""

import pathlib

import keras
import tensorflow as tf

from keras_bert import BertClassifier, BertConfig, BertEncoder, BertPreprocessor

WORDS = ("a the movie film great good fun dull bad boring plot actor is was not very "
         "and but it this what who why sat cat dog ran red blue paris london").split()
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS + ["##s", "##ing", "##ed", ".",
                                                                   ",", "!", "?"]
SENTENCES = ["a great movie", "dull and bad", "the actor is very good!", "what a boring plot",
             "the cat sat", "paris and london", "", "Émile's café ☕"]


def tiny_classifier(seed=0, num_classes=2, seq_length=16):
    """A random 2-layer `BertClassifier` (hidden size 16) with a `BertPreprocessor` on VOCAB."""
    keras.utils.set_random_seed(seed)
    encoder = BertEncoder(BertConfig(
        vocab_size=len(VOCAB), hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=32, max_position_embeddings=64))
    preprocessor = BertPreprocessor(VOCAB, seq_length=seq_length)
    return BertClassifier(encoder, num_classes=num_classes, preprocessor=preprocessor,
                          dropout=0.0)


def preset_classifier(preset, seed=0, num_classes=2, seq_length=128):
    """`BertClassifier.from_preset(preset)` (e.g. ``minilm_l6``) with a seeded fresh head."""
    keras.utils.set_random_seed(seed)
    return BertClassifier.from_preset(preset, num_classes=num_classes, seq_length=seq_length)


def serving_module(model):
    """A tf.Module exposing `model`'s signatures; the Keras model itself is not tracked (that
    would save its variables twice), its variables are, explicitly."""
    preprocessor = model.preprocessor
    token_spec = tf.TensorSpec([None, None], tf.int32)

    def outputs(packed):
        logits = model(packed, training=False)  # [batch, num_classes]
        return {"probabilities": tf.nn.softmax(tf.cast(logits, tf.float32), axis=-1),
                "label_ids": tf.argmax(logits, axis=-1)}  # int64 [batch]

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="text")])
    def serve_text(text):
        return outputs(preprocessor(text))

    @tf.function(input_signature=[token_spec, token_spec, token_spec])
    def serve_token_ids(input_word_ids, input_mask, input_type_ids):
        return outputs({"input_word_ids": input_word_ids, "input_mask": input_mask,
                        "input_type_ids": input_type_ids})

    module = tf.Module()
    module.model_variables = [v.value for v in model.variables]
    module.serve_text = serve_text
    module.serve_token_ids = serve_token_ids
    return module


def write_serving_model(model, export_dir):
    """Saves `model` as a serving SavedModel in `export_dir` (e.g. ``<base>/<name>/1``)."""
    module = serving_module(model)
    signatures = {
        "serving_default": module.serve_text.get_concrete_function(),
        "token_ids": module.serve_token_ids.get_concrete_function(),
    }
    export_dir = pathlib.Path(export_dir)
    export_dir.parent.mkdir(parents=True, exist_ok=True)
    tf.saved_model.save(module, str(export_dir), signatures=signatures)
    return str(export_dir)


# The SavedModels the server tests serve: name -> (seed, num_classes).
TEST_MODELS = {"sentiment_v1": (0, 2), "sentiment_v2": (1, 2), "topics_v1": (2, 3)}


def expected_outputs(model, texts):
    """What the serving signature must answer for `texts`: the Keras model's own outputs."""
    logits = model.predict(list(texts), verbose=0)
    return {"probabilities": tf.nn.softmax(logits, axis=-1).numpy(),
            "label_ids": logits.argmax(axis=-1)}


def write_test_models(directory):
    """Writes TEST_MODELS under `directory` (not in the versioned layout: tests copy them to
    `<base>/<version>`); returns name -> (path, expected outputs on SENTENCES)."""
    found = {}
    for name, (seed, num_classes) in TEST_MODELS.items():
        model = tiny_classifier(seed=seed, num_classes=num_classes)
        path = write_serving_model(model, pathlib.Path(directory) / name)
        found[name] = (path, expected_outputs(model, SENTENCES))
    return found


def install_version(saved_model, base_path, version):
    """Copies a SavedModel to `<base_path>/<version>` the safe way: into a hidden temporary
    directory beside it, then one rename (a poller never sees half a version)."""
    import shutil

    base_path = pathlib.Path(base_path)
    base_path.mkdir(parents=True, exist_ok=True)
    staging = base_path / f".incoming-{version}"
    shutil.copytree(saved_model, staging)
    staging.rename(base_path / str(version))
    return str(base_path / str(version))
