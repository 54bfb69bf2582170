"""keras_bert/serving/rest.py and rest_json.py through a plain HTTP client on 127.0.0.1:
TF Serving's REST API (row and columnar formats, {"b64": ...}, status, metadata), answers
equal to the Keras models' (an embedder's vectors included), an empty batch answered with no
rows in both formats, and a 400/404 naming the problem for each bad request while the server
keeps serving."""

import base64
import http.client as http_client
import json

import keras
import numpy as np
import pytest

from keras_bert import (BertConfig, BertEncoder, BertPreprocessor, BertTextEmbedder,
                        BertTextEmbedderPreprocessor)
from keras_bert.serving import BatchingOptions, ModelConfig, ModelServer, RequestLimits
from tests.serving.clients import TIMEOUT, GrpcClient, http, outputs, run_concurrently, texts
from tests.export.serving_models import SENTENCES, VOCAB, install_version


@pytest.fixture(scope="module")
def embedder():
    keras.utils.set_random_seed(3)
    encoder = BertEncoder(BertConfig(vocab_size=len(VOCAB), hidden_size=16, num_hidden_layers=1,
                                     num_attention_heads=2, intermediate_size=32,
                                     initializer_range=0.2))
    return BertTextEmbedder(encoder, preprocessor=BertTextEmbedderPreprocessor(VOCAB, 16))


@pytest.fixture(scope="module")
def server(serving_models, embedder, tmp_path_factory):
    root = tmp_path_factory.mktemp("rest_models")
    install_version(serving_models["sentiment_v1"][0], root / "sentiment", 1)
    install_version(serving_models["topics_v1"][0], root / "topics", 4)
    embedder.export(str(root / "embedder" / "1"))
    models = [ModelConfig("sentiment", str(root / "sentiment"), version_labels=(("stable", 1),)),
              ModelConfig("topics", str(root / "topics")),
              ModelConfig("embedder", str(root / "embedder"))]
    batching = BatchingOptions(max_batch_size=16, batch_timeout_micros=1000)
    limits = RequestLimits(max_request_bytes=64 * 1024, max_request_batch=1024,
                           max_text_bytes=1000)
    with ModelServer(models, grpc_port=0, rest_api_port=0, batching=batching, limits=limits,
                     poll_wait_seconds=-1) as server:
        yield server


def _url(server, path):
    return server.rest_url + path


def _close(rows, expected, count=len(SENTENCES)):
    np.testing.assert_allclose([r["probabilities"] for r in rows],
                               expected["probabilities"][:count], atol=1e-5)
    assert [r["label_ids"] for r in rows] == expected["label_ids"][:count].tolist()


def test_row_format_answers_as_the_keras_model(server, serving_models):
    status, answer = http(_url(server, "/v1/models/sentiment:predict"),
                          {"instances": SENTENCES})
    assert status == 200, answer
    _close(answer["predictions"], serving_models["sentiment_v1"][1])
    # Named instances, a version in the path, and {"b64": ...} strings: the same answers.
    named = [{"text": {"b64": base64.b64encode(s.encode()).decode()}} for s in SENTENCES[:3]]
    for path in ("/v1/models/sentiment/versions/1:predict",
                 "/v1/models/sentiment/labels/stable:predict"):
        status, answer = http(_url(server, path), {"instances": named})
        assert status == 200, answer
        _close(answer["predictions"], serving_models["sentiment_v1"][1], 3)


def test_columnar_format_and_the_serving_ids_signature(server, serving_models):
    expected = serving_models["topics_v1"][1]
    status, answer = http(_url(server, "/v1/models/topics:predict"), {"inputs": SENTENCES})
    assert status == 200, answer
    np.testing.assert_allclose(answer["outputs"]["probabilities"], expected["probabilities"],
                               atol=1e-5)
    packed = {k: v.numpy().tolist() for k, v in BertPreprocessor(VOCAB, seq_length=16)(
        SENTENCES).items()}
    status, answer = http(_url(server, "/v1/models/topics:predict"),
                          {"signature_name": "serving_ids", "inputs": packed})
    assert status == 200, answer
    assert answer["outputs"]["label_ids"] == expected["label_ids"].tolist()


