"""The strategy from flags: TF_CONFIG checks, contradictory flags, the TPU fail-fast probe
(a real listening socket that never answers), the chief of a cluster."""

import json
import pathlib
import subprocess
import sys

import pytest
import tensorflow as tf

from keras_bert.training.distribution import (StrategyError, check_tf_config, strategy_from_flags,
                                              strategy_name, worker_role)

REPO = pathlib.Path(__file__).resolve().parents[2]
CLUSTER = {"worker": ["127.0.0.1:2222", "127.0.0.1:2223"]}


@pytest.mark.parametrize("config, message", [
    ("{not json", "TF_CONFIG is not valid JSON"),
    ("[1, 2]", "TF_CONFIG must be a JSON object, got a list"),
    ('{"task": {"type": "worker", "index": 0}}', 'TF_CONFIG has no "cluster" object'),
    ({"cluster": {"workers": ["a:1"]}}, 'unknown task type "workers"'),
    ({"cluster": {"worker": "127.0.0.1:2222"}}, r'cluster\["worker"\] must be a non-empty list'),
    ({"cluster": {"worker": ["127.0.0.1:http"]}}, "has port 'http', not a number"),
    ({"cluster": CLUSTER}, 'TF_CONFIG has no "task" object'),
    ({"cluster": CLUSTER, "task": {"type": "chief", "index": 0}},
     "task type 'chief' is not in the cluster"),
    ({"cluster": CLUSTER, "task": {"type": "worker", "index": 2}},
     r'task index 2 is out of range: cluster\["worker"\] has 2 task'),
])
def test_bad_tf_config_is_named(config, message):
    text = config if isinstance(config, str) else json.dumps(config)
    with pytest.raises(StrategyError, match=message):
        check_tf_config(text)


def test_good_tf_config_and_unset():
    assert check_tf_config("") is None
    config = check_tf_config(json.dumps({"cluster": CLUSTER, "task": {"type": "worker"}}))
    assert config["task"] == {"type": "worker", "index": 0}


@pytest.mark.parametrize("kwargs, message", [
    (dict(strategy="parameter_server"), "--strategy must be one of"),
    (dict(strategy="mirrored", tpu="my-tpu"), "--tpu=my-tpu asks for a TPU, but "
                                              "--strategy=mirrored"),
    (dict(tpu="my-tpu", num_gpus=2), "contradict each other"),
    (dict(strategy="tpu"), "--strategy=tpu needs --tpu"),
    (dict(strategy="mirrored", num_gpus=8), "--num_gpus=8, but TensorFlow sees 0 GPU"),
    (dict(strategy="multi_worker_mirrored", tf_config=""), "needs TF_CONFIG"),
    (dict(num_gpus=True), "--num_gpus must be >= 0"),
])
def test_contradictory_flags(kwargs, message):
    with pytest.raises(StrategyError, match=message):
        strategy_from_flags(**kwargs)


def test_single_machine_strategies_and_roles():
    assert strategy_name(strategy_from_flags("default", tf_config="")) == "the default strategy"
    mirrored = strategy_from_flags("mirrored", tf_config="")
    assert strategy_name(mirrored) == "MirroredStrategy"
    assert worker_role(mirrored) == (True, None, None)
    assert strategy_name(strategy_from_flags("one_device")) == "OneDeviceStrategy"


# A TPU address where something accepts connections but never speaks gRPC: TensorFlow's
# connect would wait there forever holding the interpreter; the HTTP/2 probe ends it. In a
# subprocess, bounded by `timeout -k`.
_SILENT_SERVER = """
import socket, sys, time
from keras_bert.training.distribution import StrategyError, tpu_strategy
server = socket.socket()
server.bind(("127.0.0.1", 0))
server.listen(8)
address = "grpc://127.0.0.1:%d" % server.getsockname()[1]
start = time.monotonic()
try:
    tpu_strategy(address, connect_timeout=3)
except StrategyError as error:
    print("ERROR", error)
print("SECONDS", round(time.monotonic() - start, 1))
sys.stdout.flush()
import os
os._exit(0)
"""


def test_a_tpu_address_that_never_answers_fails_within_the_time_limit():
    result = subprocess.run(["timeout", "-k", "5", "120", sys.executable, "-c", _SILENT_SERVER],
                            cwd=REPO, capture_output=True, text=True, timeout=150)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "ERROR --tpu=grpc://127.0.0.1:" in result.stdout, result.stdout
    assert "accepts connections but does not answer as a gRPC (TPU) server" in result.stdout


def test_unreachable_tpu_address_fails_at_the_probe():
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    with pytest.raises(StrategyError, match=f"nothing answers at 127.0.0.1:{port}"):
        strategy_from_flags(tpu=f"127.0.0.1:{port}", tf_config="")
    with pytest.raises(StrategyError, match="--tpu=local: connecting to the TPU: "):
        strategy_from_flags(tpu="local", tf_config="")
    tf.config.list_logical_devices("CPU")  # the process is still usable
