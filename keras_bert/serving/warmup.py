"""A version's warm-up, run in its process before it serves (`keras_bert.serving.version_process`).

As TF Serving does it: a version directory's ``assets.extra/tf_serving_warmup_requests`` (a
TFRecord file of ``tensorflow.serving.PredictionLog``, at most 1000 records;
``model.export(..., warmup_requests=[...])`` writes one) is replayed
``num_request_iterations_for_warmup`` times, and a record that fails fails the load. Without
that file, each signature is called once on a one-row input (`example_inputs`), keras_bert's
addition.
"""

import logging
import os

from keras_bert import storage
from keras_bert.serving.errors import ServingError
from keras_bert.serving.signatures import call_function, first_line

WARMUP_FILE = os.path.join("assets.extra", "tf_serving_warmup_requests")
MAX_WARMUP_RECORDS = 1000  # TF Serving's WarmupConsts::kMaxNumRecords
log = logging.getLogger("keras_bert.serving")


def warm_up(functions, specs, path, options):
    """Runs the warm-up records of `path` (TF Serving's), or one call per signature without
    them; returns what was run, in words. A failing record raises (the load fails)."""
    records_path = os.path.join(path, WARMUP_FILE)
    if not storage.exists(records_path):
        for key, function in functions.items():
            try:
                call_function(function, key, specs[key], example_inputs(specs[key]))
            except Exception as error:  # noqa: BLE001 - a warm-up of our own is optional
                log.info("%s: the warm-up call of signature %r failed (%s)", path, key,
                         first_line(error))
        return "one call per signature"
    records = read_warmup_requests(records_path)
    for _ in range(options["warmup_iterations"]):
        for index, (key, inputs) in enumerate(records):
            if key not in functions:
                raise ValueError(f"{WARMUP_FILE} record {index} asks for signature {key!r}; "
                                 f"the SavedModel has {sorted(functions)}")
            try:
                call_function(functions[key], key, specs[key], inputs)
            except ServingError as error:
                raise ValueError(f"{WARMUP_FILE} record {index} failed: {error.message}"
                                 ) from None
    return f"{len(records)} warm-up record(s)"


def read_warmup_requests(path):
    """The (signature name, inputs as numpy arrays) of each PredictLog of a TF Serving
    warm-up file; ValueError for a file TF Serving would refuse."""
    import tensorflow as tf
    from tensorflow_serving.apis import prediction_log_pb2

    records = []
    for index, record in enumerate(tf.data.TFRecordDataset(path)):
        if index == MAX_WARMUP_RECORDS:
            raise ValueError(f"{path} has more than {MAX_WARMUP_RECORDS} warm-up records "
                             "(TF Serving's limit)")
        entry = prediction_log_pb2.PredictionLog.FromString(record.numpy())
        kind = entry.WhichOneof("log_type")
        if kind != "predict_log":
            raise ValueError(f"{path} record {index} is a {kind}: this server warms up "
                             "with Predict requests only (predict_log)")
        request = entry.predict_log.request
        records.append((request.model_spec.signature_name or "serving_default",
                        {key: tf.make_ndarray(proto) for key, proto in request.inputs.items()}))
    return records


def example_inputs(specs):
    """One row for each input of `specs` (name -> tf.TensorSpec): unknown sizes 1,
    ``b"warm up"`` for strings, zeros for numbers."""
    import numpy as np
    import tensorflow as tf

    inputs = {}
    for key, spec in specs.items():
        shape = [1 if d is None else d for d in spec.shape.as_list()] \
            if spec.shape.rank is not None else [1]
        if spec.dtype == tf.string:
            array = np.empty(shape, dtype=object)
            array.fill(b"warm up")
        else:
            array = np.zeros(shape, dtype=spec.dtype.as_numpy_dtype)
        inputs[key] = array
    return inputs