def test_an_embedder_answers_its_vectors_as_rows_of_floats(server, embedder):
    """A signature with one output answers bare rows, as TF Serving: "predictions" is the
    [batch, dim] matrix (a list per text), columnar "outputs" the same matrix; gRPC gives it
    as a float32 tensor under "embeddings"."""
    want = embedder.encode(SENTENCES)
    url = _url(server, "/v1/models/embedder:predict")
    status, answer = http(url, {"instances": SENTENCES})
    assert status == 200, answer
    assert all(isinstance(row, list) and len(row) == 16 for row in answer["predictions"])
    np.testing.assert_allclose(answer["predictions"], want, atol=1e-5)
    status, answer = http(url, {"inputs": {"text": SENTENCES[:2]}})
    assert status == 200, answer
    np.testing.assert_allclose(answer["outputs"], want[:2], atol=1e-5)
    client = GrpcClient(server.grpc_address)
    try:
        got = outputs(client.predict("embedder", {"text": texts(SENTENCES)}))
    finally:
        client.close()
    assert sorted(got) == ["embeddings"] and got["embeddings"].dtype == np.float32
    np.testing.assert_allclose(got["embeddings"], want, atol=1e-5)

def test_an_empty_batch_gets_no_rows_in_both_formats(server):
    """As gRPC answers it (tests/serving/test_grpc_service.py): OK, every output with no rows,
    for the text signature and for packed ids (whose [] is read as [0, 1])."""
    url = _url(server, "/v1/models/sentiment:predict")
    status, one = http(url, {"inputs": {"text": ["a great movie"]}})
    assert status == 200 and len(one["outputs"]) > 1, one
    for body in ({"instances": []}, {"signature_name": "serving_ids", "instances": []}):
        assert http(url, body) == (200, {"predictions": []}), body
    empty_outputs = {"outputs": {name: [] for name in one["outputs"]}}
    ids = {"input_word_ids": [], "input_mask": [], "input_type_ids": []}
    for body in ({"inputs": {"text": []}}, {"inputs": []},
                 {"signature_name": "serving_ids", "inputs": ids}):
        assert http(url, body) == (200, empty_outputs), body
    for body in ({"instances": [[]]}, {"inputs": [[]]}):  # a batch of one empty list
        status, answer = http(url, body)
        assert status == 400 and "has shape [1, 0]" in answer["error"], answer


def test_status_and_metadata_in_tf_servings_json(server):
    status, answer = http(_url(server, "/v1/models/topics"))
    assert (status, answer) == (200, {"model_version_status": [
        {"version": "4", "state": "AVAILABLE", "status": {"error_code": "OK",
                                                          "error_message": ""}}]})
    assert http(_url(server, "/v1/models/topics/versions/4"))[1] == answer
    status, answer = http(_url(server, "/v1/models/sentiment/metadata"))
    assert status == 200, answer
    assert answer["model_spec"] == {"name": "sentiment", "version": "1", "signature_name": ""}
    signature_defs = answer["metadata"]["signature_def"]
    assert signature_defs["@type"] == "type.googleapis.com/tensorflow.serving.SignatureDefMap"
    text = signature_defs["signature_def"]["serving_default"]["inputs"]["text"]
    assert text["dtype"] == "DT_STRING" and text["tensor_shape"]["dim"][0]["size"] == "-1"


def test_keep_alive_connection_serves_many_requests(server):
    host, port = server.rest_url[len("http://"):].rsplit(":", 1)
    connection = http_client.HTTPConnection(host, int(port), timeout=TIMEOUT)
    try:
        for text in SENTENCES[:4]:
            connection.request("POST", "/v1/models/sentiment:predict",
                               body=json.dumps({"instances": [text]}),
                               headers={"Content-Type": "application/json"})
            response = connection.getresponse()
            assert response.status == 200 and len(json.loads(response.read())["predictions"]) == 1
    finally:
        connection.close()


