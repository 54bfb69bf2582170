"""BertClassifier: the task contract (tests/task_harness.py) and what its .keras file keeps,
the last block computing [CLS] only, regression; the multi-label mode (each class a yes/no of
its own: sigmoid cross-entropy on multi-hot labels, binary accuracy, kept through .keras
files and presets). How the Task base takes raw inputs, compiles and trains is in
test_task.py, through this class. BertClassifier.rerank: a cross-encoder's scores and order,
as sentence-transformers' CrossEncoder.rank gives them for the same weights; what it
refuses."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert import BertClassifier, BertPreprocessor
from keras_bert.checks import TaskInputError
from tests import keras_files
from tests.dependencies import require
from tests.task_harness import check_task
from tiny import (  # tests/models/tiny.py
    NEGATIVE, POSITIVE, TEXT_DEPENDENT, VOCAB, feed_forward_rows, tiny_encoder,
)

TEXTS = POSITIVE + NEGATIVE


@pytest.fixture
def model():
    keras.utils.set_random_seed(0)
    return BertClassifier(tiny_encoder(), num_classes=2,
                          preprocessor=BertPreprocessor(VOCAB, seq_length=16))


def _packed(model, texts):
    return {k: v.numpy() for k, v in model.preprocessor(tf.constant(texts)).items()}


def test_task_contract_and_the_keras_file(tmp_path):
    """The harness (no export: tests/export/test_task_export.py exports the classifier), and
    what a .keras file of a trained classifier keeps besides its outputs."""
    texts, labels = POSITIVE[:3] + NEGATIVE[:3], [1, 1, 1, 0, 0, 0]
    check = check_task(BertClassifier, texts, labels, tmp_path=tmp_path, output_shape=(6, 2),
                       num_classes=2, seq_length=16, label_names=["negative", "positive"],
                       atol=1e-6)
    tokens = check.model.preprocessor.tokenizer.get_vocabulary()
    # The vocabulary travels as the tokenizer's asset, not in config.json.
    assert keras_files.assert_vocabulary_is_an_asset(check.keras_file, tokens) == [
        "assets/preprocessor/tokenizer/vocabulary.txt"]
    loaded = check.keras_loaded
    assert loaded.preprocessor.tokenizer.get_vocabulary() == tokens
    assert int(loaded.optimizer.iterations) == int(check.model.optimizer.iterations) == 1
    loaded.fit(texts, labels, epochs=1, verbose=0)  # trains on after loading
    assert int(loaded.optimizer.iterations) == 2
    assert check.preset_loaded.label_names == ["negative", "positive"]


def test_last_block_computes_only_the_cls_row(model):
    """The head reads the pooled output alone, so the last block runs on [CLS] only; the
    logits are those of the full encoder's pooled output."""
    x = _packed(model, ["a great movie", "dull"])
    assert feed_forward_rows(model, x) == [2 * 16, 2]  # block 0: every token; block 1: [CLS]
    pooled = model.encoder(x)["pooled_output"]
    np.testing.assert_allclose(model(x), model.logits(pooled), atol=1e-6)


def test_regression(tmp_path):
    keras.utils.set_random_seed(1)
    model = BertClassifier(tiny_encoder(), num_classes=1,
                           preprocessor=BertPreprocessor(VOCAB, seq_length=16))
    scores = np.linspace(-1, 1, len(TEXTS)).astype("float32")
    history = model.fit(TEXTS, scores, epochs=5, batch_size=4, verbose=0)
    assert set(history.history) == {"loss", "mae"}
    assert model.predict(TEXTS, verbose=0).shape == (len(TEXTS), 1)
    with pytest.raises(TaskInputError, match="not a number"):
        model.fit(TEXTS[:2], ["high", "low"], verbose=0)
    with pytest.raises(TaskInputError, match="finite numbers"):
        model.fit(TEXTS[:2], [0.5, float("nan")], verbose=0)


# ---- multi-label
MULTI_TEXTS = POSITIVE[:3] + NEGATIVE[:3]
LABELS = np.array([[1, 0, 1], [1, 0, 0], [1, 1, 0], [0, 1, 0], [0, 1, 1], [0, 0, 0]])


def _multi_label(**kwargs):
    return BertClassifier(tiny_encoder(seed=0, **TEXT_DEPENDENT), 3, multi_label=True,
                          preprocessor=BertPreprocessor(VOCAB, seq_length=16), **kwargs)


def _sigmoid_cross_entropy(logits, labels):
    p = 1 / (1 + np.exp(-logits))
    return -np.mean(labels * np.log(p) + (1 - labels) * np.log(1 - p))


