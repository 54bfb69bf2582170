"""Exports load where keras_bert is not: a fresh process that imports only tensorflow and
tensorflow_text, through the TF2 loader and the TF1 session loader that TF Serving and
``saved_model_cli run`` use; and the minilm_l6 encoder there matches Hugging Face. With
``KERAS_BERT_OLDER_TENSORFLOW`` naming a Python of an older TensorFlow (`make
test-older-tensorflow`: the TensorFlow of TF Serving 2.20), the same exports run there too."""

import os

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_bert
from keras_bert.export import export_encoder, export_preprocessor
from tests.checkpoints.test_huggingface import SENTENCES
from tests.dependencies import require
from tests.export import fresh_process
from tests.models.tiny import NEGATIVE, POSITIVE, VOCAB, tiny_encoder
from tests.text import corpus

# TF2: tf.saved_model.load; TF1: a Session with the serving_default signature's tensors.
LOAD_AND_RUN = """
import tensorflow_text  # registers the tokenizer's ops (what a serving binary links)

def tf2(path, inputs):
    signature = tf.saved_model.load(path).signatures["serving_default"]
    return {k: v.numpy() for k, v in signature(**{k: tf.constant(v)
                                                  for k, v in inputs.items()}).items()}

def tf1(path, inputs):
    with tf.Graph().as_default(), tf.compat.v1.Session() as session:
        meta_graph = tf.compat.v1.saved_model.loader.load(session, ["serve"], path)
        signature = meta_graph.signature_def["serving_default"]
        feeds = {signature.inputs[k].name: v for k, v in inputs.items()}
        fetches = {k: t.name for k, t in signature.outputs.items()}
        return session.run(fetches, feeds)

results = {}
for name, case in VALUES["cases"].items():
    inputs = dict(np.load(case["inputs"]))
    for loader in (tf2, tf1):
        for key, value in loader(case["path"], inputs).items():
            results[f"{name}/{loader.__name__}/{key}"] = value
    if name == "encoder":  # the TF Hub call, training=False, in the fresh process too
        call = tf.saved_model.load(case["path"])(inputs, training=False)
        results["encoder/call/pooled_output"] = call["pooled_output"].numpy()
    if name == "embedder":  # TF Hub's call of a text embedding model: strings -> vectors
        call = tf.saved_model.load(case["path"])(tf.constant(inputs["text"]))
        results["embedder/call/embeddings"] = call.numpy()
np.savez(VALUES["out"], **results)
"""


def _strings(texts):
    return np.array([t.encode("utf-8") for t in texts], dtype=bytes)


MINILM_SEQ_LENGTH = 32


@pytest.fixture(scope="module")
def tiny_model():
    preprocessor = keras_bert.BertPreprocessor(VOCAB, seq_length=24)
    return keras_bert.BertClassifier(tiny_encoder(), 3, preprocessor=preprocessor)


@pytest.fixture(scope="module")
def texts():
    return POSITIVE[:4] + NEGATIVE[:4] + corpus.wikipedia_lines()[:8] + [""]


@pytest.fixture(scope="module")
def int8_model():
    """A tiny classifier after model.quantize("int8"): its export runs the int8 kernel."""
    keras.utils.set_random_seed(7)
    preprocessor = keras_bert.BertPreprocessor(VOCAB, seq_length=24)
    model = keras_bert.BertClassifier(tiny_encoder(), 3, preprocessor=preprocessor)
    model.quantize("int8")
    return model


@pytest.fixture(scope="module")
def embedder():
    preprocessor = keras_bert.BertTextEmbedderPreprocessor(VOCAB, seq_length=24)
    return keras_bert.BertTextEmbedder(tiny_encoder(seed=4, initializer_range=0.2),
                                       preprocessor=preprocessor)


