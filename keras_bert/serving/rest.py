"""TF Serving's REST API over a `ModelManager`, its HTTP/1.1 framing parsed by h11.

    POST /v1/models/<name>[/versions/<v> | /labels/<label>]:predict   (rest_json.py's formats)
    GET  /v1/models/<name>[/versions/<v> | /labels/<label>]           (model version status)
    GET  /v1/models/<name>[/versions/<v> | /labels/<label>]/metadata  (signature defs)

Answers are JSON; errors are ``{"error": "<message>"}`` with the HTTP status TF Serving gives
the error's gRPC code (400 bad request, 404 unknown model or version, 429 busy, 503 not
available...). ``:classify`` and ``:regress`` answer 501. Connections are HTTP/1.1 keep-alive.

The framing is h11's (the HTTP/1.1 state machine under httpcore and uvicorn), not hand-written:
Content-Length and chunked bodies are parsed strictly, and a request whose framing is wrong
(conflicting Content-Lengths, both Content-Length and Transfer-Encoding, a transfer coding
other than chunked, a bad chunk size) is answered 400, a request line and headers over
16 KiB 431, and its connection closed, so what follows it can never be read as a second
request. A body over ``--max_request_bytes`` is answered 413 before it is read (a declared
Content-Length) or as soon as it passes the limit (chunked); a request that stalls (no byte
for `read_timeout` seconds once it has begun) is answered 408 and closed; an idle keep-alive
connection is closed after `idle_timeout` seconds. Each connection has a thread; at most
``--rest_api_num_threads`` requests are processed at once (the others wait for a turn within
their ``--rest_api_timeout_in_ms``). The listen backlog takes bursts of connections
(`BACKLOG`). A predict request whose client closes its connection is dropped before it runs.
"""

import http
import json
import logging
import re
import select
import socket
import threading
import time

from keras_bert.serving import grpc_service, rest_json
from keras_bert.serving.errors import ServerConfigError, ServingError, invalid

log = logging.getLogger("keras_bert.serving")

_MODEL = r"/v1/models/(?P<name>[^/:]+)(?:/versions/(?P<version>\d+)|/labels/(?P<label>[^/:]+))?"
PREDICT_PATH = re.compile(_MODEL + r":(?P<method>classify|regress|predict)", re.IGNORECASE)
STATUS_PATH = re.compile(_MODEL + r"(?P<metadata>/metadata)?", re.IGNORECASE)
SERVER_NAME = b"keras_bert-model-server"
BACKLOG = 1024  # connections the kernel queues before they are accepted
MAX_HEAD_BYTES = 16 * 1024  # request line and headers
MAX_CONNECTIONS = 1024


def positive_number(name, value, unit, none_means=None, whole=False):
    """``value`` when it is a positive finite number (a bool is not one; with ``whole``, a
    positive int), or when it is None and ``none_means`` says what None does; else a
    ValueError naming ``name``, raised before anything is made (a negative wait would refuse
    every request, a zero one never wait)."""
    if value is None and none_means:
        return value
    kinds = int if whole else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds) \
            or not 0 < value < float("inf"):
        kind = "positive whole" if whole else "positive"
        also = f" or None ({none_means})" if none_means else ""
        raise ValueError(f"{name} must be a {kind} number of {unit}{also}, got {value!r}")
    return value


def _target(match):
    version = match.group("version")
    return match.group("name"), int(version) if version else None, match.group("label")


class _Timeout(Exception):
    pass


class _Closed(Exception):
    pass


