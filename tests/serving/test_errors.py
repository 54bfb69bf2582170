"""keras_bert/serving/errors.py: a request error carries a gRPC status code and answers with
the HTTP status TF Serving's REST API gives it."""

import pytest

from keras_bert.serving.errors import (
    HTTP_STATUS,
    ServerConfigError,
    ServingError,
    invalid,
    not_found,
)


def test_codes_map_to_tf_serving_s_http_statuses():
    # tensorflow_serving/model_servers/http_server.cc, ToHTTPStatusCode
    assert {code: HTTP_STATUS[code] for code in ("OK", "INVALID_ARGUMENT", "NOT_FOUND",
                                                 "UNAVAILABLE", "RESOURCE_EXHAUSTED",
                                                 "FAILED_PRECONDITION", "UNIMPLEMENTED",
                                                 "INTERNAL", "DEADLINE_EXCEEDED")} == {
        "OK": 200, "INVALID_ARGUMENT": 400, "NOT_FOUND": 404, "UNAVAILABLE": 503,
        "RESOURCE_EXHAUSTED": 429, "FAILED_PRECONDITION": 400, "UNIMPLEMENTED": 501,
        "INTERNAL": 500, "DEADLINE_EXCEEDED": 504}
    assert len(HTTP_STATUS) == 17  # every gRPC status code


def test_errors_carry_their_code_and_message():
    error = invalid("input 'x' is wrong")
    assert (error.code, error.message, error.http_status, str(error)) == (
        "INVALID_ARGUMENT", "input 'x' is wrong", 400, "input 'x' is wrong")
    assert (not_found("no model").code, not_found("no model").http_status) == ("NOT_FOUND", 404)
    with pytest.raises(ValueError, match="unknown status code 'BAD'"):
        ServingError("BAD", "x")
    assert issubclass(ServerConfigError, ValueError)
