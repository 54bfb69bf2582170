"""Pre-training instances as the original BERT TFRecords: `tf.train.Example`s, sharded files.

The features and their layout are exactly those of google-research/bert's
`create_pretraining_data.py` (and what its `run_pretraining.py` reads):

| feature | dtype | length |
| --- | --- | --- |
| `input_ids`, `input_mask`, `segment_ids` | int64 | `max_seq_length` |
| `masked_lm_positions`, `masked_lm_ids` | int64 | `max_predictions_per_seq` |
| `masked_lm_weights` | float | `max_predictions_per_seq` |
| `next_sentence_labels` | int64 | 1 |

`serialize_examples` encodes a whole batch of instances at once with numpy (the protobuf
wire format of `tf.train.Example` written out: the Python protobuf API costs ~100 us per
example, which alone would cap the tool below the speed it needs); the bytes parse as the
`tf.train.Example` the original builds (tested). `RecordShards` writes records round-robin
over output files, as the original does, each to a temporary name renamed into place only
when every shard is complete.
"""

import contextlib

import numpy as np
import tensorflow as tf

from keras_bert import storage

FEATURE_NAMES = ("input_ids", "input_mask", "segment_ids", "masked_lm_positions",
                 "masked_lm_ids", "masked_lm_weights", "next_sentence_labels")


def feature_spec(max_seq_length, max_predictions_per_seq):
    """The `tf.io.parse_example` spec of these records (the one run_pretraining.py uses).

    >>> sorted(feature_spec(128, 20)) == sorted(FEATURE_NAMES)
    True
    >>> feature_spec(128, 20)["masked_lm_weights"]
    FixedLenFeature(shape=[20], dtype=tf.float32, default_value=None)
    """
    seq, preds = [max_seq_length], [max_predictions_per_seq]
    return {
        "input_ids": tf.io.FixedLenFeature(seq, tf.int64),
        "input_mask": tf.io.FixedLenFeature(seq, tf.int64),
        "segment_ids": tf.io.FixedLenFeature(seq, tf.int64),
        "masked_lm_positions": tf.io.FixedLenFeature(preds, tf.int64),
        "masked_lm_ids": tf.io.FixedLenFeature(preds, tf.int64),
        "masked_lm_weights": tf.io.FixedLenFeature(preds, tf.float32),
        "next_sentence_labels": tf.io.FixedLenFeature([1], tf.int64),
    }


# ---- the protobuf wire format, vectorized ----------------------------------------------------
# A batch of byte strings is (flat uint8 bytes, lengths [n]): row i is the i-th run of flat.
# A message is a list of such parts, concatenated row by row once, at the end.

def _varints(values):
    """Unsigned varints of each row of an int [n, k] array (values >= 0) -> one part."""
    values = np.asarray(values)
    if values.ndim == 1:
        values = values[:, None]
    top = int(values.max()) if values.size else 0
    values = values.astype(np.int32 if top < 2**31 else np.int64, copy=False)
    if top < 128:  # one byte each
        return values.astype(np.uint8).reshape(-1), np.full(len(values), values.shape[1])
    width = (top.bit_length() + 6) // 7
    present = np.ones(values.shape + (width,), dtype=bool)                # byte j is written
    groups = np.empty(values.shape + (width,), dtype=np.uint8)            # [n, k, width]
    for j in range(1, width):
        present[..., j] = values >= (1 << (7 * j))
    for j in range(width):
        groups[..., j] = (values >> (7 * j)) & 0x7F
        if j + 1 < width:
            groups[..., j] |= present[..., j + 1].view(np.uint8) << 7     # continuation bit
    flat = groups.reshape(-1).compress(present.reshape(-1))               # row-major order
    return flat, present.reshape(len(values), -1).sum(axis=1, dtype=np.int64)


def _length(parts):
    return np.sum([lengths for _, lengths in parts], axis=0)


def _constant(data, n):
    """The same bytes for every row."""
    data = np.frombuffer(bytes(data), dtype=np.uint8)
    return np.tile(data, n), np.full(n, len(data))


def _fixed(rows):
    """Rows of a [n, k] uint8 array, each its own byte string."""
    rows = np.ascontiguousarray(rows, dtype=np.uint8)
    return rows.reshape(-1), np.full(len(rows), rows.shape[1])


def _field(tag, parts, n):
    """A length-delimited field around the message ``parts``: tag, varint length, parts."""
    return [_constant([tag], n), _varints(_length(parts))] + parts


def _concat(parts):
    """Row-wise concatenation of parts -> (flat bytes, offsets [n + 1])."""
    offsets = np.zeros(len(parts[0][1]) + 1, dtype=np.int64)
    np.cumsum(_length(parts), out=offsets[1:])
    out = np.empty(int(offsets[-1]), dtype=np.uint8)
    start = offsets[:-1].copy()
    for flat, lengths in parts:
        if len(flat) == len(lengths) * lengths[0] and (lengths == lengths[0]).all():
            # Equal lengths: a strided 2-D copy, no index arrays.
            width = int(lengths[0])
            index = start[:, None] + np.arange(width)
            out[index] = flat.reshape(-1, width)
        else:
            row_starts = np.zeros(len(lengths), dtype=np.int64)
            np.cumsum(lengths[:-1], out=row_starts[1:])
            out[np.repeat(start - row_starts, lengths) + np.arange(len(flat))] = flat
        start += lengths
    return out, offsets