class RestServer:
    """An HTTP server answering TF Serving's REST API for `manager`, on (`host`, `port`);
    port 0 picks a free one (see the module docstring).

    Args:
      manager: the `ModelManager`.
      host, port: where it listens.
      timeout: seconds a request may wait for its answer (TF Serving's
        ``--rest_api_timeout_in_ms``), or None.
      num_threads: requests processed at once (TF Serving's ``--rest_api_num_threads``;
        default 4 per CPU, as TF Serving).
      read_timeout: seconds a request that has begun may send nothing before it is answered
        408 and closed.
      idle_timeout: seconds a keep-alive connection may wait for its next request.

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

    def __init__(self, manager, host="127.0.0.1", port=8501, timeout=None, num_threads=None,
                 read_timeout=5.0, idle_timeout=60.0):
        import os

        self.manager = manager
        self.request_timeout = positive_number("timeout", timeout, "seconds", "no limit")
        self.read_timeout = positive_number("read_timeout", read_timeout, "seconds")
        self.idle_timeout = positive_number("idle_timeout", idle_timeout, "seconds")
        positive_number("num_threads", num_threads, "requests", "4 per CPU", whole=True)
        self.num_threads = num_threads or 4 * (os.cpu_count() or 1)
        self._turns = threading.BoundedSemaphore(self.num_threads)
        self._connections = set()
        self._lock = threading.Lock()
        self._shutdown = threading.Event()
        self._stopped = threading.Event()
        self._stopped.set()
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.socket = socket.socket(family, socket.SOCK_STREAM)
        try:
            self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # TIME_WAIT only
            self.socket.bind((host, port))
            self.socket.listen(BACKLOG)
        except OSError as error:
            self.socket.close()
            raise ServerConfigError(f"--rest_api_port={port}: cannot listen for HTTP on "
                                    f"{grpc_service.address(host, port)}: {error.strerror}"
                                    ) from None
        self.server_address = self.socket.getsockname()

    @property
    def port(self):
        return self.server_address[1]

    def serve_forever(self, poll_interval=0.2):
        """Accepts connections until `shutdown`, each served by a thread of its own."""
        self._stopped.clear()
        try:
            while not self._shutdown.is_set():
                ready, _, _ = select.select([self.socket], [], [], poll_interval)
                if not ready:
                    continue
                try:
                    connection, _ = self.socket.accept()
                except OSError:
                    continue
                with self._lock:
                    crowded = len(self._connections) >= MAX_CONNECTIONS
                    if not crowded:
                        self._connections.add(connection)
                if crowded:
                    _refuse(connection)
                    continue
                threading.Thread(target=self._serve_connection, args=(connection,),
                                 daemon=True, name="rest-connection").start()
        finally:
            self._stopped.set()

    def shutdown(self):
        """Stops `serve_forever` (waits for it) and closes the open connections."""
        self._shutdown.set()
        self._stopped.wait(10)
        with self._lock:
            connections = list(self._connections)
        for connection in connections:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def server_close(self):
        self.socket.close()

    # ---- one connection ------------------------------------------------------------------
    def _serve_connection(self, sock):
        import h11

        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        connection = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD_BYTES)
        try:
            while not self._shutdown.is_set():
                if not self._exchange(sock, connection):
                    break
                if connection.our_state is h11.MUST_CLOSE:
                    break
                connection.start_next_cycle()
        except (OSError, _Closed):
            pass
        except Exception:  # a bug: said, and the connection closed
            log.exception("REST connection failed")
        finally:
            _close(sock)
            with self._lock:
                self._connections.discard(sock)

    def _exchange(self, sock, connection):
        """Reads one request and answers it; False when the connection is to be closed."""
        import h11

        try:
            request = self._next(sock, connection, first=True)
            if request is None:
                return False
            if not isinstance(request, h11.Request):
                return False
            head = len(request.target) + sum(len(n) + len(v) for n, v in request.headers)
            if head > MAX_HEAD_BYTES:
                return self._fail(sock, connection, 431, f"the request line and headers have "
                                  f"{head} bytes; this server takes at most {MAX_HEAD_BYTES}")
            limits = self.manager.limits
            headers = {}
            for name, value in request.headers:
                headers.setdefault(name, []).append(value)
            if b"content-length" in headers and b"transfer-encoding" in headers:
                return self._fail(sock, connection, 400, "a request may not have both "
                                  "Content-Length and Transfer-Encoding")
            declared = int(headers.get(b"content-length", [b"0"])[0])
            too_big = limits.body_message(declared)
            if too_big:
                return self._fail(sock, connection, 413, too_big)
            if connection.they_are_waiting_for_100_continue:
                self._send(sock, connection, h11.InformationalResponse(status_code=100,
                                                                       headers=[]))
            body = bytearray()
            while True:
                event = self._next(sock, connection)
                if isinstance(event, h11.Data):
                    body += event.data
                    too_big = limits.body_message(len(body))
                    if too_big:
                        return self._fail(sock, connection, 413, too_big)
                elif isinstance(event, h11.EndOfMessage):
                    break
                else:  # ConnectionClosed mid-body is a RemoteProtocolError; anything else
                    return False
        except h11.RemoteProtocolError as error:
            hint = error.error_status_hint
            return self._fail(sock, connection, hint if hint in (413, 414, 431) else 400,
                              f"malformed HTTP request: {error}")
        except _Timeout:
            if connection.their_state is h11.IDLE and not connection.trailing_data[0]:
                return False  # an idle keep-alive connection: closed quietly
            return self._fail(sock, connection, 408, f"the request sent nothing for "
                              f"{self.read_timeout:g} s; closing the connection")
        method = request.method.decode("ascii", "replace")
        target = request.target.decode("latin-1")
        status, answer = self._answer(method, target, bytes(body), lambda: _open(sock))
        self._respond(sock, connection, status, answer)
        return True

    def _next(self, sock, connection, first=False):
        """The next h11 event, reading as needed; None when the peer closed between
        requests. Raises `_Timeout` when nothing came in time."""
        import h11

        while True:
            event = connection.next_event()
            if event is h11.NEED_DATA:
                idle = first and connection.their_state is h11.IDLE \
                    and not connection.trailing_data[0]
                sock.settimeout(self.idle_timeout if idle else self.read_timeout)
                try:
                    data = sock.recv(65536)
                except socket.timeout:
                    raise _Timeout() from None
                connection.receive_data(data)
                continue
            if isinstance(event, h11.ConnectionClosed):
                return None
            return event

    def _answer(self, method, target, body, alive):
        """(HTTP status, JSON-able answer) of a request."""
        path = target.split("?", 1)[0]
        deadline = None if self.request_timeout is None \
            else time.monotonic() + self.request_timeout
        if not self._turns.acquire(timeout=self.request_timeout):
            return 503, {"error": f"no REST thread became free within "
                                  f"{self.request_timeout:g} s (--rest_api_num_threads="
                                  f"{self.num_threads})"}
        try:
            if method == "GET":
                return 200, self._get(method, path)
            if method == "POST":
                left = None if deadline is None else max(0.0, deadline - time.monotonic())
                return 200, self._post(path, body, left, alive)
            return 501, {"error": f"method {method} is not supported: the API takes GET and "
                                  "POST"}
        except ServingError as error:
            return error.http_status, {"error": error.message}
        except Exception as error:  # a bug, not the request's fault: say so, keep serving
            log.exception("REST request failed")
            return 500, {"error": f"{type(error).__name__}: {error}"}
        finally:
            self._turns.release()

    def _get(self, method, path):
        match = STATUS_PATH.fullmatch(path)
        if match is None:
            raise _not_here(method, path)
        from google.protobuf import json_format

        name, version, label = _target(match)
        if match.group("metadata"):
            response = grpc_service.metadata_response(self.manager, name, version, label)
        else:
            response = grpc_service.status_response(self.manager, name, version, label)
        return json_format.MessageToDict(response, preserving_proto_field_name=True,
                                         always_print_fields_with_no_presence=True)

    def _post(self, path, body, timeout, alive):
        match = PREDICT_PATH.fullmatch(path)
        if match is None:
            raise _not_here("POST", path)
        method = match.group("method").lower()
        if method != "predict":
            raise ServingError("UNIMPLEMENTED", f":{method} is not supported by this server; "
                               "use :predict")
        name, version, label = _target(match)
        request = rest_json.parse_request(body)
        with self.manager.servable(name, version, label) as servable:
            signature = servable.signature(request.get("signature_name", ""))
            inputs, form = rest_json.request_inputs(request, signature, self.manager.limits)
            outputs = servable.predict(signature, inputs, timeout=timeout, alive=alive)
        return rest_json.response_body(outputs, form)

    # ---- writing -------------------------------------------------------------------------
    def _respond(self, sock, connection, status, answer, close=False):
        import h11

        data = (json.dumps(answer) + "\n").encode("utf-8")
        headers = [(b"Content-Type", b"application/json"),
                   (b"Content-Length", str(len(data)).encode()), (b"Server", SERVER_NAME)]
        if close:
            headers.append((b"Connection", b"close"))
        try:
            reason = http.HTTPStatus(status).phrase.encode()
        except ValueError:
            reason = b""
        self._send(sock, connection, h11.Response(status_code=status, headers=headers,
                                                  reason=reason))
        self._send(sock, connection, h11.Data(data=data))
        self._send(sock, connection, h11.EndOfMessage())

    def _fail(self, sock, connection, status, message):
        """Answers a request that cannot be read on (framing, size, time) and closes."""
        import h11

        if connection.our_state in (h11.IDLE, h11.SEND_RESPONSE):
            try:
                self._respond(sock, connection, status, {"error": message}, close=True)
            except (h11.LocalProtocolError, OSError):
                pass
        return False

    @staticmethod
    def _send(sock, connection, event):
        data = connection.send(event)
        if data:
            sock.sendall(data)


def _open(sock):
    """False once the client has closed its end (it reads as end of file)."""
    try:
        readable, _, _ = select.select([sock], [], [], 0)
        if not readable:
            return True
        return sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) != b""
    except BlockingIOError:
        return True
    except (OSError, ValueError):
        return False


def _close(sock, seconds=2.0, most=2**20):
    """Closes a connection the way that lets the client read the last answer: the writing
    side first, then what the client still sends is read and dropped (a while, a little),
    so that closing does not reset the connection under an answer not yet read."""
    try:
        sock.shutdown(socket.SHUT_WR)
        deadline = time.monotonic() + seconds
        sock.settimeout(0.25)
        while most > 0 and time.monotonic() < deadline:
            try:
                data = sock.recv(65536)
            except socket.timeout:
                continue
            if not data:
                break
            most -= len(data)
    except OSError:
        pass
    try:
        sock.close()
    except OSError:
        pass


def _refuse(sock):
    body = b'{"error": "too many open connections; try again later"}\n'
    try:
        sock.sendall(b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                     b"Connection: close\r\nContent-Length: " + str(len(body)).encode()
                     + b"\r\n\r\n" + body)
    except OSError:
        pass
    _close(sock, seconds=0.5)


def _not_here(method, path):
    path = path if len(path) <= 200 else path[:200] + "..."
    if path.lower().startswith("/v1/"):
        return invalid(f"Malformed request: {method} {path}")
    return ServingError("NOT_FOUND", f"no such resource: {method} {path} (the API lives under "
                        "/v1/models/<name>)")