@pytest.fixture(scope="module")
def fresh(tiny_model, int8_model, embedder, texts, tmp_path_factory):
    """Every export here, loaded and run in one fresh process (one TensorFlow start-up):
    the tiny model's encoder, preprocessor and serving exports and the int8 model's serving
    export through both loaders, and the real minilm_l6 encoder fed by its exported
    preprocessor. Returns the results by name."""
    tmp_path = tmp_path_factory.mktemp("fresh")
    packed = {k: v.numpy() for k, v in tiny_model.preprocessor(texts).items()}
    cases = {
        "encoder": (export_encoder(tiny_model, tmp_path / "encoder"), packed),
        "preprocessor": (export_preprocessor(tiny_model, tmp_path / "preprocessor"),
                         {"text": _strings(texts)}),
        "serving": (tiny_model.export(str(tmp_path / "serving" / "1")),
                    {"text": _strings(texts)}),
        "int8_serving": (int8_model.export(str(tmp_path / "int8_serving" / "1")),
                         {"text": _strings(texts)}),
        "embedder": (embedder.export(str(tmp_path / "embedder" / "1")),
                     {"text": _strings(texts)}),
    }
    values = {"cases": {}, "out": str(tmp_path / "out.npz"), "sentences": SENTENCES,
              "minilm_out": str(tmp_path / "minilm.npz")}
    for name, (path, inputs) in cases.items():
        np.savez(tmp_path / f"{name}.npz", **inputs)
        values["cases"][name] = {"path": path, "inputs": str(tmp_path / f"{name}.npz")}
    values["minilm_encoder"] = export_encoder(keras_bert.BertEncoder.from_preset("minilm_l6"),
                                              tmp_path / "minilm_encoder")
    values["minilm_preprocessor"] = export_preprocessor(
        keras_bert.BertPreprocessor.from_preset("minilm_l6", seq_length=MINILM_SEQ_LENGTH),
        tmp_path / "minilm_preprocessor")
    fresh_process.run(LOAD_AND_RUN + MINILM, cwd=tmp_path, **values)
    return (dict(np.load(tmp_path / "out.npz")), dict(np.load(tmp_path / "minilm.npz")),
            values["cases"])


# A Python whose TensorFlow and tensorflow-text are older than this one's (`make
# test-older-tensorflow` makes one with TF Serving 2.20's TensorFlow).
OLDER_TENSORFLOW = os.environ.get("KERAS_BERT_OLDER_TENSORFLOW")


@pytest.mark.skipif(not OLDER_TENSORFLOW, reason="needs KERAS_BERT_OLDER_TENSORFLOW, a Python "
                    "with an older TensorFlow: make test-older-tensorflow")
