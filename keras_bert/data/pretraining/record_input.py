"""Pre-training input from TFRecords in the original BERT format, at TPU scale.

The records are those google-research/bert's ``create_pretraining_data.py`` writes (and
``tools/create_pretraining_data.py``): ``tf.train.Example`` s with

==========================  =========================  ==================================
feature                     type, length               becomes (our names, DESIGN.md)
==========================  =========================  ==================================
``input_ids``               int64 [max_seq_length]     ``input_word_ids`` (int32)
``input_mask``              int64 [max_seq_length]     ``input_mask``
``segment_ids``             int64 [max_seq_length]     ``input_type_ids``
``masked_lm_positions``     int64 [max_predictions]    ``masked_lm_positions``
``masked_lm_ids``           int64 [max_predictions]    ``masked_lm_ids`` (label)
``masked_lm_weights``       float [max_predictions]    ``masked_lm_weights`` (weight)
``next_sentence_labels``    int64 [1]                  ``next_sentence_labels`` [batch]
==========================  =========================  ==================================

`tfrecord_dataset` reads them for one input pipeline of a `tf.distribute` run: files come
from `list_files` (globs or comma lists through `tf.io.gfile`, so ``gs://`` works and a
pattern may match thousands of shards), are split between input pipelines by file (by record
when there are fewer files than pipelines), shuffled, repeated, interleaved, shuffled again,
batched to the per-replica batch and prefetched. The stream is a fixed function of the seed
and the pipeline, so a run resumed at step ``s`` skips the raw records of the first ``s``
steps (before any parsing) and sees exactly what it would have seen.
"""

import tensorflow as tf

from keras_bert import storage

MAX_RECORDS_CHECKED = 4  # files whose first record is checked before training starts
SHUFFLE_BUFFER = 1000  # records (the original run_pretraining.py shuffles 100)


class PretrainingDataError(ValueError):
    """Pre-training input that cannot be used: no files, records of another shape, bad
    vocabulary or flags of data creation; the message names the culprit.

    >>> from keras_bert.data import PretrainingDataError
    >>> from keras_bert.data.pretraining.record_input import list_files
    >>> try:
    ...     list_files("")
    ... except PretrainingDataError as error:
    ...     print(error)
    --input_file is empty: give files, globs or a comma list
    """


def _original_features(max_seq_length, max_predictions_per_seq):
    """{original name: (our name, dtype in the file, length)}."""
    return {
        "input_ids": ("input_word_ids", tf.int64, max_seq_length),
        "input_mask": ("input_mask", tf.int64, max_seq_length),
        "segment_ids": ("input_type_ids", tf.int64, max_seq_length),
        "masked_lm_positions": ("masked_lm_positions", tf.int64, max_predictions_per_seq),
        "masked_lm_ids": ("masked_lm_ids", tf.int64, max_predictions_per_seq),
        "masked_lm_weights": ("masked_lm_weights", tf.float32, max_predictions_per_seq),
        "next_sentence_labels": ("next_sentence_labels", tf.int64, 1),
    }


def list_files(input_file, flag="--input_file"):
    """The files ``input_file`` names: a comma-separated list of paths and glob patterns,
    each expanded with `tf.io.gfile.glob` (local, ``gs://``...), sorted, without repeats.

    Raises `PretrainingDataError` naming the first pattern that matches nothing.

    Example:

    >>> import os, tempfile
    >>> d = tempfile.mkdtemp()
    >>> for name in ("b.txt", "a.txt"):
    ...     open(os.path.join(d, name), "w").close()
    >>> [os.path.basename(f) for f in list_files(os.path.join(d, "*.txt"))]
    ['a.txt', 'b.txt']
    >>> list_files(os.path.join(d, "*.tfrecord"))
    Traceback (most recent call last):
    ...
    keras_bert.data.pretraining.record_input.PretrainingDataError: --input_file: no file matches ...
    """
    patterns = [p.strip() for p in str(input_file or "").split(",") if p.strip()]
    if not patterns:
        raise PretrainingDataError(f"{flag} is empty: give files, globs or a comma list")
    files = []
    for pattern in patterns:
        try:
            matched = storage.glob(pattern)
        except tf.errors.OpError as error:
            raise PretrainingDataError(f"{flag}: cannot list {pattern}: {error.message}") \
                from None
        matched = [f for f in matched if not storage.isdir(f)]
        if not matched:
            raise PretrainingDataError(f"{flag}: no file matches {pattern}")
        files += [f for f in matched if f not in files]
    return files


def check_tfrecord_files(files, max_seq_length, max_predictions_per_seq,
                         max_files=MAX_RECORDS_CHECKED):
    """Reads the first record of the first ``max_files`` non-empty files and checks it has
    the original features with the right types and lengths; `PretrainingDataError` naming
    the file, the feature, what was expected and what was found, before any training.
    Returns the number of records checked."""
    expected = _original_features(max_seq_length, max_predictions_per_seq)
    checked = 0
    for path in files:
        if checked >= max_files:
            break
        try:
            first = list(tf.data.TFRecordDataset(path).take(1).as_numpy_iterator())
        except tf.errors.OpError as error:
            raise PretrainingDataError(f"{path}: not a readable TFRecord file "
                                       f"({error.message.splitlines()[0]})") from None
        if not first:
            continue
        try:
            example = tf.train.Example.FromString(first[0])
        except Exception:  # a protobuf DecodeError
            raise PretrainingDataError(f"{path}: its first record is not a tf.train.Example") \
                from None
        _check_example(path, example, expected)
        checked += 1
    if not checked:
        raise PretrainingDataError(f"no records in {', '.join(files[:max_files])}"
                                   + (" ..." if len(files) > max_files else ""))
    return checked


