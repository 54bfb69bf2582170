"""Errors of the local server: a request error carries a gRPC status code name, which the REST
front end turns into the HTTP status TF Serving's REST API gives for it."""

# gRPC status code names -> the HTTP status TF Serving's REST API answers with
# (tensorflow_serving/model_servers/http_server.cc, ToHTTPStatusCode).
HTTP_STATUS = {
    "OK": 200,
    "CANCELLED": 499,
    "INVALID_ARGUMENT": 400,
    "DEADLINE_EXCEEDED": 504,
    "NOT_FOUND": 404,
    "ALREADY_EXISTS": 409,
    "PERMISSION_DENIED": 403,
    "RESOURCE_EXHAUSTED": 429,
    "FAILED_PRECONDITION": 400,
    "ABORTED": 409,
    "OUT_OF_RANGE": 400,
    "UNIMPLEMENTED": 501,
    "INTERNAL": 500,
    "UNAVAILABLE": 503,
    "UNKNOWN": 500,
    "DATA_LOSS": 500,
    "UNAUTHENTICATED": 401,
}


class ServingError(Exception):
    """A request the server refuses or cannot answer: `code` is a gRPC status code name
    (``"INVALID_ARGUMENT"``, ``"NOT_FOUND"``, ...), the message says what was wrong.

    Example:

    >>> error = ServingError("NOT_FOUND", "Servable not found for request: Latest(nope)")
    >>> error.code, error.http_status
    ('NOT_FOUND', 404)
    """

    def __init__(self, code, message):
        if code not in HTTP_STATUS:
            raise ValueError(f"unknown status code {code!r}")
        super().__init__(message)
        self.code = code
        self.message = message

    @property
    def http_status(self):
        return HTTP_STATUS[self.code]


class ServerConfigError(ValueError):
    """The server cannot start as configured (a model base path, a config file, a port): the
    message names the flag, file (and line) or path at fault.

    Example:

    >>> from keras_bert.serving import read_model_config_file
    >>> read_model_config_file("/no/such/models.config")
    Traceback (most recent call last):
    ...
    keras_bert.serving.errors.ServerConfigError: --model_config_file: ... does not exist
    """


def invalid(message):
    return ServingError("INVALID_ARGUMENT", message)


def not_found(message):
    return ServingError("NOT_FOUND", message)
