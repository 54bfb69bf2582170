"""keras_bert/serving/servable.py: which file of a version directory serves, a loaded
version's signatures and predictions, and its lifecycle (no new requests once retired,
unloaded when the last one in flight is done)."""

import numpy as np
import pytest

from keras_bert.serving.errors import ServingError
from keras_bert.serving.limits import RequestLimits
from keras_bert.serving.servable import (Servable, ServableOptions, read_signature_defs,
                                         served_file)

from toy_models import write_doubler  # tests/serving/toy_models.py


@pytest.fixture(scope="module")
def doubler(tmp_path_factory):
    return write_doubler(tmp_path_factory.mktemp("doubler") / "1")


def test_which_file_serves(tmp_path, doubler):
    assert served_file(doubler) == "saved_model.pb"
    assert served_file(doubler, prefer_tflite_model=True) == "saved_model.pb"  # falls back
    (tmp_path / "model.tflite").write_bytes(b"")
    with pytest.raises(FileNotFoundError, match="holds only model.tflite .* serve it with "
                                                "--prefer_tflite_model"):
        served_file(str(tmp_path))
    assert served_file(str(tmp_path), prefer_tflite_model=True) == "model.tflite"
    with pytest.raises(FileNotFoundError, match="no saved_model.pb in"):
        served_file(str(tmp_path / "nothing"))
    assert {"serving_default", "pair", "text", "checked"} <= set(read_signature_defs(doubler))


def test_a_loaded_version_predicts_and_refuses_what_it_cannot(doubler):
    servable = Servable("doubler", 1, doubler,
                        ServableOptions(limits=RequestLimits(max_request_batch=2)))
    servable.load()
    assert (servable.state, servable.served_file) == ("AVAILABLE", "saved_model.pb")
    x = {"x": np.array([1.0, 2.0], "float32")}
    assert servable.predict(servable.signature(""), x)["y"].tolist() == [2.0, 4.0]
    text = servable.signature("text")
    out = servable.predict(text, {"s": np.array([b"ab"], object)}, output_filter=("length",))
    assert list(out) == ["length"]
    with pytest.raises(ServingError, match="output tensor alias not found .* 'nope'"):
        servable.predict(text, {"s": np.array([b"ab"], object)}, output_filter=("nope",))
    with pytest.raises(ServingError, match=r"a batch of 3 rows; .* at most 2 per request "
                                           r"\(--max_request_batch\)"):
        servable.predict(servable.signature(""), {"x": np.zeros(3, "float32")})
    with pytest.raises(ServingError, match='Serving signature key "nope" not found') as info:
        servable.signature("nope")
    assert info.value.code == "FAILED_PRECONDITION"


def test_retired_it_takes_no_new_request_and_unloads_after_the_last(doubler):
    servable = Servable("doubler", 1, doubler)
    servable.load()
    servable.acquire()  # a request in flight
    servable.retire()
    assert (servable.state, servable.in_flight) == ("UNLOADING", 1)
    with pytest.raises(ServingError, match="version 1 of model 'doubler' is unloading") as info:
        servable.acquire()
    assert info.value.code == "UNAVAILABLE"
    servable.release()
    assert servable.wait_unloaded(timeout=5) and servable.state == "END"
    assert servable.signatures == {}


def test_a_version_that_does_not_load_says_why(tmp_path):
    servable = Servable("broken", 3, str(tmp_path))
    with pytest.raises(FileNotFoundError):
        servable.load()
    assert servable.state == "END" and servable.error.startswith("FileNotFoundError: no saved")
