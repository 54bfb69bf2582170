"""The vectorized tf.train.Example writer against protobuf's own, and the atomic shards."""

import os

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.data.pretraining import records


def _random_features(n, seq=16, preds=4, high=30522, seed=0):
    rng = np.random.default_rng(seed)
    return {
        "input_ids": rng.integers(0, high, (n, seq)),
        "input_mask": rng.integers(0, 2, (n, seq)),
        "segment_ids": rng.integers(0, 2, (n, seq)),
        "masked_lm_positions": rng.integers(0, seq, (n, preds)),
        "masked_lm_ids": rng.integers(0, high, (n, preds)),
        "masked_lm_weights": rng.random((n, preds)).astype(np.float32),
        "next_sentence_labels": rng.integers(0, 2, n),
    }


def _protobuf_example(features, i):
    """The example as the original script builds it, through the protobuf API."""
    feature = {}
    for name in records.FEATURE_NAMES:
        values = np.reshape(features[name][i], -1).tolist()
        if name == "masked_lm_weights":
            feature[name] = tf.train.Feature(float_list=tf.train.FloatList(value=values))
        else:
            feature[name] = tf.train.Feature(int64_list=tf.train.Int64List(value=values))
    return tf.train.Example(features=tf.train.Features(feature=feature))


@pytest.mark.parametrize("high", [2, 128, 30522, 250_002, 2**40])
def test_serialized_examples_equal_protobufs(high):
    features = _random_features(64, high=high, seed=high % 1000)
    # Varint edges: every byte width, and zero.
    edges = [0, 1, 127, 128, 16383, 16384, 2**21 - 1, 2**21, 2**28, 2**35]
    features["input_ids"][0, :len(edges)] = [min(e, high - 1) for e in edges]
    serialized = records.serialize_examples(features)
    assert len(serialized) == 64
    for i, data in enumerate(serialized):
        parsed = tf.train.Example.FromString(data)
        assert parsed == _protobuf_example(features, i)
        # Same length as protobuf's own encoding (map entry order aside, the same bytes).
        assert len(data) == len(_protobuf_example(features, i).SerializeToString())


def test_records_parse_with_the_original_feature_spec():
    features = _random_features(5)
    parsed = tf.io.parse_example(records.serialize_examples(features),
                                 records.feature_spec(16, 4))
    assert sorted(parsed) == sorted(records.FEATURE_NAMES)
    for name in records.FEATURE_NAMES:
        expected = np.reshape(features[name], (5, -1))
        np.testing.assert_array_equal(parsed[name].numpy(), expected)
    assert parsed["masked_lm_weights"].dtype == tf.float32
    assert parsed["input_ids"].dtype == tf.int64


def test_serialize_checks_its_input():
    features = _random_features(2)
    del features["segment_ids"]
    with pytest.raises(ValueError, match="missing feature.*segment_ids"):
        records.serialize_examples(features)
    features = _random_features(2)
    features["masked_lm_ids"][0, 0] = -1
    with pytest.raises(ValueError, match="never negative"):
        records.serialize_examples(features)


def test_shards_round_robin(tmp_path):
    paths = [str(tmp_path / f"part-{i}") for i in range(3)]
    with records.RecordShards(paths) as shards:
        shards.write([b"0", b"1"])
        data, offsets = b"234567", np.array([0, 1, 2, 3, 4, 5, 6])
        shards.write_batch(data, offsets)
    got = [[r.numpy() for r in tf.data.TFRecordDataset(p)] for p in paths]
    assert got == [[b"0", b"3", b"6"], [b"1", b"4", b"7"], [b"2", b"5"]]
    assert shards.written == 8
    assert sorted(os.listdir(tmp_path)) == ["part-0", "part-1", "part-2"]


@pytest.mark.parametrize("error", [RuntimeError, KeyboardInterrupt])
def test_no_half_written_shards(tmp_path, error):
    old = tmp_path / "part-0"
    old.write_bytes(b"an earlier file")
    paths = [str(tmp_path / "part-0"), str(tmp_path / "part-1")]
    with pytest.raises(error):
        with records.RecordShards(paths) as shards:
            shards.write([b"a"] * 10)
            raise error("stopped half-way")
    assert old.read_bytes() == b"an earlier file"  # untouched
    assert sorted(os.listdir(tmp_path)) == ["part-0"]  # no part-1, no temporary directory


def test_shards_on_a_gfile_file_system():
    paths = ["ram://shards/a.tfrecord", "ram://shards/b.tfrecord"]
    with records.RecordShards(paths) as shards:
        shards.write([b"x", b"y", b"z"])
    assert [sum(1 for _ in tf.data.TFRecordDataset(p)) for p in paths] == [2, 1]
    assert sorted(tf.io.gfile.listdir("ram://shards")) == ["a.tfrecord", "b.tfrecord"]


def test_shards_need_distinct_paths(tmp_path):
    with pytest.raises(ValueError, match="named twice"):
        records.RecordShards([str(tmp_path / "a"), str(tmp_path / "a")])
    with pytest.raises(ValueError, match="at least one"):
        records.RecordShards([])
