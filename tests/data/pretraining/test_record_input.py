"""Original-format TFRecords: listing files, checks that name file and feature, sharding per
input pipeline, exact skipping for resumed runs; records from the original script itself."""

import pathlib
import sys

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.data.pretraining.record_input import (PretrainingDataError, check_tfrecord_files,
                                               list_files, tfrecord_dataset)

REPO = pathlib.Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "tests" / "training"))
import pretraining_cases as cases  # noqa: E402

SEQ, PRED = cases.SEQ, cases.PREDICTIONS


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    root = tmp_path_factory.mktemp("records")
    corpus = cases.write_wiki_corpus(root / "wiki.txt", num_documents=4)
    return cases.original_records(corpus, root / "original.tfrecord")


def _write(path, n, seq=SEQ, pred=PRED, start=0, weights_as_int=False, drop=None):
    with tf.io.TFRecordWriter(str(path)) as writer:
        for i in range(start, start + n):
            def ints(values):
                return tf.train.Feature(int64_list=tf.train.Int64List(value=values))
            features = {
                "input_ids": ints([i] * seq), "input_mask": ints([1] * seq),
                "segment_ids": ints([0] * seq), "masked_lm_positions": ints([1] * pred),
                "masked_lm_ids": ints([i] * pred), "next_sentence_labels": ints([i % 2]),
                "masked_lm_weights": ints([1] * pred) if weights_as_int else tf.train.Feature(
                    float_list=tf.train.FloatList(value=[1.0] * pred)),
            }
            if drop:
                features.pop(drop)
            example = tf.train.Example(features=tf.train.Features(feature=features))
            writer.write(example.SerializeToString())
    return str(path)


def test_list_files_takes_globs_and_comma_lists(tmp_path):
    for name in ("b.tfrecord", "a.tfrecord", "c.txt"):
        (tmp_path / name).write_text("")
    files = list_files(f"{tmp_path}/*.tfrecord, {tmp_path}/c.txt,{tmp_path}/a.tfrecord")
    assert [pathlib.Path(f).name for f in files] == ["a.tfrecord", "b.tfrecord", "c.txt"]
    with pytest.raises(PretrainingDataError, match=r"--input_file: no file matches .*/x-\*"):
        list_files(f"{tmp_path}/a.tfrecord,{tmp_path}/x-*")
    with pytest.raises(PretrainingDataError, match="--eval_input_file is empty"):
        list_files(" , ", "--eval_input_file")


def test_records_of_the_original_script_are_read_with_our_names(records):
    assert check_tfrecord_files([records], SEQ, PRED) == 1
    batch = next(iter(tfrecord_dataset([records], SEQ, PRED, batch_size=4)))
    shapes = {k: (tuple(v.shape), v.dtype.name) for k, v in batch.items()}
    assert shapes == {
        "input_word_ids": ((4, SEQ), "int32"), "input_mask": ((4, SEQ), "int32"),
        "input_type_ids": ((4, SEQ), "int32"), "masked_lm_positions": ((4, PRED), "int32"),
        "masked_lm_ids": ((4, PRED), "int32"), "masked_lm_weights": ((4, PRED), "float32"),
        "next_sentence_labels": ((4,), "int32")}
    ids = batch["input_word_ids"].numpy()
    assert (ids[:, 0] == 101).all()  # [CLS] of the real uncased vocabulary
    # masked_lm_positions point at [MASK] (103) or at the replaced tokens, never at padding.
    weights = batch["masked_lm_weights"].numpy()
    positions = batch["masked_lm_positions"].numpy()
    assert (batch["input_mask"].numpy()[np.arange(4)[:, None], positions][weights > 0] == 1).all()


