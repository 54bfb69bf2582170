"""keras_bert/export/warmup_requests.py: ``model.export(path, warmup_requests=[...])`` writes
TF Serving's warm-up file, ``assets.extra/tf_serving_warmup_requests``: a TFRecord of
``PredictionLog``s that parse with tensorflow-serving-api's own protos, one Predict request
per text for ``serving_default``, that the exported signature answers."""

import pytest
import tensorflow as tf

from keras_bert.export import ExportError
from keras_bert.export.warmup_requests import WARMUP_FILE
from tests.export.serving_models import tiny_classifier


def test_an_export_with_warmup_requests_holds_tf_servings_records(tmp_path):
    from tensorflow_serving.apis import prediction_log_pb2

    import tensorflow_text  # noqa: F401  (the signature's tokenizer ops)

    texts = ["a great movie", "Émile's café"]
    path = tiny_classifier().export(str(tmp_path / "m" / "1"), warmup_requests=texts)
    records = [prediction_log_pb2.PredictionLog.FromString(r.numpy())
               for r in tf.data.TFRecordDataset(f"{path}/{WARMUP_FILE}")]
    requests = [r.predict_log.request for r in records]
    assert [r.model_spec.signature_name for r in requests] == ["serving_default"] * 2
    inputs = [tf.make_ndarray(r.inputs["text"]) for r in requests]
    assert [i.tolist() for i in inputs] == [[t.encode()] for t in texts]
    serve = tf.saved_model.load(path).signatures["serving_default"]
    assert serve(text=tf.constant(inputs[1]))["label_ids"].shape == (1,)


def test_multiple_choice_records_fill_each_choice(tmp_path):
    from keras_bert.export.warmup_requests import text_records
    from tensorflow_serving.apis import prediction_log_pb2

    specs = {"context": tf.TensorSpec([None], tf.string),
             "choices": tf.TensorSpec([None, 3], tf.string)}
    record, = text_records(specs, ["why"])
    request = prediction_log_pb2.PredictionLog.FromString(record).predict_log.request
    assert tf.make_ndarray(request.inputs["choices"]).tolist() == [[b"why"] * 3]


@pytest.mark.parametrize("value,match", [
    ("one text", r"a non-empty list of texts, got 'one text'"),
    ([], r"a non-empty list of texts, got \[\]"),
    ([1], r"a non-empty list of texts"),
    (["a"] * 1001, r"1001 texts; TF Serving reads at most 1000 warm-up records"),
])
def test_bad_warmup_requests_are_refused_before_anything_is_written(tmp_path, value, match):
    with pytest.raises(ExportError, match=match):
        tiny_classifier().export(str(tmp_path / "m" / "1"), warmup_requests=value)
    assert not (tmp_path / "m" / "1").exists()