def _check_example(path, example, expected):
    features = example.features.feature
    for name, (_, dtype, length) in expected.items():
        if name not in features:
            raise PretrainingDataError(
                f"{path}: the records have no feature {name!r} (they have "
                f"{', '.join(sorted(features))}); expected the original BERT pre-training "
                "features")
        kind = features[name].WhichOneof("kind")
        want = "float_list" if dtype == tf.float32 else "int64_list"
        if kind != want:
            raise PretrainingDataError(f"{path}: feature {name!r} is a {kind}, expected "
                                       f"{want}")
        found = len(getattr(features[name], kind).value)
        if found != length:
            what = ("max_seq_length" if length and name in ("input_ids", "input_mask",
                                                            "segment_ids")
                    else "max_predictions_per_seq" if name.startswith("masked_lm") else "1")
            raise PretrainingDataError(
                f"{path}: feature {name!r} has {found} values per record, expected {length} "
                f"({what}); the records were made with other settings: pass the "
                "--max_seq_length / --max_predictions_per_seq they were made with")


def _shard(dataset_of_files, files, input_context):
    """Files for this input pipeline, and whether records must be sharded instead."""
    if input_context is None or input_context.num_input_pipelines == 1:
        return dataset_of_files, False
    if len(files) >= input_context.num_input_pipelines:
        return dataset_of_files.shard(input_context.num_input_pipelines,
                                      input_context.input_pipeline_id), False
    return dataset_of_files, True


def _parse_batch(expected, batch_size):
    """(file names [B], serialized records [B]) -> the model's batch, checked: a record of
    another length fails with the file, the feature, the expected and found lengths."""

    def parse(names, records):
        spec = {name: tf.io.RaggedFeature(dtype) for name, (_, dtype, _) in expected.items()}
        parsed = tf.io.parse_example(records, spec)
        out, checks = {}, []
        for name, (ours, dtype, length) in expected.items():
            lengths = parsed[name].row_lengths()
            bad = tf.argmax(tf.cast(tf.not_equal(lengths, length), tf.int32))
            checks.append(tf.debugging.Assert(
                tf.reduce_all(tf.equal(lengths, length)),
                [f"Pre-training record of another shape: feature {name} should have "
                 f"{length} values; file", names[bad], "record has", lengths[bad]]))
        with tf.control_dependencies(checks):
            for name, (ours, dtype, length) in expected.items():
                value = parsed[name].to_tensor(shape=[batch_size, length])
                value = tf.cast(value, tf.float32 if dtype == tf.float32 else tf.int32)
                out[ours] = value[:, 0] if name == "next_sentence_labels" else value
        return out

    return parse


def tfrecord_dataset(files, max_seq_length, max_predictions_per_seq, batch_size,
                     input_context=None, is_training=True, seed=0, start_batch=0,
                     shuffle_buffer=SHUFFLE_BUFFER, cycle_length=8):
    """The batches of one input pipeline, from original-format TFRecords.

    Args:
        files: the record files (`list_files`).
        max_seq_length, max_predictions_per_seq: what the records were made with.
        batch_size: the per-replica batch (`tf.distribute.InputContext.
            get_per_replica_batch_size` of the global batch).
        input_context: the `tf.distribute.InputContext` of this pipeline (None: the only one).
        is_training: shuffle (files and records); otherwise files are read in order. Both
            repeat forever.
        seed: the shuffling seed (with the pipeline id).
        start_batch: batches to skip (a resumed run's position); skipped as raw records.
        shuffle_buffer, cycle_length: records in the shuffle buffer; files read at once.

    Returns a `tf.data.Dataset` of dicts: ``input_word_ids``, ``input_mask``,
    ``input_type_ids``, ``masked_lm_positions``, ``masked_lm_ids`` (int32 ``[batch, ...]``),
    ``masked_lm_weights`` (float32), ``next_sentence_labels`` (int32 ``[batch]``).
    """
    expected = _original_features(max_seq_length, max_predictions_per_seq)
    pipeline = input_context.input_pipeline_id if input_context is not None else 0
    files = list(files)
    dataset = tf.data.Dataset.from_tensor_slices(tf.constant(files, tf.string))
    dataset, shard_records = _shard(dataset, files, input_context)
    if is_training:
        dataset = dataset.shuffle(len(files), seed=seed * 1000 + pipeline,
                                  reshuffle_each_iteration=True)
    dataset = dataset.repeat()
    dataset = dataset.interleave(
        lambda name: tf.data.TFRecordDataset(name).map(lambda record: (name, record)),
        cycle_length=min(cycle_length, len(files)) if is_training else 1,
        block_length=1, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    if shard_records:
        dataset = dataset.shard(input_context.num_input_pipelines, pipeline)
    if is_training:
        dataset = dataset.shuffle(shuffle_buffer, seed=seed * 1000 + pipeline + 1)
    if start_batch:
        dataset = dataset.skip(int(start_batch) * batch_size)
    dataset = dataset.batch(batch_size, drop_remainder=True)
    dataset = dataset.map(_parse_batch(expected, batch_size),
                          num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    return dataset.prefetch(tf.data.AUTOTUNE)