def test_multi_label_loss_and_accuracy_are_per_class():
    model = _multi_label()
    assert not model.regression
    logits = model.predict(MULTI_TEXTS, verbose=0)
    assert np.ptp(logits) > 0.1  # the classes' logits differ: a per-example loss would show
    got = model.evaluate(MULTI_TEXTS, LABELS, verbose=0, return_dict=True)
    np.testing.assert_allclose(got["loss"], _sigmoid_cross_entropy(logits, LABELS), rtol=1e-4)
    np.testing.assert_allclose(got["accuracy"], np.mean((logits > 0) == LABELS), atol=1e-6)
    history = model.fit(MULTI_TEXTS, LABELS, epochs=3, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
    # One class and multi_label: a yes/no classifier, not a regression.
    assert not BertClassifier(tiny_encoder(), 1, multi_label=True).regression


@pytest.mark.parametrize("labels, message", [
    (np.array([0, 1, 2, 0, 1, 2]), r"multi-label labels have shape \(6,\); they are one row per "
                                   r"example with one 0 or 1 per class: \[examples, 3\]"),
    (LABELS[:, :2], r"have shape \(6, 2\)"),
    (np.where(LABELS == 1, 2, 0), r"multi-label label \[0, 0\] is 2.0; each is 0 \(the class "
                                  r"does not apply\) or 1 \(it does\)"),
])
def test_bad_multi_label_labels_are_clear_errors(labels, message):
    model = _multi_label()
    with pytest.raises(TaskInputError, match=message):
        model.fit(MULTI_TEXTS, labels, verbose=0)


def test_multi_label_is_kept_by_keras_files_and_presets(tmp_path):
    model = _multi_label(label_names=["plot", "acting", "music"])
    assert model.get_config()["multi_label"] is True
    model.save(tmp_path / "model.keras")
    again = keras.saving.load_model(tmp_path / "model.keras")
    assert again.multi_label and again.label_names == ["plot", "acting", "music"]
    assert isinstance(again.loss, keras.losses.BinaryCrossentropy)
    for fmt in ("keras_bert", "huggingface"):
        loaded = BertClassifier.from_preset(model.save_to_preset(str(tmp_path / fmt),
                                                                 format=fmt))
        assert loaded.multi_label and loaded.label_names == ["plot", "acting", "music"], fmt
        np.testing.assert_allclose(loaded.predict(MULTI_TEXTS, verbose=0),
                                   model.predict(MULTI_TEXTS, verbose=0), atol=1e-6)
    with pytest.raises(ValueError, match="multi_label must be"):
        BertClassifier(tiny_encoder(), 2, multi_label="yes")


# ---- rerank
QUERY = "a good movie"
DOCUMENTS = ["the actor was very good", "a dull and boring film", "what a fun plot",
             "the cat sat", "a good movie", "not good"]


@pytest.fixture(scope="module")
def cross_encoder_dir(tmp_path_factory):
    """A Hugging Face BertForSequenceClassification(num_labels=1) written by transformers."""
    torch = require("torch")
    transformers = require("transformers")
    directory = tmp_path_factory.mktemp("cross") / "model"
    config = transformers.BertConfig(
        vocab_size=len(VOCAB), hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=32, max_position_embeddings=64, initializer_range=0.2, num_labels=1)
    torch.manual_seed(0)
    transformers.BertForSequenceClassification(config).save_pretrained(str(directory))
    (directory / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    transformers.BertTokenizer(str(directory / "vocab.txt"), do_lower_case=True
                               ).save_pretrained(str(directory))
    return directory


def _reranker(directory):
    """The cross-encoder as a BertClassifier: from_preset takes the encoder and the one-class
    head (Hugging Face's ``classifier.weight`` [1, hidden], ``classifier.bias``)."""
    model = BertClassifier.from_preset(str(directory), seq_length=32)
    assert model.num_classes == 1
    return model


def test_rerank_is_cross_encoder_rank(cross_encoder_dir):
    require("sentence_transformers")
    from sentence_transformers import CrossEncoder

    reference = CrossEncoder(str(cross_encoder_dir), device="cpu")
    model = _reranker(cross_encoder_dir)
    for top_k in (None, 3):
        want = reference.rank(QUERY, DOCUMENTS, top_k=top_k, return_documents=True)
        got = model.rerank(QUERY, DOCUMENTS, top_k=top_k, return_documents=True)
        assert [(h["corpus_id"], h["text"]) for h in got] == [
            (h["corpus_id"], h["text"]) for h in want]
        np.testing.assert_allclose([h["score"] for h in got], [h["score"] for h in want],
                                   atol=1e-5)
    scores = [h["score"] for h in model.rerank(QUERY, DOCUMENTS)]
    assert max(scores) - min(scores) > 0.01  # the scores read the documents


def test_scores_are_the_model_s_own_outputs(cross_encoder_dir):
    model = _reranker(cross_encoder_dir)
    logits = model.predict(([QUERY] * len(DOCUMENTS), DOCUMENTS), verbose=0).reshape(-1)
    raw = model.rerank(QUERY, DOCUMENTS, activation=None)
    assert [h["corpus_id"] for h in raw] == list(np.argsort(-logits, kind="stable"))
    np.testing.assert_allclose([h["score"] for h in raw], np.sort(logits)[::-1], atol=1e-6)
    sigmoid = model.rerank(QUERY, DOCUMENTS)  # "auto": CrossEncoder's sigmoid on logits
    np.testing.assert_allclose([h["score"] for h in sigmoid],
                               1 / (1 + np.exp(-np.sort(logits)[::-1])), atol=1e-6)
    assert model.rerank(QUERY, []) == []


def test_only_a_single_score_model_reranks():
    model = BertClassifier(tiny_encoder(), num_classes=2,
                           preprocessor=BertPreprocessor(VOCAB, seq_length=16))
    with pytest.raises(ValueError, match=r"rerank needs a single-score model \(a cross-encoder, "
                                         r"num_classes=1\); this BertClassifier has "
                                         r"num_classes=2"):
        model.rerank(QUERY, DOCUMENTS)
    single = BertClassifier(tiny_encoder(), num_classes=1,
                            preprocessor=BertPreprocessor(VOCAB, seq_length=16))
    with pytest.raises(ValueError, match=r"rerank takes one query \(a string\), got list"):
        single.rerank([QUERY], DOCUMENTS)