def test_concurrent_requests_are_batched(server, serving_models):
    signature = server.manager.resolve("sentiment").signatures["serving_default"]
    before = signature.calls
    answers = run_concurrently(8, lambda i: http(_url(server, "/v1/models/sentiment:predict"),
                                                 {"instances": [SENTENCES[i]]}))
    assert all(status == 200 for status, _ in answers), answers
    _close([a["predictions"][0] for _, a in answers], serving_models["sentiment_v1"][1])
    assert signature.calls - before <= 8


BAD_REQUESTS = {  # name: (path, body (None: GET), HTTP status, message pattern)
    "malformed JSON": ("/v1/models/sentiment:predict", b'{"instances": ["a"', 400,
                       r"not valid JSON: Expecting .* at line 1 column \d+"),
    "body not UTF-8": ("/v1/models/sentiment:predict", b'{"instances": ["caf\xe9"]}', 400,
                       r"not valid UTF-8 \(byte 19: b'\\xe9'\)"),
    "lone surrogate": ("/v1/models/sentiment:predict", b'{"instances": ["\\udc80"]}', 400,
                       r"input 'text' .* at \[0\] in 'instances': a string that is not valid "
                       r"Unicode"),
    "bad base64": ("/v1/models/sentiment:predict", {"instances": [{"b64": "%%%"}]}, 400,
                   r"holds invalid base64"),
    "unknown model": ("/v1/models/nope:predict", {"instances": ["a"]}, 404,
                      r"Servable not found for request: Latest\(nope\)"),
    "unknown version": ("/v1/models/sentiment/versions/9:predict", {"instances": ["a"]}, 404,
                        r"Specific\(sentiment, 9\)"),
    "unknown model status": ("/v1/models/nope", None, 404, r"Latest\(nope\)"),
    "unknown version status": ("/v1/models/topics/versions/1", None, 404,
                               r"Could not find version 1 of model 'topics'"),
    "unknown signature": ("/v1/models/sentiment:predict",
                          {"signature_name": "nope", "instances": ["a"]}, 400,
                          r"Serving signature key \"nope\" not found"),
    "wrong dtype": ("/v1/models/sentiment:predict", {"instances": ["a", 3]}, 400,
                    r"input 'text' of signature 'serving_default' at \[1\] in 'instances': "
                    r"expects string values, got a JSON number"),
    "float for int": ("/v1/models/sentiment:predict",
                      {"signature_name": "serving_ids", "inputs": {
                          "input_word_ids": [[2, 3.5]], "input_mask": [[1, 1]],
                          "input_type_ids": [[0, 0]]}}, 400,
                      r"input 'input_word_ids' .* at \[0, 1\] .*expects int32 values \(whole "
                      r"numbers\), got a JSON number 3\.5"),
    "missing input": ("/v1/models/sentiment:predict",
                      {"signature_name": "serving_ids", "inputs": {"input_word_ids": [[2, 3]]}},
                      400, r"missing input\(s\) \['input_mask', 'input_type_ids'\]"),
    "extra input": ("/v1/models/sentiment:predict", {"inputs": {"text": ["a"], "x": [1]}}, 400,
                    r"unexpected input\(s\) \['x'\]"),
    "ragged list": ("/v1/models/sentiment:predict",
                    {"signature_name": "serving_ids", "instances": [
                        {"input_word_ids": [2, 3], "input_mask": [1, 1], "input_type_ids": [0, 0]},
                        {"input_word_ids": [2], "input_mask": [1], "input_type_ids": [0]}]},
                    400, r"a ragged list \(items of shapes \[\[1\], \[2\]\]\) is not a tensor"),
    "wrong rank": ("/v1/models/sentiment:predict", {"inputs": [["a", "b"]]}, 400,
                   r"has shape \[1, 2\]; the signature takes \[\?\]"),
    "oversized batch": ("/v1/models/sentiment:predict", {"instances": ["a"] * 17}, 400,
                        r"Task size 17 is larger than maximum input batch size 16"),
    "instances and inputs": ("/v1/models/sentiment:predict",
                             {"instances": ["a"], "inputs": ["a"]}, 400,
                             r"either 'instances' .* or 'inputs' .*, not both"),
    "neither": ("/v1/models/sentiment:predict", {"signature_name": ""}, 400,
                r"and has neither"),
    "mixed instances": ("/v1/models/sentiment:predict", {"instances": ["a", {"text": "b"}]},
                        400, r"instance 0 is not an object while instance 1 is"),
    "unknown key": ("/v1/models/sentiment:predict", {"instances": ["a"], "batch": 2}, 400,
                    r"unknown key\(s\) \['batch'\]"),
    "not an object": ("/v1/models/sentiment:predict", ["a"], 400,
                      r"must be a JSON object .* got a JSON list"),
    "classify": ("/v1/models/sentiment:classify", {"examples": []}, 501,
                 r":classify is not supported by this server; use :predict"),
    "malformed path": ("/v1/models/sentiment/versions/x:predict", {"instances": ["a"]}, 400,
                       r"Malformed request: POST /v1/models/sentiment/versions/x:predict"),
    "outside the API": ("/predict", {"instances": ["a"]}, 404, r"no such resource: POST"),
    # Hostile requests: each refused before it is computed, naming the limit and its flag.
    "JSON nested 1000 levels": ("/v1/models/sentiment:predict",
                                b'{"instances": ' + b"[" * 1000 + b"]" * 1000 + b"}", 400,
                                r"^the request body is JSON nested too deeply"),
    "lists nested 40 levels": ("/v1/models/sentiment:predict",
                               b'{"instances": ' + b"[" * 40 + b'"a"' + b"]" * 40 + b"}", 400,
                               r"^input 'text' in 'instances': lists nested more than 32 "
                               r"levels deep$"),
    "more rows than the limit": ("/v1/models/sentiment:predict", {"instances": ["a"] * 1025},
                                 400, r"^the request has a batch of 1025 rows; this server "
                                 r"takes at most 1024 per request \(--max_request_batch\)$"),
    "more columnar rows than the limit": ("/v1/models/sentiment:predict",
                                          {"inputs": {"text": ["a"] * 1025}}, 400,
                                          r"batch of 1025 rows; .*\(--max_request_batch\)$"),
    "a text over the length limit": ("/v1/models/sentiment:predict",
                                     {"instances": ["ok", "x" * 1001]}, 400,
                                     r"^input 'text' at \[1\] is a string of 1001 bytes; this "
                                     r"server takes at most 1000 bytes per string "
                                     r"\(--max_text_bytes\)$"),
    "a body over the byte limit": ("/v1/models/sentiment:predict",
                                   {"instances": ["x" * 900] * 80}, 413,
                                   r"^the request body has 7\d\d\d\d bytes; this server takes "
                                   r"at most 65536 bytes per request \(--max_request_bytes\)$"),
}


