"""TF Serving's warm-up requests for a serving export (``model.export(path,
warmup_requests=[...])``).

TF Serving replays the ``tensorflow.serving.PredictionLog`` records of a version's
``assets.extra/tf_serving_warmup_requests`` (a TFRecord file, at most 1000 records) before the
version serves, so the first client request does not pay TensorFlow's lazy initialisation
(graph optimisation, kernel set-up: seconds for a BERT). keras_bert's local server does the
same (`keras_bert.serving.version_process`). Each text given becomes one Predict request of
one row on ``serving_default``, every string input of the signature holding that text.

The records are written without tensorflow-serving-api (an optional extra): each is encoded
with protobuf's wire format from TensorFlow's own ``TensorProto``, and parses as
``PredictionLog {predict_log {request {model_spec {signature_name} inputs}}}``.
"""

import os

import numpy as np
import tensorflow as tf

from keras_bert import storage

WARMUP_FILE = os.path.join("assets.extra", "tf_serving_warmup_requests")
MAX_RECORDS = 1000  # TF Serving refuses more


def _varint(value):
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _field(number, payload):
    """A length-delimited protobuf field (a message, a string, bytes)."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def predict_log(inputs, signature_name="serving_default"):
    """A serialized ``PredictionLog`` holding a Predict request of ``inputs`` (name -> numpy
    array or list) for signature ``signature_name``.

    >>> from tensorflow_serving.apis import prediction_log_pb2
    >>> record = predict_log({"text": np.array([b"a great movie"], dtype=object)})
    >>> log = prediction_log_pb2.PredictionLog.FromString(record)
    >>> request = log.predict_log.request
    >>> request.model_spec.signature_name, tf.make_ndarray(request.inputs["text"])
    ('serving_default', array([b'a great movie'], dtype=object))
    """
    request = _field(1, _field(3, signature_name.encode("utf-8")))  # model_spec
    for key, value in inputs.items():
        proto = tf.make_tensor_proto(value).SerializeToString()
        request += _field(2, _field(1, key.encode("utf-8")) + _field(2, proto))  # inputs map
    return _field(6, _field(1, request))  # predict_log { request }


def text_records(specs, texts):
    """One record per text: each string input of ``specs`` (name -> tf.TensorSpec of a
    signature) holds it, in one row. ValueError for anything but 1 to 1000 strings."""
    if isinstance(texts, (str, bytes)) or not isinstance(texts, (list, tuple)) or not texts \
            or not all(isinstance(t, str) for t in texts):
        raise ValueError(f"warmup_requests must be a non-empty list of texts, got {texts!r}")
    if len(texts) > MAX_RECORDS:
        raise ValueError(f"warmup_requests: {len(texts)} texts; TF Serving reads at most "
                         f"{MAX_RECORDS} warm-up records")
    records = []
    for text in texts:
        inputs = {}
        for name, spec in specs.items():
            shape = [1] + [d or 1 for d in spec.shape.as_list()[1:]]
            array = np.empty(shape, dtype=object)
            array.fill(text.encode("utf-8"))
            inputs[name] = array
        records.append(predict_log(inputs))
    return records


def write(directory, records):
    """Writes ``records`` to ``<directory>/assets.extra/tf_serving_warmup_requests``."""
    path = os.path.join(directory, WARMUP_FILE)
    storage.makedirs(os.path.dirname(path))
    with tf.io.TFRecordWriter(path) as writer:
        for record in records:
            writer.write(record)
    return path
