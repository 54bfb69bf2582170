"""keras_bert/serving/warmup.py: TF Serving's warm-up records replayed in a version's process
before it serves (a failing one fails the load, as in TF Serving), else one call per
signature on `example_inputs`."""

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.export import warmup_requests
from keras_bert.serving import ModelConfig, ModelManager, ServerConfigError
from keras_bert.serving.warmup import example_inputs
from tests.serving.test_version_process import _with_records


@pytest.fixture
def managers():
    made = []

    def make(*models, **kwargs):
        made.append(ModelManager(list(models), poll_wait_seconds=-1, **kwargs))
        made[-1].start()
        return made[-1]

    yield make
    for manager in made:
        manager.stop()


def test_tf_servings_warmup_records_are_replayed_before_the_version_serves(
        tmp_path, serving_models, managers):
    source = serving_models["sentiment_v1"][0]
    records = warmup_requests.text_records({"text": _spec()}, ["a great movie", "dull"])
    version = _with_records(source, tmp_path / "warm" / "1", records)
    manager = managers(ModelConfig("warm", str(version.parent)),
                       num_request_iterations_for_warmup=3)
    assert manager.resolve("warm").warmed_up == "2 warm-up record(s)"
    cold = managers(ModelConfig("cold", str(version.parent)), enable_model_warmup=False)
    assert cold.resolve("cold").warmed_up is None

    # A record TF Serving would refuse (a signature the model lacks, wrong inputs) fails the
    # load, as in TF Serving, naming the record.
    bad = warmup_requests.predict_log({"text": np.array([b"a"], dtype=object)}, "nope")
    _with_records(source, tmp_path / "bad" / "1", [records[0], bad])
    wrong = warmup_requests.predict_log({"words": np.array([b"a"], dtype=object)})
    _with_records(source, tmp_path / "wrong" / "1", [wrong])
    for name, pattern in [("bad", r"record 1 asks for signature 'nope'; the SavedModel has "
                                  r"\['serving_default', 'serving_ids'\]"),
                          ("wrong", r"tf_serving_warmup_requests record 0 failed|words")]:
        with pytest.raises(ServerConfigError, match=rf"version 1 at .*{name}/1 does not load: "
                                                    rf".*({pattern})"):
            ModelManager([ModelConfig(name, str(tmp_path / name))],
                         poll_wait_seconds=-1).start()


def _spec():
    return tf.TensorSpec([None], tf.string)




def test_example_inputs_are_one_row_of_each_input():
    inputs = example_inputs({"text": tf.TensorSpec([None], tf.string),
                             "input_word_ids": tf.TensorSpec([None, None], tf.int32),
                             "choices": tf.TensorSpec([None, 3], tf.string)})
    assert inputs["text"].tolist() == [b"warm up"]
    assert inputs["input_word_ids"].dtype == np.int32 and inputs["input_word_ids"].shape == (1, 1)
    assert inputs["choices"].tolist() == [[b"warm up"] * 3]