@pytest.mark.parametrize("case", sorted(BAD_REQUESTS))
def test_a_bad_request_gets_its_status_and_the_server_keeps_serving(server, case):
    import re

    path, body, want, pattern = BAD_REQUESTS[case]
    status, answer = http(_url(server, path), body)
    assert status == want, answer
    assert re.search(pattern, answer["error"]), answer["error"]
    status, answer = http(_url(server, "/v1/models/sentiment:predict"), {"instances": ["ok"]})
    assert status == 200 and len(answer["predictions"]) == 1


def test_output_strings_are_text_or_b64(server):
    from keras_bert.serving import rest_json

    array = np.array([b"caf\xc3\xa9", b"\xff\xfe"], dtype=object)
    assert rest_json.to_json(array, "words") == ["café", {"b64": "//4="}]
    assert rest_json.to_json(array[:1], "words_bytes") == [{"b64": "Y2Fmw6k="}]
    assert rest_json.to_json(np.float32([0.1, 1 / 3]), "p") == [0.1, 0.33333334]


# ---- HTTP framing, on raw sockets ---------------------------------------------------------
def _exchange(server, data, timeout=TIMEOUT):
    """Sends `data` on a new connection; returns everything the server sent until it closed
    the connection (a keep-alive connection is closed by the client after `timeout`)."""
    import socket

    host, port = server.rest_url[len("http://"):].rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=timeout) as connection:
        connection.sendall(data)
        received = b""
        try:
            while chunk := connection.recv(65536):
                received += chunk
        except socket.timeout:
            pass
    return received