def test_the_exports_give_the_same_outputs_in_an_older_tensorflow(fresh, tmp_path):
    """TF Serving's binaries run the TensorFlow of their release: every export here, the
    float32 and int8 serving models too, loads and runs in the older TensorFlow's loaders
    (the TF1 session loader is what tensorflow_model_server uses) with this one's outputs."""
    import subprocess

    assert os.access(OLDER_TENSORFLOW, os.X_OK), (
        f"KERAS_BERT_OLDER_TENSORFLOW={OLDER_TENSORFLOW} is not an executable Python")
    version = subprocess.run(
        [OLDER_TENSORFLOW, "-c", "import tensorflow as tf, tensorflow_text as text; "
         "print(tf.__version__, text.__version__)"], capture_output=True, text=True,
        timeout=120, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert version.returncode == 0, version.stderr[-3000:]
    older = version.stdout.split()
    assert older[0] != tf.__version__, f"{OLDER_TENSORFLOW} has this TensorFlow, {older[0]}"
    print(f"older TensorFlow {older[0]}, tensorflow-text {older[1]}")
    fresh_process.run(LOAD_AND_RUN, cwd=tmp_path, python=OLDER_TENSORFLOW,
                      cases=fresh[2], out=str(tmp_path / "older.npz"))
    got, want = dict(np.load(tmp_path / "older.npz")), fresh[0]
    assert sorted(got) == sorted(want)
    for key, value in want.items():
        if value.dtype.kind == "f":
            np.testing.assert_allclose(got[key], value, atol=1e-5, err_msg=key)
        else:
            np.testing.assert_array_equal(got[key], value, err_msg=key)


def test_encoder_preprocessor_and_serving_exports_load_without_keras_bert(tiny_model, texts,
                                                                          fresh):
    got = fresh[0]
    packed = {k: v.numpy() for k, v in tiny_model.preprocessor(texts).items()}
    encoder = tiny_model.encoder(packed)
    logits = tiny_model.predict(texts, verbose=0)
    for loader in ("tf2", "tf1"):
        np.testing.assert_allclose(got[f"encoder/{loader}/sequence_output"],
                                   encoder["sequence_output"], atol=1e-5)
        np.testing.assert_allclose(got[f"encoder/{loader}/pooled_output"],
                                   encoder["pooled_output"], atol=1e-5)
        np.testing.assert_allclose(got[f"encoder/{loader}/encoder_outputs_0"],
                                   encoder["encoder_outputs"][0], atol=1e-5)
        for key, value in packed.items():
            np.testing.assert_array_equal(got[f"preprocessor/{loader}/{key}"], value)
        np.testing.assert_allclose(got[f"serving/{loader}/logits"], logits, atol=1e-5)
        np.testing.assert_array_equal(got[f"serving/{loader}/label_ids"], logits.argmax(-1))
    np.testing.assert_allclose(got["encoder/call/pooled_output"], encoder["pooled_output"],
                               atol=1e-5)


def test_an_embedder_export_loads_without_keras_bert(embedder, texts, fresh):
    got = fresh[0]
    want = embedder.encode(texts)
    assert np.ptp(want, axis=0).min() > 1e-2  # vectors that depend on the text
    for source in ("tf2", "tf1", "call"):
        np.testing.assert_allclose(got[f"embedder/{source}/embeddings"], want, atol=1e-5)


def test_an_int8_serving_export_loads_without_keras_bert(int8_model, texts, fresh):
    from keras_bert.export import required_ops
    from keras_bert.export.ops import saved_ops
    from keras_bert.layers import int8

    got = fresh[0]
    logits = int8_model.predict(texts, verbose=0)
    for loader in ("tf2", "tf1"):
        np.testing.assert_allclose(got[f"int8_serving/{loader}/logits"], logits, atol=1e-5)
    path = fresh[2]["int8_serving"]["path"]
    assert int8.OP in saved_ops(path)  # a core op: only the tokenizer's are required
    assert required_ops(path) == ["FastWordpieceTokenizeWithOffsets", "NormalizeUTF8"]


MINILM = """
preprocess = tf.saved_model.load(VALUES["minilm_preprocessor"])
encoder = tf.saved_model.load(VALUES["minilm_encoder"])
inputs = preprocess(tf.constant(VALUES["sentences"]))
outputs = encoder(inputs, training=False)
np.savez(VALUES["minilm_out"], **{k: v.numpy() for k, v in inputs.items()},
         sequence_output=outputs["sequence_output"].numpy(),
         pooled_output=outputs["pooled_output"].numpy())
"""


def test_minilm_export_matches_hugging_face_without_keras_bert(minilm_path, fresh):
    torch = require("torch")
    transformers = require("transformers")
    got = fresh[1]
    tokenizer = transformers.BertTokenizer.from_pretrained(str(minilm_path))
    batch = tokenizer(SENTENCES, padding="max_length", max_length=MINILM_SEQ_LENGTH,
                      return_tensors="np")
    np.testing.assert_array_equal(got["input_word_ids"], batch["input_ids"])
    np.testing.assert_array_equal(got["input_mask"], batch["attention_mask"])
    reference = transformers.BertModel.from_pretrained(str(minilm_path),
                                                       torch_dtype=torch.float32)
    reference.eval()
    with torch.no_grad():
        out = reference(input_ids=torch.from_numpy(batch["input_ids"]).long(),
                        attention_mask=torch.from_numpy(batch["attention_mask"]).long(),
                        token_type_ids=torch.from_numpy(batch["token_type_ids"]).long())
    real = batch["attention_mask"].astype(bool)
    seq_diff = np.abs(got["sequence_output"] - out.last_hidden_state.numpy())[real].max()
    pooled_diff = np.abs(got["pooled_output"] - out.pooler_output.numpy()).max()
    print(f"minilm export parity: sequence_output max abs diff {seq_diff:.3g}, "
          f"pooled_output {pooled_diff:.3g}")
    assert seq_diff <= 1e-4 and pooled_diff <= 1e-4
