"""Serving SavedModels of keras_bert task models, for the local server's tests and benchmark.

Tiny `BertClassifier`s WITH their `BertPreprocessor` (tensorflow-text ops in the graph),
exported by ``model.export`` as a user exports them: the server is tested on the product's own
serving SavedModels (signatures ``serving_default`` and ``serving_ids``).
"""

import pathlib

import keras
import numpy as np
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


def write_serving_model(model, directory):
    """``model.export`` (the product's serving export) to ``<directory>/1``; returns that path.

    Its signatures, as `keras_bert.export.task_export` documents them: ``serving_default``
    takes ``text`` (tf.string ``[batch]``), ``serving_ids`` takes ``input_word_ids``,
    ``input_mask``, ``input_type_ids`` (int32 ``[batch, seq]``); both answer ``logits``,
    ``probabilities`` (float32 ``[batch, num_classes]``) and ``label_ids`` (int32 ``[batch]``).
    """
    return model.export(str(pathlib.Path(directory) / "1"), verbose=False)


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


def text_request(texts=SENTENCES):
    """A Predict request's inputs of ``texts``: ``{"text": object array of UTF-8 bytes}``."""
    array = np.empty(len(texts), dtype=object)
    array[:] = [t.encode("utf-8") for t in texts]
    return {"text": array}


def predict_texts(servable, texts=SENTENCES):
    """``servable``'s default signature on ``texts``."""
    return servable.predict(servable.signature(""), text_request(texts))


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


def write_litert_version(directory):
    """A version directory for TF Serving's --prefer_tflite_model: the serving SavedModel of
    a tiny classifier (TEST_MODELS' sentiment_v1) and its LiteRT model beside it,
    ``<directory>/1/model.tflite`` (``model.export(path, format="litert")``, as a user
    writes it). Returns (the version directory, the LiteRT model's path)."""
    seed, num_classes = TEST_MODELS["sentiment_v1"]
    model = tiny_classifier(seed=seed, num_classes=num_classes)
    path = write_serving_model(model, directory)
    tflite = model.export(str(pathlib.Path(path) / "model.tflite"), format="litert")
    return path, tflite