def _post(body, *headers):
    head = [b"POST /v1/models/sentiment:predict HTTP/1.1", b"Host: test", *headers]
    return b"\r\n".join(head) + b"\r\n\r\n" + body


SMUGGLED = b"POST /v1/models/sentiment:predict HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"
FRAMING = {  # name: (request bytes, HTTP status, message pattern)
    "conflicting Content-Lengths": (_post(b'{"instances": ["a"]}', b"Content-Length: 20",
                                          b"Content-Length: 5"), 400,
                                    r"conflicting Content-Length"),
    "Transfer-Encoding: identity, chunked": (
        _post(b"5\r\nhello\r\n0\r\n\r\n", b"Transfer-Encoding: identity, chunked"), 400,
        r"Only Transfer-Encoding: chunked"),
    "Content-Length and Transfer-Encoding": (
        _post(b"2\r\n{}\r\n0\r\n\r\n" + SMUGGLED, b"Content-Length: 6",
              b"Transfer-Encoding: chunked"), 400,
        r"may not have both Content-Length and Transfer-Encoding"),
    "chunk size zz": (_post(b"zz\r\n" + SMUGGLED, b"Transfer-Encoding: chunked"), 400,
                      r"illegal chunk header"),
    "chunk size -5": (_post(b"-5\r\n" + SMUGGLED, b"Transfer-Encoding: chunked"), 400,
                      r"illegal chunk header"),
    "Content-Length -1": (_post(b'{"instances": ["a"]}', b"Content-Length: -1"), 400,
                          r"bad Content-Length"),
    "Content-Length 10**15": (_post(b'{"instances": ["a"]}', b"Content-Length: " +
                                    str(10**15).encode()), 413,
                              r"the request body has 1000000000000000 bytes; .* at most 65536 "
                              r"bytes per request \(--max_request_bytes\)"),
    "Content-Length 10**6 on 21 bytes": (_post(b'{"instances": ["a"]}', b"Content-Length: "
                                               b"1000000"), 413,
                                         r"has 1000000 bytes; .*\(--max_request_bytes\)"),
    "a request line of 100 KB": (b"GET /" + b"x" * 100_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n",
                                 431, r"the request line and headers have 10\d{4} bytes; this "
                                 r"server takes at most 16384|malformed HTTP request"),
}


@pytest.mark.parametrize("case", sorted(FRAMING))
def test_bad_framing_is_answered_once_and_the_connection_closed(server, case):
    """Whatever follows a request whose framing is wrong (SMUGGLED) is never run as a second
    request: one answer, then the connection closes."""
    import re

    data, want, pattern = FRAMING[case]
    received = _exchange(server, data)
    assert received.count(b"HTTP/1.1 ") == 1, received
    head, _, body = received.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 %d " % want), received
    assert b"connection: close" in head.lower(), head
    assert re.search(pattern, json.loads(body)["error"]), body
    assert http(_url(server, "/v1/models/sentiment:predict"), {"instances": ["ok"]})[0] == 200


