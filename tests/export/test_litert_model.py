"""`litert_model.load`: a keras_bert LiteRT model in ai-edge-litert's interpreter with the
tensorflow-text kernels registered; its op listing, its errors, and the error without
ai-edge-litert."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_bert
from keras_bert.export import litert_model
from tests.dependencies import require
from tests.isolated import run_python
from tests.models.tiny import VOCAB, tiny_encoder


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    require("ai_edge_litert")
    keras.utils.set_random_seed(4)
    model = keras_bert.BertClassifier(tiny_encoder(), 2,
                                      preprocessor=keras_bert.BertPreprocessor(VOCAB, 16))
    path = str(tmp_path_factory.mktemp("litert") / "model.tflite")
    return model, model.export(path, format="litert")


def test_load_from_a_path_or_bytes_and_run(exported):
    model, path = exported
    lite = litert_model.load(path, num_threads=1)
    assert repr(lite) == ("LiteRTModel(signatures=['serving_default', 'serving_ids'], "
                          "num_threads=1)")
    assert lite.signatures["serving_default"]["outputs"] == {
        "label_ids": (np.dtype("int32"), (-1,)), "logits": (np.dtype("float32"), (-1, 2)),
        "probabilities": (np.dtype("float32"), (-1, 2))}
    texts = ["a great movie", "dull", "Émile"]
    want = model.predict(texts, verbose=0)
    # str, bytes, and numpy arrays of either are all strings.
    for given in (texts, [t.encode() for t in texts], np.array(texts),
                  np.array([t.encode() for t in texts], dtype=object)):
        np.testing.assert_allclose(lite(text=given)["logits"], want, atol=1e-5)
    with open(path, "rb") as f:
        data = f.read()
    other = litert_model.load(data).copy(num_threads=2)
    assert other.num_threads == 2 and other.size == len(data)
    np.testing.assert_array_equal(other(text=texts)["logits"], lite(text=texts)["logits"])


def test_op_listing(exported):
    path = exported[1]
    ops = litert_model.ops(path)
    assert ops == sorted(ops) and {"FULLY_CONNECTED", "BATCH_MATMUL", "SOFTMAX"} <= set(ops)
    assert litert_model.custom_ops(path) == sorted(litert_model.REGISTRARS)


def test_errors(exported):
    lite = litert_model.load(exported[1])
    with pytest.raises(ValueError, match=r"no signature 'serving'; it has \['serving_default'"):
        lite("serving", text=["a"])
    with pytest.raises(ValueError, match=r"takes \['text'\]; got \['texts'\] \(missing "
                                         r"\['text'\], unexpected \['texts'\]\)"):
        lite(texts=["a"])
    with pytest.raises(TypeError, match="a path or its bytes, got int"):
        litert_model.load(3)
    with pytest.raises(ValueError, match="num_threads"):
        litert_model.load(exported[1], num_threads=0)


def test_a_custom_op_keras_bert_cannot_register(tmp_path):
    import tensorflow_text as tf_text

    splitter = tf_text.WhitespaceTokenizer()
    function = tf.function(lambda text: {"words": splitter.split(text).flat_values},
                           input_signature=[tf.TensorSpec([None], tf.string)])
    converter = tf.lite.TFLiteConverter.from_concrete_functions(
        [function.get_concrete_function()])
    converter.allow_custom_ops = True
    data = converter.convert()
    assert litert_model.custom_ops(data) == ["TFText>WhitespaceTokenizeWithOffsetsV2"]
    with pytest.raises(ValueError, match=r"needs custom ops \['TFText>Whitespace"):
        litert_model.load(data)


def test_without_ai_edge_litert_the_error_names_the_extra(exported):
    code = (
        "import sys\n"
        "sys.modules['ai_edge_litert'] = None  # as if it were not installed\n"
        "from keras_bert.export import litert_model\n"
        f"try:\n    litert_model.load({exported[1]!r})\n"
        "except ImportError as error:\n    print('ERROR', error)\n")
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert "ERROR Running a LiteRT model needs ai-edge-litert" in result.stdout
    assert "pip install 'keras-bert-zoo[litert]' (requirements-litert.txt)" in result.stdout
