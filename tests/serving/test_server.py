"""keras_bert/serving/server.py, ModelServer: the manager, the gRPC API and the REST API
started together (on free ports) and stopped together; what cannot be served named at start."""

import urllib.request

import pytest

from keras_bert.serving import ModelConfig, ModelServer, ServerConfigError

from clients import http  # tests/serving/clients.py
from toy_models import write_doubler  # tests/serving/toy_models.py


def test_serves_rest_and_grpc_and_stops(tmp_path):
    write_doubler(tmp_path / "doubler" / "1")
    with ModelServer([ModelConfig("doubler", str(tmp_path / "doubler"))], grpc_port=0,
                     rest_api_port=0, poll_wait_seconds=-1) as server:
        assert server.grpc_port and server.rest_port
        assert server.rest_url == f"http://127.0.0.1:{server.rest_port}"
        assert server.grpc_address == f"127.0.0.1:{server.grpc_port}"
        status, answer = http(f"{server.rest_url}/v1/models/doubler:predict",
                              {"instances": [1.0, 2.5]})
        assert (status, answer) == (200, {"predictions": [2.0, 5.0]})
        status, answer = http(f"{server.rest_url}/v1/models/doubler")
        assert status == 200 and answer["model_version_status"][0]["state"] == "AVAILABLE"
    assert server.wait(timeout=0)  # stopped: nothing listens on its ports any more
    with pytest.raises(OSError):
        urllib.request.urlopen(f"{server.rest_url}/v1/models/doubler", timeout=5)


def test_a_missing_model_is_named_at_start_and_nothing_keeps_listening(tmp_path):
    server = ModelServer([ModelConfig("gone", str(tmp_path / "gone"))], grpc_port=0,
                         rest_api_port=0)
    with pytest.raises(ServerConfigError, match="gone"):
        server.start()
    assert server.wait(timeout=0)  # stop() ran


@pytest.mark.parametrize("timeout", [0, -5, None, "5000", True])
def test_a_read_timeout_that_is_not_positive_is_refused_before_anything_starts(tmp_path,
                                                                               timeout):
    with pytest.raises(ValueError, match=r"rest_api_read_timeout_in_ms must be a positive "
                                         r"number of milliseconds, got "):
        ModelServer([ModelConfig("doubler", str(tmp_path / "doubler"))], grpc_port=0,
                    rest_api_port=0, rest_api_read_timeout_in_ms=timeout)


@pytest.mark.parametrize("argument,value,message", [
    ("rest_api_timeout_in_ms", -5, "rest_api_timeout_in_ms must be a positive number of "
                                   "milliseconds or None (no limit), got -5"),
    ("rest_api_timeout_in_ms", True, "rest_api_timeout_in_ms must be a positive number of "
                                     "milliseconds or None (no limit), got True"),
    ("rest_api_num_threads", 0, "rest_api_num_threads must be a positive whole number of "
                                "requests or None (4 per CPU), got 0"),
    ("rest_api_num_threads", "8", "rest_api_num_threads must be a positive whole number of "
                                  "requests or None (4 per CPU), got '8'"),
])
def test_a_bad_rest_setting_is_refused_before_anything_starts(tmp_path, argument, value,
                                                              message):
    import re

    with pytest.raises(ValueError, match=re.escape(message)):
        ModelServer([ModelConfig("doubler", str(tmp_path / "doubler"))], grpc_port=0,
                    rest_api_port=0, **{argument: value})


@pytest.mark.parametrize("timeout", [0, None])
def test_a_rest_timeout_of_0_or_none_is_no_limit(tmp_path, timeout):
    server = ModelServer([ModelConfig("doubler", str(tmp_path / "doubler"))], grpc_port=0,
                         rest_api_port=0, rest_api_timeout_in_ms=timeout)
    assert server._rest_timeout is None