def test_a_chunked_body_and_pipelined_requests_are_answered(server):
    body = json.dumps({"instances": ["a great movie"]}).encode()
    chunked = _post(b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body), b"Transfer-Encoding: chunked")
    plain = _post(body, b"Content-Length: %d" % len(body), b"Connection: close")
    received = _exchange(server, chunked + plain)  # two requests in one write
    answers = received.split(b"HTTP/1.1 ")[1:]
    assert len(answers) == 2 and all(a.startswith(b"200 OK") for a in answers), received


def test_a_stalled_request_is_answered_408_quickly(server):
    """A body shorter than its declared length is not waited for 300 s: after `read_timeout`
    seconds without a byte the request is answered 408 and closed."""
    import threading

    from keras_bert.serving.rest import RestServer

    quick = RestServer(server.manager, port=0, read_timeout=0.5)
    threading.Thread(target=quick.serve_forever, daemon=True).start()
    try:
        class Where:
            rest_url = f"http://127.0.0.1:{quick.port}"

        received = _exchange(Where, _post(b'{"instances": ["a"]}', b"Content-Length: 60000"))
        assert received.startswith(b"HTTP/1.1 408 "), received
        assert b"the request sent nothing for 0.5 s" in received
    finally:
        quick.shutdown()
        quick.server_close()


@pytest.mark.parametrize("argument,value,message", [
    ("read_timeout", 0, "read_timeout must be a positive number of seconds, got 0"),
    ("read_timeout", None, "read_timeout must be a positive number of seconds, got None"),
    ("idle_timeout", -1, "idle_timeout must be a positive number of seconds, got -1"),
    ("idle_timeout", float("nan"), "idle_timeout must be a positive number of seconds, got nan"),
    ("timeout", -0.5, "timeout must be a positive number of seconds or None (no limit), got "
                      "-0.5"),
    ("timeout", "30", "timeout must be a positive number of seconds or None (no limit), got "
                      "'30'"),
    ("num_threads", 2.5, "num_threads must be a positive whole number of requests or None (4 "
                         "per CPU), got 2.5"),
    ("num_threads", -1, "num_threads must be a positive whole number of requests or None (4 "
                        "per CPU), got -1"),
])
def test_a_bad_timeout_or_thread_count_is_refused_before_listening(argument, value, message):
    """A zero read timeout would never wait for a byte, a negative request timeout refuse
    every request: each is a ValueError naming the argument, before a port is taken."""
    import re

    from keras_bert.serving.rest import RestServer

    with pytest.raises(ValueError, match=re.escape(message)):
        RestServer(None, port=0, **{argument: value})


def test_24_simultaneous_connections_are_all_served(server):
    """The listen backlog takes a burst: 24 clients connect at the same moment (before the
    server accepts any) and each gets its answer, none a reset."""
    import socket

    host, port = server.rest_url[len("http://"):].rsplit(":", 1)
    body = json.dumps({"instances": ["a great movie"]}).encode()
    request = _post(body, b"Content-Length: %d" % len(body), b"Connection: close")

    def one(_):
        with socket.create_connection((host, int(port)), timeout=TIMEOUT) as connection:
            connection.sendall(request)
            received = b""
            while chunk := connection.recv(65536):
                received += chunk
            return received

    answers = run_concurrently(24, one)
    assert all(isinstance(a, bytes) and a.startswith(b"HTTP/1.1 200 ") for a in answers), [
        a if not isinstance(a, bytes) else a[:40] for a in answers]


def test_a_connection_reads_as_gone_once_the_client_closed_it():
    """What drops a predict request whose client left (rest._open)."""
    import socket

    from keras_bert.serving.rest import _open

    ours, theirs = socket.socketpair()
    assert _open(ours)
    theirs.sendall(b"GET /next HTTP/1.1\r\n")  # a pipelined request: still there
    assert _open(ours)
    theirs.close()
    ours.recv(100)
    assert not _open(ours)
    ours.close()
