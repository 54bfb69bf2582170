"""BertTextEmbedderPreprocessor: each text packed alone, a batch to [batch, seq] and columns to
[batch, columns, seq]; its seq_length from a sentence-transformers preset; .keras round trip."""

import numpy as np
import pytest
import tensorflow as tf

import keras
from keras_bert import BertPreprocessor, BertTextEmbedderPreprocessor
from keras_bert.checks import TaskInputError

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "cat", "dog", "sat", "ran", "on"]


def test_a_batch_is_packed_as_single_texts():
    single = BertPreprocessor(VOCAB, seq_length=6)(["a cat sat", "dog"])
    got = BertTextEmbedderPreprocessor(VOCAB, seq_length=6)(["a cat sat", "dog"])
    for key in single:
        np.testing.assert_array_equal(got[key], single[key])


@pytest.mark.parametrize("x", [(["a cat", "dog"], ["a dog ran", "cat"], ["sat", "on a cat"]),
                               [["a cat", "a dog ran", "sat"], ["dog", "cat", "on a cat"]]])
def test_columns_are_packed_each_text_alone(x):
    out = BertTextEmbedderPreprocessor(VOCAB, seq_length=6)(x)
    assert out["input_word_ids"].shape == (2, 3, 6)
    columns = [["a cat", "dog"], ["a dog ran", "cat"], ["sat", "on a cat"]]
    for c, texts in enumerate(columns):
        alone = BertPreprocessor(VOCAB, seq_length=6)(texts)
        for key in alone:  # [CLS] text [SEP]: no pair, no segment ids of 1
            np.testing.assert_array_equal(out[key][:, c], alone[key], err_msg=key)
    assert not out["input_type_ids"].numpy().any()


def test_unbatched_columns_and_a_graph():
    pre = BertTextEmbedderPreprocessor(VOCAB, seq_length=5)
    assert pre(("a cat", "dog"))["input_word_ids"].numpy().tolist() == [
        [2, 5, 6, 3, 0], [2, 7, 3, 0, 0]]
    spec = tf.TensorSpec([None], tf.string)
    packed = tf.function(lambda a, b: pre((a, b))["input_mask"],
                         input_signature=[spec, spec])(tf.constant(["a cat"]), tf.constant(["a"]))
    assert packed.shape == (1, 2, 5) and packed.numpy().sum() == 7


def test_long_texts_are_cut_at_seq_length():
    pre = BertTextEmbedderPreprocessor(VOCAB, seq_length=4)
    with pytest.warns(UserWarning, match="1 of 2 texts"):
        out = pre((["a cat sat on a dog"], ["dog"]))
    assert out["input_word_ids"].numpy()[0].tolist() == [[2, 5, 6, 3], [2, 7, 3, 0]]


def test_errors_name_the_columns():
    pre = BertTextEmbedderPreprocessor(VOCAB, seq_length=6)
    with pytest.raises(TaskInputError, match="the batch sizes differ: anchors has 2, "
                                             "positives has 1"):
        pre((["a", "cat"], ["dog"]))
    with pytest.raises(ValueError, match=r"seq_length must be"):
        BertTextEmbedderPreprocessor(VOCAB, seq_length=2)


def test_seq_length_defaults_and_the_preset_s_max_seq_length(minilm_path, tmp_path):
    assert BertTextEmbedderPreprocessor(VOCAB).seq_length == 256
    # all-MiniLM-L6-v2 reads 256 tokens (its sentence_bert_config.json), not BERT's 128.
    assert BertTextEmbedderPreprocessor.from_preset("minilm_l6").seq_length == 256
    assert BertTextEmbedderPreprocessor.from_preset(str(minilm_path), seq_length=64).seq_length \
        == 64
    from keras_bert import BertConfig, BertEncoder

    plain = BertEncoder(BertConfig(vocab_size=len(VOCAB), hidden_size=8, num_hidden_layers=1,
                                   num_attention_heads=2, intermediate_size=16,
                                   max_position_embeddings=300))
    plain.vocabulary = VOCAB
    plain.save_to_preset(tmp_path / "plain")
    assert BertTextEmbedderPreprocessor.from_preset(str(tmp_path / "plain")).seq_length == 256


def test_keras_round_trip(tmp_path):
    pre = BertTextEmbedderPreprocessor(VOCAB, seq_length=7)
    inputs = keras.Input(shape=(), dtype="string")
    model = keras.Model(inputs, pre(inputs)["input_word_ids"])
    model.save(tmp_path / "pre.keras")
    loaded = keras.saving.load_model(tmp_path / "pre.keras")
    layer = [l for l in loaded.layers if isinstance(l, BertTextEmbedderPreprocessor)][0]
    assert layer.seq_length == 7 and layer.input_form == "columns"
    np.testing.assert_array_equal(loaded(tf.constant(["a cat sat"])),
                                  model(tf.constant(["a cat sat"])))
