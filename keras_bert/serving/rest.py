"""TF Serving's REST API over a `ModelManager`, on the standard library's ThreadingHTTPServer.

    POST /v1/models/<name>[/versions/<v> | /labels/<label>]:predict   (rest_json.py's formats)
    GET  /v1/models/<name>[/versions/<v> | /labels/<label>]           (model version status)
    GET  /v1/models/<name>[/versions/<v> | /labels/<label>]/metadata  (signature defs)

Answers are JSON; errors are ``{"error": "<message>"}`` with the HTTP status TF Serving gives
the error's gRPC code (400 bad request, 404 unknown model or version, 503 not available...).
``:classify`` and ``:regress`` answer 501. Connections are HTTP/1.1 keep-alive.
"""

import http.server
import json
import logging
import re
import socket

from keras_bert.serving import grpc_service, rest_json
from keras_bert.serving.errors import ServerConfigError, ServingError, invalid

log = logging.getLogger("keras_bert.serving")

_MODEL = r"/v1/models/(?P<name>[^/:]+)(?:/versions/(?P<version>\d+)|/labels/(?P<label>[^/:]+))?"
PREDICT_PATH = re.compile(_MODEL + r":(?P<method>classify|regress|predict)", re.IGNORECASE)
STATUS_PATH = re.compile(_MODEL + r"(?P<metadata>/metadata)?", re.IGNORECASE)


def _target(match):
    version = match.group("version")
    return match.group("name"), int(version) if version else None, match.group("label")


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "keras_bert-model-server"
    # Headers and body leave in one write (flushed after each request) and without Nagle's
    # delay: otherwise a keep-alive client waits ~40 ms per request for a delayed ACK.
    wbufsize = -1
    timeout = 300  # seconds a connection may sit idle or stall mid-request

    def setup(self):
        super().setup()
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format, *args):  # noqa: A002  (the base class's signature)
        log.debug("%s - %s", self.address_string(), format % args)

    def do_GET(self):  # noqa: N802  (http.server's names)
        self._answer(self._get)

    def do_POST(self):  # noqa: N802
        self._answer(self._post)

    def _answer(self, method):
        try:
            status, body = 200, method()
        except ServingError as error:
            status, body = error.http_status, {"error": error.message}
        except Exception as error:  # a bug, not the request's fault: say so, keep serving
            log.exception("REST request failed")
            status, body = 500, {"error": f"{type(error).__name__}: {error}"}
        data = (json.dumps(body) + "\n").encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _malformed(self):
        return invalid(f"Malformed request: {self.command} {self.path}")

    def _path(self):
        return self.path.split("?", 1)[0]

    def _get(self):
        self._body()  # a GET with a body: read it, so the connection stays in step
        match = STATUS_PATH.fullmatch(self._path())
        if match is None:
            raise self._not_here()
        from google.protobuf import json_format

        name, version, label = _target(match)
        manager = self.server.manager
        if match.group("metadata"):
            response = grpc_service.metadata_response(manager, name, version, label)
        else:
            response = grpc_service.status_response(manager, name, version, label)
        return json_format.MessageToDict(response, preserving_proto_field_name=True,
                                         always_print_fields_with_no_presence=True)

    def _post(self):
        body = self._body()
        match = PREDICT_PATH.fullmatch(self._path())
        if match is None:
            raise self._not_here()
        method = match.group("method").lower()
        if method != "predict":
            raise ServingError("UNIMPLEMENTED", f":{method} is not supported by this server; "
                               "use :predict")
        name, version, label = _target(match)
        request = rest_json.parse_request(body)
        with self.server.manager.servable(name, version, label) as servable:
            signature = servable.signature(request.get("signature_name", ""))
            inputs, form = rest_json.request_inputs(request, signature)
            outputs = servable.predict(signature, inputs, timeout=self.server.request_timeout)
        return rest_json.response_body(outputs, form)

    def _not_here(self):
        if self._path().lower().startswith("/v1/"):
            return self._malformed()
        return ServingError("NOT_FOUND", f"no such resource: {self.command} {self.path} (the "
                            "API lives under /v1/models/<name>)")

    def _body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            return self._chunked()
        length = self.headers.get("Content-Length")
        if length is None:
            return b""
        try:
            length = int(length)
        except ValueError:
            self.close_connection = True
            raise invalid(f"bad Content-Length header {length!r}") from None
        return self.rfile.read(length)

    def _chunked(self):
        chunks = []
        while True:
            size = int(self.rfile.readline().split(b";", 1)[0].strip() or b"0", 16)
            if size == 0:
                while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                return b"".join(chunks)
            chunks.append(self.rfile.read(size))
            self.rfile.readline()


class RestServer(http.server.ThreadingHTTPServer):
    """An HTTP server answering TF Serving's REST API for `manager`, on (`host`, `port`);
    port 0 picks a free one. `timeout`: seconds a predict request may wait for its batch
    (TF Serving's ``--rest_api_timeout_in_ms``).

    Example (`keras_bert.serving.ModelServer` runs one beside the gRPC server):

    >>> import tempfile
    >>> import tensorflow as tf
    >>> class Doubler(tf.Module):
    ...     @tf.function(input_signature=[tf.TensorSpec([None], tf.float32, name="x")])
    ...     def double(self, x):
    ...         return {"y": 2 * x}
    >>> doubler = Doubler()
    >>> from keras_bert.serving import ModelConfig, ModelManager
    >>> base = tempfile.mkdtemp()
    >>> tf.saved_model.save(doubler, f"{base}/1", signatures={"serving_default": doubler.double})
    >>> manager = ModelManager([ModelConfig("doubler", base)], poll_wait_seconds=0)
    >>> manager.start()
    >>> import json, threading, urllib.request
    >>> server = RestServer(manager, port=0)
    >>> threading.Thread(target=server.serve_forever, daemon=True).start()
    >>> request = urllib.request.Request(
    ...     f"http://127.0.0.1:{server.port}/v1/models/doubler:predict",
    ...     data=json.dumps({"instances": [1.0, 2.5]}).encode())
    >>> json.load(urllib.request.urlopen(request, timeout=60))
    {'predictions': [2.0, 5.0]}
    >>> server.shutdown(); server.server_close(); manager.stop()
    """

    daemon_threads = True
    allow_reuse_address = True  # TIME_WAIT only: a port in use still fails

    def __init__(self, manager, host="127.0.0.1", port=8501, timeout=None):
        self.manager = manager
        self.request_timeout = timeout
        self.address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
        try:
            super().__init__((host, port), _Handler)
        except OSError as error:
            raise ServerConfigError(f"--rest_api_port={port}: cannot listen for HTTP on "
                                    f"{grpc_service.address(host, port)}: {error.strerror}"
                                    ) from None

    @property
    def port(self):
        return self.server_address[1]