@pytest.mark.parametrize("kwargs, message", [
    (dict(seq=64), r"bad\.tfrecord: feature 'input_ids' has 64 values per record, expected 32 "
                   r"\(max_seq_length\)"),
    (dict(pred=3), r"feature 'masked_lm_positions' has 3 values per record, expected 5 "
                   r"\(max_predictions_per_seq\)"),
    (dict(drop="segment_ids"), r"the records have no feature 'segment_ids'"),
    (dict(weights_as_int=True), r"feature 'masked_lm_weights' is a int64_list, expected "
                                r"float_list"),
])
def test_records_of_other_settings_fail_naming_file_and_feature(tmp_path, kwargs, message):
    path = _write(tmp_path / "bad.tfrecord", 2, **kwargs)
    with pytest.raises(PretrainingDataError, match=message):
        check_tfrecord_files([path], SEQ, PRED)


def test_a_bad_record_later_in_the_stream_names_its_file(tmp_path):
    good = _write(tmp_path / "good.tfrecord", 4)
    bad = _write(tmp_path / "later.tfrecord", 4, seq=16)
    check_tfrecord_files([good, bad], SEQ, PRED, max_files=1)  # only the first is checked
    dataset = tfrecord_dataset([good, bad], SEQ, PRED, batch_size=8, is_training=False)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"feature input_ids should have 32 values; file.*later\.tfrecord"):
        next(iter(dataset))
    try:
        next(iter(dataset))
    except tf.errors.InvalidArgumentError as error:  # what the training run reports
        from keras_bert.training.pretraining_run import _record_error

        message = str(_record_error(error))
    assert message == (f"Pre-training record of another shape: feature input_ids should have "
                       f"32 values; file {bad} record has 16")


def test_empty_and_unreadable_files(tmp_path):
    empty = _write(tmp_path / "empty.tfrecord", 0)
    with pytest.raises(PretrainingDataError, match="no records in .*empty.tfrecord"):
        check_tfrecord_files([empty], SEQ, PRED)
    text = tmp_path / "corpus.txt"
    text.write_text("not a record file\n" * 10)
    with pytest.raises(PretrainingDataError, match="corpus.txt: not a readable TFRecord"):
        check_tfrecord_files([str(text)], SEQ, PRED)


def _values(dataset, batches):
    return [b["input_word_ids"].numpy()[:, 0].tolist()
            for b in dataset.take(batches)]


def test_pipelines_read_disjoint_files_and_resume_exactly(tmp_path):
    files = [_write(tmp_path / f"{i}.tfrecord", 10, start=100 * i) for i in range(4)]
    seen = []
    for pipeline in range(2):
        context = tf.distribute.InputContext(num_input_pipelines=2,
                                             input_pipeline_id=pipeline)
        firsts = _values(tfrecord_dataset(files, SEQ, PRED, 5, input_context=context), 4)
        seen.append({v // 100 for row in firsts for v in row})
    assert seen[0].isdisjoint(seen[1]) and seen[0] | seen[1] == {0, 1, 2, 3}
    # Deterministic, and start_batch continues the stream exactly (a resumed run).
    whole = _values(tfrecord_dataset(files, SEQ, PRED, 3, seed=7), 9)
    assert whole == _values(tfrecord_dataset(files, SEQ, PRED, 3, seed=7), 9)
    assert _values(tfrecord_dataset(files, SEQ, PRED, 3, seed=7, start_batch=5), 4) == whole[5:]
    assert whole != _values(tfrecord_dataset(files, SEQ, PRED, 3, seed=8), 9)


def test_fewer_files_than_pipelines_shards_records(tmp_path):
    path = _write(tmp_path / "one.tfrecord", 12)
    rows = []
    for pipeline in range(2):
        context = tf.distribute.InputContext(num_input_pipelines=2,
                                             input_pipeline_id=pipeline)
        dataset = tfrecord_dataset([path], SEQ, PRED, 6, input_context=context,
                                   is_training=False)
        rows.append(set(_values(dataset, 1)[0]))
    assert rows[0].isdisjoint(rows[1]) and rows[0] | rows[1] == set(range(12))
