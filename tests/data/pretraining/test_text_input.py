"""Dynamic masking from raw text in the tf.data pipeline, on real Wikipedia sentences and the
real uncased vocabulary: what the batches hold, next-sentence pairs, seeds per input
pipeline, and exact resumption."""

import pathlib
import shutil
import sys

import numpy as np
import pytest
import tensorflow as tf

from keras_bert import BertTokenizer
from keras_bert.data.pretraining.text_input import DynamicMaskingInput

REPO = pathlib.Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "tests" / "training"))
import pretraining_cases as cases  # noqa: E402

SEQ, PRED = 64, 10


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return cases.write_wiki_corpus(tmp_path_factory.mktemp("text") / "wiki.txt",
                                   num_documents=8)


@pytest.fixture(scope="module")
def tokenizer():
    return BertTokenizer(cases.vocab_file())


def _input(tokenizer, **kwargs):
    return DynamicMaskingInput(tokenizer, max_seq_length=SEQ, max_predictions_per_seq=PRED,
                               **{"seed": 3, **kwargs})


def _batches(dataset, n):
    return [{k: v.numpy() for k, v in b.items()} for b in dataset.take(n)]


def _unmasked(batch):
    """The packed ids before masking: masked_lm_ids put back at their positions."""
    ids = batch["input_word_ids"].copy()
    rows = np.arange(len(ids))[:, None].repeat(PRED, 1)
    real = batch["masked_lm_weights"] > 0
    ids[rows[real], batch["masked_lm_positions"][real]] = batch["masked_lm_ids"][real]
    return ids


def test_batches_are_packed_masked_pairs(corpus, tokenizer):
    batches = _batches(_input(tokenizer).dataset([corpus], batch_size=32), 6)
    batch = batches[0]
    assert {k: v.shape for k, v in batch.items()} == {
        "input_word_ids": (32, SEQ), "input_mask": (32, SEQ), "input_type_ids": (32, SEQ),
        "masked_lm_positions": (32, PRED), "masked_lm_ids": (32, PRED),
        "masked_lm_weights": (32, PRED), "next_sentence_labels": (32,)}
    ids, types = batch["input_word_ids"], batch["input_type_ids"]
    assert (ids[:, 0] == 101).all() and ((ids == 102).sum(1) == 2).all()  # [CLS] A [SEP] B [SEP]
    assert (types.max(1) == 1).all()
    real = batch["masked_lm_weights"] > 0
    replaced = ids[np.arange(32)[:, None].repeat(PRED, 1)[real], batch["masked_lm_positions"][real]]
    assert 0.7 < np.mean(replaced == 103) < 0.9  # 80% [MASK]
    # About 15% of the real tokens (less [CLS] and [SEP]) are predicted.
    tokens = batch["input_mask"].sum(1) - 3
    assert np.allclose(real.sum(1), np.minimum(PRED, np.round(0.15 * tokens)), atol=1)
    labels = np.concatenate([b["next_sentence_labels"] for b in batches])
    assert 0.4 < labels.mean() < 0.7  # half random (more: chunks of one sentence)
    # The ids detokenize into text that starts with [CLS].
    text = tokenizer.detokenize(_unmasked(batch)).numpy()
    assert all(t.startswith(b"[CLS] ") for t in text)


def test_pipelines_draw_different_masks_and_resume_exactly(corpus, tokenizer, tmp_path):
    copy = str(tmp_path / "copy.txt")
    shutil.copy(corpus, copy)
    data = _input(tokenizer)
    by_pipeline = []
    for pipeline in range(2):  # each reads one copy of the same text, in order
        context = tf.distribute.InputContext(num_input_pipelines=2,
                                             input_pipeline_id=pipeline)
        by_pipeline.append(_batches(data.dataset([corpus, copy], 16, input_context=context,
                                                 is_training=False), 1)[0])
    first, second = by_pipeline
    assert (first["masked_lm_positions"] != second["masked_lm_positions"]).any(1).all()
    # The same packed pairs masked with each pipeline's seeds (as dataset() derives them):
    from keras_bert.data.pretraining.text_input import _fold

    a = tf.ragged.constant([[1996, 4937, 2938, 2091, 1012] * 3] * 4, dtype=tf.int32)
    b = tf.ragged.constant([[1037, 3899, 2743, 1012] * 3] * 4, dtype=tf.int32)
    masks = []
    for pipeline in range(2):
        base = _fold(tf.constant([data.seed, pipeline], tf.int64), 2)
        out = data._pack_and_mask(base)(tf.constant(0, tf.int64), (a, b, tf.zeros([4], tf.int32)))
        masks.append(out["masked_lm_positions"].numpy())
    assert (masks[0] != masks[1]).any(1).all()
    # The same pipeline again: the same batches; from batch 3 on: exactly batches 3, 4, ...
    whole = _batches(data.dataset([corpus], 8), 5)
    again = _batches(_input(tokenizer).dataset([corpus], 8), 5)
    resumed = _batches(_input(tokenizer).dataset([corpus], 8, start_batch=3), 2)
    for a, b in zip(whole, again):
        assert all((a[k] == b[k]).all() for k in a)
    for a, b in zip(whole[3:], resumed):
        assert all((a[k] == b[k]).all() for k in a)
    other_seed = _batches(_input(tokenizer, seed=4).dataset([corpus], 8), 1)[0]
    assert not (other_seed["masked_lm_positions"] == whole[0]["masked_lm_positions"]).all()


def test_documents_are_split_at_blank_lines_and_long_ones_cut(tmp_path, tokenizer):
    data = _input(tokenizer, max_document_lines=3)
    lines = tf.data.Dataset.from_tensor_slices(
        ["one.", "two.", "", "", "three.", "four.", "five.", "six.", "  ", "seven."])
    documents = [d.numpy().tolist() for d in data._documents(lines)]
    assert documents == [[b"one.", b"two."], [b"three.", b"four.", b"five."], [b"six."],
                         [b"seven."]]


def test_bad_arguments(tokenizer):
    with pytest.raises(TypeError, match="tokenizer must be a BertTokenizer"):
        DynamicMaskingInput("vocab.txt")
    with pytest.raises(ValueError, match="max_seq_length must be >= 5"):
        DynamicMaskingInput(tokenizer, max_seq_length=4)
    with pytest.raises(ValueError, match="short_seq_prob must be in"):
        DynamicMaskingInput(tokenizer, short_seq_prob=1.5)
