"""tools/serve.py end to end: started as tensorflow_model_server is (its flags, a model config
file for several models), asked with TF Serving's gRPC stub and over HTTP on 127.0.0.1, stopped
by SIGTERM; start-up errors are one line naming the file, line, path or port."""

import re
import socket

import numpy as np
import pytest

from tests.serving.clients import (
    GrpcClient,
    ServerProcess,
    free_port,
    http,
    outputs,
    texts,
)
from tests import tool_runs
from tests.export.serving_models import SENTENCES, install_version

REPO = __import__("pathlib").Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def model_root(serving_models, tmp_path_factory):
    root = tmp_path_factory.mktemp("served")
    install_version(serving_models["sentiment_v1"][0], root / "sentiment", 1)
    install_version(serving_models["sentiment_v2"][0], root / "sentiment", 2)
    install_version(serving_models["topics_v1"][0], root / "topics", 1)
    (root / "models.config").write_text(
        "model_config_list {\n"
        f"  config {{ name: 'sentiment' base_path: '{root / 'sentiment'}' "
        "model_platform: 'tensorflow' }\n"
        f"  config {{ name: 'topics' base_path: '{root / 'topics'}' }}\n"
        "}\n")
    return root


def test_serves_several_models_over_grpc_and_rest(model_root, serving_models):
    server = ServerProcess(f"--model_config_file={model_root / 'models.config'}", "--port=0",
                           f"--rest_api_port={free_port()}", "--enable_batching",
                           "--max_batch_size=8", "--batch_timeout_micros=1000",
                           "--rest_api_read_timeout_in_ms=300").start(rest=True)
    try:
        assert server.grpc_address.startswith("127.0.0.1:")
        assert server.rest_url.startswith("http://127.0.0.1:")
        client = GrpcClient(server.grpc_address)
        response = client.predict("sentiment", {"text": texts(SENTENCES[:4])})
        assert response.model_spec.version.value == 2  # the newest version
        expected = serving_models["sentiment_v2"][1]
        np.testing.assert_allclose(outputs(response)["probabilities"],
                                   expected["probabilities"][:4], atol=1e-5)
        client.close()
        status, answer = http(f"{server.rest_url}/v1/models/topics:predict",
                              {"instances": SENTENCES[:2]})
        assert status == 200, answer
        np.testing.assert_allclose([p["probabilities"] for p in answer["predictions"]],
                                   serving_models["topics_v1"][1]["probabilities"][:2],
                                   atol=1e-5)
        status, answer = http(f"{server.rest_url}/v1/models/sentiment:predict",
                              {"instances": ["a"] * 9})
        assert status == 400 and "maximum input batch size 8" in answer["error"]
        # A body shorter than its Content-Length: 408 once it has sent nothing for 0.3 s.
        host, port = server.rest_url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=60) as stalled:
            stalled.sendall(b"POST /v1/models/topics:predict HTTP/1.1\r\nHost: x\r\n"
                            b"Content-Length: 1000\r\n\r\n{\"instances\": [")
            reply = b""
            while chunk := stalled.recv(4096):  # until the server closes the connection
                reply += chunk
            reply = reply.decode()
        assert reply.startswith("HTTP/1.1 408"), reply
        assert "the request sent nothing for 0.3 s" in reply, reply
    finally:
        code, out, err = server.stop()
    assert code == 0, err
    assert "Serving model 'sentiment' version(s) [2]" in out
    assert "Serving model 'topics' version(s) [1]" in out
    assert "Batching: max_batch_size=8, batch_timeout_micros=1000" in out
    assert ("Limits: max_request_bytes=16777216, max_request_batch=1024, max_text_bytes=65536"
            in out)
    assert "Traceback" not in err


