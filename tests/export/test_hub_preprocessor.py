"""export_preprocessor: the TF Hub BERT preprocessing format, on real Wikipedia text with
the real minilm_l6 vocabulary."""

import numpy as np
import pytest
import tensorflow as tf

import keras_bert
from keras_bert.export import ExportError, export_preprocessor, required_ops
from tests.models.tiny import VOCAB, tiny_encoder
from tests.text import corpus


@pytest.fixture(scope="module")
def preprocessor():
    return keras_bert.BertPreprocessor.from_preset("minilm_l6", seq_length=48)


@pytest.fixture(scope="module")
def loaded(preprocessor, tmp_path_factory):
    return tf.saved_model.load(
        export_preprocessor(preprocessor, tmp_path_factory.mktemp("export") / "preprocess"))


@pytest.fixture(scope="module")
def lines():
    lines = corpus.wikipedia_lines()[:200]
    return lines[:100], lines[100:]


def _equal(got, want):
    assert sorted(got) == sorted(want)
    for name in want:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)


def test_root_call_packs_like_the_keras_preprocessor(preprocessor, loaded, lines):
    texts = tf.constant(lines[0])
    _equal(loaded(texts), preprocessor(texts))
    assert loaded(texts)["input_word_ids"].shape == (100, 48)
    signature = loaded.signatures["serving_default"]
    _equal(signature(text=texts), preprocessor(texts))


def test_tokenize_and_bert_pack_inputs_for_pairs(preprocessor, loaded, lines):
    a, b = tf.constant(lines[0]), tf.constant(lines[1])
    tokens_a = loaded.tokenize(a)
    assert tokens_a.shape.rank == 3  # [batch, (words), (pieces)], as TF Hub's
    assert tokens_a.to_list() == preprocessor.tokenizer.tokenize(a, per_word=True).to_list()
    tokens_b = loaded.tokenize(b)
    _equal(loaded.bert_pack_inputs([tokens_a, tokens_b]), preprocessor((a, b)))
    # seq_length at call time, as a Python int or a tensor.
    _equal(loaded.bert_pack_inputs([tokens_a, tokens_b], seq_length=20),
           preprocessor((a, b), seq_length=20))
    _equal(loaded.bert_pack_inputs([tokens_a], seq_length=tf.constant(300)),
           preprocessor(a, seq_length=300))
    triple = loaded.bert_pack_inputs([tokens_a, tokens_b, tokens_a], seq_length=64)
    _equal(triple, preprocessor((a, b, a), seq_length=64))
    with pytest.raises(tf.errors.InvalidArgumentError, match="seq_length must be an integer in "
                                                             r"\[7, 1048576\]"):
        loaded.bert_pack_inputs([tokens_a, tokens_b, tokens_a], seq_length=6)


def test_special_tokens_vocabulary_and_ops(preprocessor, loaded, tmp_path):
    special = {k: int(v) for k, v in loaded.tokenize.get_special_tokens_dict().items()}
    tokenizer = preprocessor.tokenizer
    assert special == {"vocab_size": tokenizer.vocabulary_size,
                       "start_of_sequence_id": tokenizer.cls_token_id,
                       "end_of_segment_id": tokenizer.sep_token_id,
                       "padding_id": tokenizer.pad_token_id,
                       "mask_id": tokenizer.mask_token_id}
    vocab = open(loaded.vocab_file.asset_path.numpy().decode(), encoding="utf-8").read()
    assert vocab.split("\n")[:-1] == tokenizer.vocabulary
    assert bool(loaded.do_lower_case.numpy())


def test_a_task_model_exports_its_preprocessor(tmp_path):
    model = keras_bert.BertClassifier(tiny_encoder(), 2,
                                      preprocessor=keras_bert.BertPreprocessor(VOCAB, 16))
    path = export_preprocessor(model, tmp_path / "p")
    assert required_ops(path) == ["FastWordpieceTokenizeWithOffsets", "NormalizeUTF8"]
    out = tf.saved_model.load(path)(tf.constant(["a great movie"]))
    _equal(out, model.preprocessor(["a great movie"]))


def test_errors(tmp_path):
    with pytest.raises(ExportError, match="has no preprocessor"):
        export_preprocessor(keras_bert.BertClassifier(tiny_encoder(), 2), tmp_path / "a")
    with pytest.raises(ExportError, match="takes a BertPreprocessor .* got BertEncoder"):
        export_preprocessor(tiny_encoder(), tmp_path / "a")
    with pytest.raises(ExportError, match="has no vocabulary yet"):
        export_preprocessor(keras_bert.BertPreprocessor(keras_bert.BertTokenizer()),
                            tmp_path / "a")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    with pytest.raises(ExportError, match="already exists and is not empty"):
        export_preprocessor(keras_bert.BertPreprocessor(VOCAB), tmp_path / "full")
    assert not (tmp_path / "a").exists()
