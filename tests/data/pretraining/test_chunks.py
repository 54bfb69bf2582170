"""keras_bert/data/pretraining/chunks.py: documents tokenized into a chunk (empty lines and
documents dropped), its instances packed and masked, the same for the same chunk index and
seed, the records the features serialized."""

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.data.pretraining.chunks import ChunkEncoder
from keras_bert.data.pretraining.data_options import PretrainingDataOptions
from keras_bert.presets import load_preset
from keras_bert.text.tokenizer import BertTokenizer

DOCUMENTS = [["The cat sat on the mat.", "", "The dog ran home."],
             [],
             ["He ran.", "She sat down.", "They went up."]]
OPTIONS = PretrainingDataOptions(max_seq_length=16, max_predictions_per_seq=3, dupe_factor=2)


@pytest.fixture(scope="module")
def encoder():
    return ChunkEncoder(load_preset("tiny_random").vocab_path, options=OPTIONS)


def test_tokenize_drops_empty_lines_and_documents(encoder):
    chunk = encoder.tokenize(DOCUMENTS)
    assert chunk.document_splits.tolist() == [0, 2, 5]  # 2 sentences, then 3
    tokenizer = BertTokenizer.from_preset("tiny_random")
    want = tokenizer(["The dog ran home."])[0].numpy().tolist()
    assert chunk.ids[chunk.sentence_splits[1]:chunk.sentence_splits[2]].tolist() == want
    empty = encoder.tokenize([[], [""]])
    assert (len(empty.ids), empty.document_splits.tolist()) == (0, [0])


def test_instances_are_packed_masked_and_the_same_for_the_same_chunk(encoder):
    features = encoder.features(DOCUMENTS, chunk_index=0)
    n = len(features["input_ids"])
    assert n > 0 and features["input_ids"].shape == (n, 16)
    lengths = features["input_mask"].sum(-1)
    for row, length in zip(features["input_ids"], lengths):
        assert row[0] == 2 and row[length - 1] == 3 and (row[length:] == 0).all()
        assert list(row[:length]).count(3) == 2  # [CLS] a [SEP] b [SEP]
    weights = features["masked_lm_weights"]
    assert features["masked_lm_ids"].shape == weights.shape == (n, 3) and weights.sum() > 0
    again = encoder.features(DOCUMENTS, chunk_index=0)
    for name in features:
        np.testing.assert_array_equal(again[name], features[name], err_msg=name)
    # another chunk index draws from other generators
    assert encoder.records(DOCUMENTS, chunk_index=1) != encoder.records(DOCUMENTS, chunk_index=0)


def test_records_are_the_features_serialized(encoder):
    features = encoder.features(DOCUMENTS, chunk_index=3)
    records = encoder.records(DOCUMENTS, chunk_index=3)
    assert len(records) == len(features["input_ids"])
    parsed = tf.train.Example.FromString(records[0]).features.feature
    assert list(parsed["input_ids"].int64_list.value) == features["input_ids"][0].tolist()
    assert list(parsed["masked_lm_weights"].float_list.value) == pytest.approx(
        features["masked_lm_weights"][0].tolist())


def test_a_vocabulary_without_the_special_tokens_is_named():
    from keras_bert.data.pretraining.text_files import PretrainingDataError

    with pytest.raises(PretrainingDataError, match=r"bad vocabulary.*\[MASK\]"):
        ChunkEncoder(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "the"], options=OPTIONS)