def test_startup_errors_name_the_problem(model_root, tmp_path):
    bad_config = tmp_path / "bad.config"
    bad_config.write_text(
        "model_config_list {\n  config {\n    name: 'a'\n    path: '/x'\n  }\n}\n")
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    cases = {
        "missing base path": (
            [f"--model_base_path={tmp_path / 'missing'}", "--port=0"],
            r"serve\.py: model 'default': base path .*missing does not exist"),
        "bad config line": (
            [f"--model_config_file={bad_config}", "--port=0"],
            r"serve\.py: .*bad\.config:4:5: not a valid ModelServerConfig text proto: .*no "
            r"field named \"path\""),
        "port in use": (
            [f"--model_base_path={model_root / 'topics'}",
             f"--port={busy.getsockname()[1]}"],
            rf"serve\.py: --port={busy.getsockname()[1]}: cannot listen for gRPC on "
            rf"127\.0\.0\.1:{busy.getsockname()[1]}: the port is in use"),
        "batching flags without batching": (
            [f"--model_base_path={model_root / 'topics'}", "--max_batch_size=4"],
            r"--max_batch_size, .* need --enable_batching"),
        "a token budget without batching": (
            [f"--model_base_path={model_root / 'topics'}", "--max_batch_tokens=4096"],
            r"--max_batch_tokens need --enable_batching"),
        "a read timeout of 0": (
            [f"--model_base_path={model_root / 'topics'}", "--rest_api_read_timeout_in_ms=0"],
            r"FATAL Flags parsing error: flag --rest_api_read_timeout_in_ms=0: 0 is not a "
            r"positive integer"),
        "bad gRPC channel arguments": (
            [f"--model_base_path={model_root / 'topics'}", "--port=0",
             "--grpc_channel_arguments=grpc.max_connection_age_ms"],
            r"serve\.py: --grpc_channel_arguments: 'grpc\.max_connection_age_ms' is not "
            r"name=value"),
    }
    try:
        # The command lines in one process (tests.tool_runs.run_cases): each case's exit
        # status and stderr as its own process would give them; the other tests here start
        # serve.py in processes of their own.
        _, results = tool_runs.run_cases("tools/serve.py",
                                         [flags for flags, _ in cases.values()], timeout=300)
        for name, result in zip(cases, results):
            err = result.stderr
            assert result.returncode == 1, (name, result.stdout, err)  # absl's flag errors too
            assert re.search(cases[name][1], err), (name, err)
            assert "Traceback" not in err, (name, err)
    finally:
        busy.close()


def test_serves_a_litert_model_with_prefer_tflite_model(litert_version, tmp_path):
    import shutil

    from keras_bert.export import litert_model

    version, tflite = litert_version
    shutil.copytree(version, tmp_path / "sentiment" / "1")
    (tmp_path / "lite" / "1").mkdir(parents=True)
    shutil.copy(tflite, tmp_path / "lite" / "1" / "model.tflite")
    server = ServerProcess("--model_name=sentiment",
                           f"--model_base_path={tmp_path / 'sentiment'}", "--port=0",
                           f"--rest_api_port={free_port()}",
                           "--prefer_tflite_model").start(rest=True)
    try:
        status, answer = http(f"{server.rest_url}/v1/models/sentiment:predict",
                              {"instances": SENTENCES})
        assert status == 200, answer
        want = litert_model.load(tflite)(text=SENTENCES)
        np.testing.assert_allclose([p["logits"] for p in answer["predictions"]],
                                   want["logits"], atol=1e-6)
    finally:
        code, out, err = server.stop()
    assert code == 0, err
    assert re.search(r"Serving model 'sentiment' version\(s\) \[1\] from .*sentiment "
                     r"\(model\.tflite\)", out), out
    assert re.search(r"serving version 1 from .*sentiment/1/model\.tflite", out), out
    failed = tool_runs.run("tools/serve.py", f"--model_base_path={tmp_path / 'lite'}", "--port=0")
    out, err = failed.stdout, failed.stderr
    assert failed.returncode == 1, (out, err)
    assert re.search(r"serve\.py: model 'default': version 1 at .*lite/1 does not load: "
                     r"FileNotFoundError: .*lite/1 holds only model\.tflite \(a LiteRT "
                     r"model\) and no saved_model\.pb: serve it with --prefer_tflite_model",
                     err), err
