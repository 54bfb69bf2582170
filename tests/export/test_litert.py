"""model.export(path, format="litert"): the LiteRT model of a classifier, a multiple-choice
model and an encoder runs in ai-edge-litert's interpreter with the SavedModel's outputs
(float32 within 1e-4), int8 agrees with float32 on real reviews, no Flex op; its errors.

The tiny models here are built with TEXT_DEPENDENT weights: their outputs differ across
texts, between (a, b) and (b, a) and across choices by far more than the tolerance (each test
asserts it), so an export that ignored its text, swapped a pair or packed the choices in
another order would fail."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_bert
from keras_bert.export import (ExportError, export_encoder, export_litert,
                               export_preprocessor, litert_model)
from tests.dependencies import require
from tests.models.tiny import NEGATIVE, POSITIVE, TEXT_DEPENDENT, VOCAB, tiny_encoder

TOKENIZER_OPS = ["FastBertNormalize", "FastWordpieceTokenizeWithOffsets"]
TEXTS = POSITIVE[:3] + NEGATIVE[:3] + [
    "", "the cat sat on the red dog and the actor ran !", "Émile's CAFÉ, ¿qué? 中文 ☕",
    "control\x00chars\x7f here", "the " * 40]
ATOL = 1e-4
SIGNAL = 100 * ATOL  # what the outputs a test compares must differ by across inputs


@pytest.fixture(scope="module", autouse=True)
def litert():
    require("ai_edge_litert")


@pytest.fixture(scope="module")
def encoder():
    return tiny_encoder(seed=3, **TEXT_DEPENDENT)


def _check_ops(path):
    ops = litert_model.ops(path)
    assert not [op for op in ops if op.startswith("Flex")], ops
    assert litert_model.custom_ops(path) == TOKENIZER_OPS
    assert "FULLY_CONNECTED" in ops


def _both(model, tmp_path, name, **options):
    """(the SavedModel's signatures, the LiteRT model) of ``model``."""
    saved = tf.saved_model.load(model.export(str(tmp_path / name / "1"), **options))
    path = model.export(str(tmp_path / f"{name}.tflite"), format="litert", **options)
    _check_ops(path)
    lite = litert_model.load(path)
    assert sorted(lite.signatures) == ["serving_default", "serving_ids"]
    return saved.signatures, lite


def _varies(values):
    """Each column of ``values`` [batch, ...] spans more than SIGNAL across the batch: an
    output that did not depend on its input would be more than ATOL from it somewhere."""
    spread = np.ptp(np.asarray(values), axis=0)
    assert spread.min() > SIGNAL, spread


def _differ(a, b):
    """``a`` and ``b`` (outputs of two different inputs) differ by more than SIGNAL."""
    assert np.abs(np.asarray(a) - np.asarray(b)).max() > SIGNAL


def _close(got, want):
    assert sorted(got) == sorted(want)
    for key, value in want.items():
        value = value.numpy()
        assert got[key].dtype == value.dtype, key
        if value.dtype.kind == "f":
            np.testing.assert_allclose(got[key], value, atol=ATOL, err_msg=key)
        else:
            np.testing.assert_array_equal(got[key], value, err_msg=key)


def test_classifier_gives_the_saved_models_outputs(encoder, tmp_path):
    model = keras_bert.BertClassifier(encoder, 3,
                                      preprocessor=keras_bert.BertPreprocessor(VOCAB, 16))
    saved, lite = _both(model, tmp_path, "classifier", label_names=["neg", "neutral", "pos"])
    assert lite.signatures["serving_default"]["inputs"] == {"text": (np.dtype(object), (-1,))}
    out = lite(text=TEXTS)
    _close(out, saved["serving_default"](text=tf.constant(TEXTS)))
    want = model.predict(TEXTS, verbose=0)
    _varies(want)
    np.testing.assert_allclose(out["logits"], want, atol=ATOL)
    for size in (1, 5, 0):  # batch sizes change between calls
        _close(lite(text=TEXTS[:size]),
               saved["serving_default"](text=tf.constant(TEXTS[:size], tf.string)))
    packed = model.preprocessor(TEXTS)  # [batch, 16], padding past the longest included
    _close(lite("serving_ids", **{k: v.numpy() for k, v in packed.items()}),
           saved["serving_ids"](**packed))


def test_classifier_pairs_and_regression(encoder, tmp_path):
    preprocessor = keras_bert.BertPreprocessor(VOCAB, 12)
    model = keras_bert.BertClassifier(encoder, 2, preprocessor=preprocessor)
    lite = litert_model.load(model.export(str(tmp_path / "pairs.tflite"), format="litert",
                                          pairs=True))
    a, b = TEXTS, TEXTS[::-1]
    want = model.predict((a, b), verbose=0)
    _varies(want)
    _differ(want, model.predict((b, a), verbose=0))  # the pair's order counts
    np.testing.assert_allclose(lite(text_a=a, text_b=b)["logits"], want, atol=ATOL)
    regression = keras_bert.BertClassifier(encoder, 1, preprocessor=preprocessor)
    lite = litert_model.load(regression.export(str(tmp_path / "sts.tflite"), format="litert"))
    out = lite(text=TEXTS)
    assert sorted(out) == ["score"] and out["score"].shape == (len(TEXTS),)
    want = regression.predict(TEXTS, verbose=0)[:, 0]
    _varies(want)
    np.testing.assert_allclose(out["score"], want, atol=ATOL)


def test_multiple_choice(encoder, tmp_path):
    model = keras_bert.BertMultipleChoice(
        encoder, 3, preprocessor=keras_bert.BertMultipleChoicePreprocessor(VOCAB, 10))
    # The head from a draw of its own, whichever tests ran before (Keras' global seed moves
    # with each), so that the choices' logits stay apart (the gaps below).
    rng = np.random.default_rng(0)
    for variable, _ in model.head_variables().values():
        variable.assign(rng.normal(0, 1.0, variable.shape).astype("float32"))
    saved, lite = _both(model, tmp_path, "choice")
    contexts = ["the cat", "a dog", ""]
    choices = [["sat", "ran", "is red"], ["ran", "sat", "was fun"], ["a", "", "the movie"]]
    out = lite(context=contexts, choices=choices)
    _close(out, saved["serving_default"](context=tf.constant(contexts),
                                         choices=tf.constant(choices)))
    assert out["probabilities"].shape == (3, 3)
    want = model.predict((contexts, choices), verbose=0)
    _varies(want)
    gaps = np.abs(want[:, :, None] - want[:, None, :]) + np.eye(3) * SIGNAL * 2
    assert gaps.min() > SIGNAL  # any other order of a row's choices changes its logits
    np.testing.assert_allclose(out["logits"], want, atol=ATOL)
    packed = model.preprocessor((contexts, choices))
    _close(lite("serving_ids", **{k: v.numpy() for k, v in packed.items()}),
           saved["serving_ids"](**packed))


def test_encoder_gives_the_tf_hub_exports_outputs(encoder, tmp_path):
    hub = tf.saved_model.load(export_encoder(encoder, str(tmp_path / "encoder"),
                                             vocabulary=VOCAB, do_lower_case=True))
    preprocess = tf.saved_model.load(export_preprocessor(
        keras_bert.BertPreprocessor(VOCAB, seq_length=32), str(tmp_path / "preprocess")))
    path = export_litert(encoder, str(tmp_path / "encoder.tflite"), vocabulary=VOCAB,
                         do_lower_case=True, seq_length=32)
    _check_ops(path)
    lite = litert_model.load(path)
    out = lite(text=TEXTS)
    assert sorted(out) == ["input_mask", "pooled_output", "sequence_output"]
    packed = preprocess(tf.constant(TEXTS))
    want = hub.signatures["serving_default"](**packed)
    seq = out["input_mask"].shape[1]  # the batch's longest sequence, rounded up to 8
    assert seq == 32 and out["sequence_output"].shape == (len(TEXTS), seq, 16)
    np.testing.assert_array_equal(out["input_mask"], packed["input_mask"][:, :seq])
    _varies(want["pooled_output"])
    np.testing.assert_allclose(out["pooled_output"], want["pooled_output"], atol=ATOL)
    mask = out["input_mask"].astype(bool)
    np.testing.assert_allclose(out["sequence_output"][mask],
                               want["sequence_output"].numpy()[:, :seq][mask], atol=ATOL)
    short = lite(text=POSITIVE[:2])
    assert short["input_mask"].shape == (2, 8)  # a short batch costs what its tokens cost
    ids = lite("serving_ids", **{k: v.numpy() for k, v in packed.items()})
    assert sorted(ids) == ["pooled_output", "sequence_output"]
    np.testing.assert_allclose(ids["pooled_output"], want["pooled_output"], atol=ATOL)


def test_a_task_models_encoder_uses_its_preprocessor(encoder, tmp_path):
    model = keras_bert.BertClassifier(encoder, 2,
                                      preprocessor=keras_bert.BertPreprocessor(VOCAB, 16))
    path = model.export(str(tmp_path / "enc.tflite"), format="litert", encoder_only=True,
                        pairs=True)
    a, b = TEXTS, TEXTS[::-1]
    out = litert_model.load(path)(text_a=a, text_b=b)
    assert out["input_mask"].shape == (len(TEXTS), 16)  # the preprocessor's seq_length
    want = encoder(model.preprocessor((a, b)))["pooled_output"].numpy()
    _varies(want)
    _differ(want, encoder(model.preprocessor((b, a)))["pooled_output"])
    np.testing.assert_allclose(out["pooled_output"], want, atol=ATOL)


def test_int8_on_real_reviews(tmp_path):
    """minilm_l6 with a seeded head: int8 agrees with the float32 model on the label of
    nearly every real review and is 3.3x smaller than its float32 weights. The head's kernel
    is scaled 20x: a random head's probabilities span 0.49-0.51 (a constant 0.5 would be
    within any tolerance of them), these span ~0.31-0.69; int8 moves them by ~0.024 at most."""
    from keras_bert.data import movie_reviews

    keras.utils.set_random_seed(0)
    model = keras_bert.BertClassifier.from_preset("minilm_l6", num_classes=2, seq_length=128)
    model.logits.kernel.assign(model.logits.kernel * 20.0)
    texts = movie_reviews.load()["test"][0][:64]
    path = model.export(str(tmp_path / "int8.tflite"), format="litert", quantize="int8")
    _check_ops(path)
    int8 = litert_model.load(path)
    assert int8.size < 4 * model.count_params() / 3.3
    want = tf.nn.softmax(model.predict(texts, verbose=0)).numpy()
    assert np.ptp(want[:, 1]) > 0.3  # 6x the tolerance below
    got = np.concatenate([int8(text=texts[i:i + 32])["probabilities"] for i in (0, 32)])
    assert np.abs(got - want).max() < 0.05
    assert (got.argmax(-1) == want.argmax(-1)).mean() >= 0.95


def test_text_embedder_gives_the_saved_models_embeddings(encoder, tmp_path):
    model = keras_bert.BertTextEmbedder(
        encoder, preprocessor=keras_bert.BertTextEmbedderPreprocessor(VOCAB, 16))
    saved, lite = _both(model, tmp_path, "embedder")
    out = lite(text=TEXTS)
    _close(out, saved["serving_default"](text=tf.constant(TEXTS)))
    want = model.encode(TEXTS)
    _varies(want)
    np.testing.assert_allclose(out["embeddings"], want, atol=ATOL)
    packed = model.preprocessor(TEXTS)
    _close(lite("serving_ids", **{k: v.numpy() for k, v in packed.items()}),
           saved["serving_ids"](**packed))
    model.prompts, model.default_prompt_name = {"query": "query: "}, "query"
    with pytest.raises(ExportError, match="cannot put this model's default prompt"):
        model.export(str(tmp_path / "prompted.tflite"), format="litert")


def _cosines(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return (a * b).sum(-1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)


def test_text_embedder_int8_on_real_reviews(tmp_path):
    """minilm_l6's embeddings of real reviews: LiteRT int8 and the SavedModel of the model
    after model.quantize("int8") each keep cosine >= 0.99 to the float32 vectors."""
    from keras_bert.data import movie_reviews

    model = keras_bert.BertTextEmbedder.from_preset("minilm_l6", seq_length=128)
    texts = movie_reviews.load()["test"][0][:32]
    want = model.encode(texts)
    int8 = litert_model.load(model.export(str(tmp_path / "int8.tflite"), format="litert",
                                          quantize="int8"))
    assert _cosines(int8(text=texts)["embeddings"], want).min() >= 0.99
    model.quantize("int8")
    serve = tf.saved_model.load(model.export(str(tmp_path / "int8" / "1")))
    got = serve.signatures["serving_default"](text=tf.constant(texts))["embeddings"]
    assert _cosines(got, want).min() >= 0.99
    assert np.abs(got - want).max() > 1e-4  # int8 weights: close, not equal


def _int8_tensors(path):
    """How many int8 tensors the LiteRT model holds (weights, after quantization)."""
    from tensorflow.lite.python import schema_py_generated as schema

    with tf.io.gfile.GFile(path, "rb") as f:
        model = schema.Model.GetRootAsModel(f.read(), 0)
    graph = model.Subgraphs(0)
    return sum(graph.Tensors(i).Type() == schema.TensorType.INT8
               for i in range(graph.TensorsLength()))


def test_keras_spelling_of_int8_and_remote_paths():
    # (LiteRT quantizes weights of 1024 values or more: not those of a hidden size of 16.)
    encoder = tiny_encoder(seed=0, hidden_size=64, intermediate_size=128, **TEXT_DEPENDENT)
    model = keras_bert.BertClassifier(encoder, 2,
                                      preprocessor=keras_bert.BertPreprocessor(VOCAB, 8))
    path = "ram://litert_test/models/sentiment/1/model.tflite"
    assert model.export(path, format="litert",
                        optimizations=[tf.lite.Optimize.DEFAULT]) == path
    assert _int8_tensors(path) > 0  # what quantize="int8" gives
    lite = litert_model.load(path)  # read back through tf.io.gfile
    want = model.predict(TEXTS, verbose=0)
    spread = np.ptp(want, axis=0).min()  # ~0.53: int8 moves the logits by ~0.056 at most
    assert spread > 0.3
    assert np.abs(lite(text=TEXTS)["logits"] - want).max() < spread / 4


def test_errors(encoder, tmp_path):
    pre = keras_bert.BertPreprocessor(VOCAB, 8)
    model = keras_bert.BertClassifier(encoder, 2, preprocessor=pre)
    target = str(tmp_path / "m.tflite")
    cases = [
        (dict(filepath=str(tmp_path / "m")), r"ends in \.tflite"),
        (dict(filepath=str(tmp_path)), r"ends in \.tflite"),
        (dict(quantize="int4"), r"quantize must be one of \(None, 'int8'\)"),
        (dict(quantize="int8", optimizations=[]), "not both"),
        (dict(optimizations=[tf.lite.Optimize.EXPERIMENTAL_SPARSITY]), "takes \\[\\]"),
        (dict(input_signature=[]), "signatures are fixed"),
        (dict(seq_length=16), "seq_length: only an encoder export"),
        (dict(encoder_only=True, label_names=["a", "b"]), "an encoder has no class labels"),
        (dict(label_names=["only one"]), "label_names must be 2 strings"),
    ]
    for options, message in cases:
        with pytest.raises(ExportError, match=message):
            export_litert(model, **{"filepath": target, **options})
    with pytest.raises((TypeError, ValueError), match="pairs"):
        export_litert(model, target, pairs="yes")
    (tmp_path / "dir.tflite").mkdir()
    with pytest.raises(ExportError, match="is a directory"):
        export_litert(model, str(tmp_path / "dir.tflite"))
    for task in (keras_bert.BertTokenClassifier(
                     encoder, 3, preprocessor=keras_bert.BertTokenClassifierPreprocessor(
                         VOCAB, 8)),
                 keras_bert.BertSpanLabeler(encoder, preprocessor=pre),
                 keras_bert.BertMaskedLM(encoder, preprocessor=pre)):
        with pytest.raises(ExportError, match="string ops that LiteRT has no kernels for"):
            task.export(target, format="litert")
    with pytest.raises(ExportError, match="no preprocessor"):
        keras_bert.BertClassifier(encoder, 2).export(target, format="litert")
    with pytest.raises(ExportError, match="pass vocabulary="):
        export_litert(tiny_encoder(), target)
    with pytest.raises(ValueError, match="seq_length"):
        export_litert(encoder, target, vocabulary=VOCAB, do_lower_case=True, seq_length=65)
    with pytest.raises(ExportError, match="takes a keras_bert task model"):
        export_litert(keras.Sequential([keras.layers.Dense(1)]), target, encoder_only=True)
    quantized = keras_bert.BertClassifier(tiny_encoder(), 2, preprocessor=pre)
    quantized.quantize("int8")
    with pytest.raises(ExportError, match="quantized by Keras"):
        quantized.export(target, format="litert")
    assert not (tmp_path / "m.tflite").exists()  # nothing written by a refused export


def test_multi_label_classifier(encoder, tmp_path):
    """Each class's sigmoid and the names of those above 0.5, as the SavedModel gives them."""
    model = keras_bert.BertClassifier(encoder, 3, multi_label=True,
                                      label_names=["plot", "acting", "music"],
                                      preprocessor=keras_bert.BertPreprocessor(VOCAB, 16))
    saved, lite = _both(model, tmp_path, "multi_label")
    out = lite(text=TEXTS)
    _close(out, saved["serving_default"](text=tf.constant(TEXTS)))
    _varies(out["probabilities"])
    named = out["labels"].astype(bool)
    assert named.any() and not named.all()