def _feature_entry(name, feature, n):
    """One entry of `Features.feature` (a map<string, Feature>): key 1, value 2."""
    key = name.encode("utf-8")
    entry = [_constant(bytes([0x0A, len(key)]) + key, n)] + _field(0x12, feature, n)
    return _field(0x0A, entry, n)


def _int64_feature(values, n):
    # Feature.int64_list = 3 { Int64List.value = 1 [packed] }; int64 varints of >= 0 values.
    if values.size and values.min() < 0:
        raise ValueError("int64 features here are never negative")
    return _field(0x1A, _field(0x0A, [_varints(values)], n), n)


def _float_feature(values, n):
    # Feature.float_list = 2 { FloatList.value = 1 [packed, little-endian float32] }.
    values = np.ascontiguousarray(values, dtype="<f4")
    return _field(0x12, _field(0x0A, [_fixed(values.view(np.uint8).reshape(n, -1))], n), n)


def serialize_examples(features):
    """Serialized `tf.train.Example`s of a batch of instances: see `serialize_batch`; a list
    of n `bytes`."""
    data, offsets = serialize_batch(features)
    return [data[offsets[i]:offsets[i + 1]] for i in range(len(offsets) - 1)]


def serialize_batch(features):
    """Serialized `tf.train.Example`s of a batch of instances.

    Args:
      features: a dict with the seven `FEATURE_NAMES`, each an array of shape [n, length]
        (`next_sentence_labels` may be [n]); integers are written as int64 and must be >= 0,
        `masked_lm_weights` as float.

    Returns:
      (data, offsets): the n serialized `tf.train.Example`s (exactly these features) one
      after the other in one `bytes`, record i at ``data[offsets[i]:offsets[i + 1]]``.

    >>> import numpy as np
    >>> data, offsets = serialize_batch({
    ...     "input_ids": [[101, 7592, 102, 0]], "input_mask": [[1, 1, 1, 0]],
    ...     "segment_ids": [[0, 0, 0, 0]], "masked_lm_positions": [[1, 0]],
    ...     "masked_lm_ids": [[7592, 0]], "masked_lm_weights": [[1.0, 0.0]],
    ...     "next_sentence_labels": [0]})
    >>> example = tf.train.Example.FromString(data[offsets[0]:offsets[1]])
    >>> list(example.features.feature["input_ids"].int64_list.value)
    [101, 7592, 102, 0]
    """
    missing = [name for name in FEATURE_NAMES if name not in features]
    if missing:
        raise ValueError(f"serialize_examples: missing feature(s) {missing}")
    n = len(np.asarray(features["next_sentence_labels"]))
    entries = []
    for name in FEATURE_NAMES:
        values = np.asarray(features[name]).reshape(n, -1)
        make = _float_feature if name == "masked_lm_weights" else _int64_feature
        entries += _feature_entry(name, make(values, n), n)
    flat, offsets = _concat(_field(0x0A, entries, n))  # Example.features = 1 { entries }
    return flat.tobytes(), offsets


# ---- sharded, atomic output -----------------------------------------------------------------

class RecordShards:
    """Writes TFRecords round-robin over ``paths``, all appearing together at the end.

    Each shard is written under a temporary name (in a ``.tmp-*`` directory beside it, see
    `keras_bert.storage.atomic_path`; local paths, gs://, ram://) and moved to its path when
    the ``with`` block ends without an error; after an error, Ctrl-C or a crash no output
    file is half-written (an earlier file of that name is left as it was).
    Record ``i`` goes to ``paths[i % len(paths)]``, as in the original script.

    >>> import os, tempfile
    >>> out = tempfile.mkdtemp()
    >>> paths = [os.path.join(out, f"part-{i}.tfrecord") for i in range(2)]
    >>> with RecordShards(paths) as shards:
    ...     shards.write([b"a", b"b", b"c"])
    >>> [sum(1 for _ in tf.data.TFRecordDataset(p)) for p in paths], shards.written
    ([2, 1], 3)
    """

    def __init__(self, paths):
        if not paths:
            raise ValueError("RecordShards needs at least one output path")
        if len(set(paths)) != len(paths):
            raise ValueError(f"an output file is named twice: {list(paths)}")
        self.paths = list(paths)
        self.written = 0
        self._stack = None
        self._writers = []

    def __enter__(self):
        self._stack = contextlib.ExitStack()
        try:
            for path in self.paths:
                tmp = self._stack.enter_context(storage.atomic_path(path))
                writer = tf.io.TFRecordWriter(tmp)
                self._stack.callback(writer.close)  # closed before its rename
                self._writers.append(writer)
        except BaseException:
            self._stack.close()
            raise
        return self

    def write(self, records):
        """Appends serialized records, continuing the round robin."""
        count = len(self._writers)
        for i, record in enumerate(records, start=self.written):
            self._writers[i % count].write(record)
        self.written += len(records)

    def write_batch(self, data, offsets):
        """Appends the records ``data[offsets[i]:offsets[i + 1]]`` (see `serialize_batch`)."""
        self.write([data[offsets[i]:offsets[i + 1]] for i in range(len(offsets) - 1)])

    def __exit__(self, *exc_info):
        return self._stack.__exit__(*exc_info)
