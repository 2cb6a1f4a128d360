"""Raw requests on a real server: whatever aiohttp answers by itself (an unknown method,
a request line or header over the limit, malformed headers, unknown paths, methods a
route does not take) comes back in the JSON error shape with a request id, and never
echoes the request's bytes into the answer or the log."""

from __future__ import annotations

import http.client
import json
import logging
import socket
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import pytest
import structlog

from tests.api.http.conftest import KEYS, Api, ApiFactory

pytestmark = pytest.mark.integration


@dataclass
class Answer:
    status: int
    headers: http.client.HTTPMessage
    text: str

    def error(self) -> dict[str, Any]:
        assert self.headers["Content-Type"].startswith("application/json"), self.text
        found: dict[str, Any] = json.loads(self.text)["error"]
        assert found["code"] and found["message"] and found["request_id"]
        assert self.headers["X-Request-Id"] == found["request_id"]
        return found


def send(url: str, data: bytes) -> Answer:
    """``data`` as sent, byte for byte, on a new connection; the answer parsed."""
    parts = urlsplit(url)
    with socket.create_connection((parts.hostname, parts.port), timeout=30) as sock:
        sock.sendall(data)
        response = http.client.HTTPResponse(sock)
        response.begin()
        return Answer(response.status, response.headers, response.read().decode())


@pytest.fixture(scope="module")
def api(make_api: ApiFactory) -> Api:
    return make_api(log_level="INFO")


def test_unknown_method_is_501_json_listing_the_methods(api: Api) -> None:
    """A method HTTP does not define is a 501 (RFC 9110 15.6.2) with Allow; a method
    the route does not take is a 405 whose Allow lists the route's methods."""
    unknown = send(api.url, b"FOO /v1/jobs HTTP/1.1\r\nHost: x\r\n\r\n")
    assert unknown.status == 501 and unknown.error()["code"] == "method_not_implemented"
    assert unknown.headers["Allow"] == "DELETE, GET, POST"
    wrong = send(api.url, b"PATCH /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
    assert wrong.status == 405 and wrong.error()["code"] == "method_not_allowed"
    assert wrong.headers["Allow"] == "GET"


def test_url_over_the_limit_is_414_and_a_long_header_431(api: Api) -> None:
    """An 8 KB request target is a 414, an 8 KB header value a 431, both JSON."""
    for target in (b"/v1/jobs?index=" + b"a" * 8200, b"/" + b"b" * 9000):
        answer = send(api.url, b"GET " + target + b" HTTP/1.1\r\nHost: x\r\n\r\n")
        assert answer.status == 414 and answer.error()["code"] == "uri_too_long"
        assert "8,190 bytes" in answer.error()["message"] and "aaaa" not in answer.text
    header = send(api.url, b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"c" * 9000 +
                  b"\r\n\r\n")
    assert header.status == 431 and header.error()["code"] == "header_too_large"


@pytest.mark.parametrize("request_bytes", [
    b"GET /healthz HTTP/1.1\r\nHost: x\r\nNot A Header\r\n\r\n",
    b"GET /healthz HTTP/9.9\r\nHost: x\r\n\r\n",
    b"POST /v1/indexes HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n",
    b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + b"".join(b"X-%d: 1\r\n" % i for i in range(200))
    + b"\r\n",
    b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03\r\n\r\n",
], ids=["bad-header", "bad-version", "bad-content-length", "too-many-headers", "tls"])
def test_unreadable_requests_are_400_json(api: Api, request_bytes: bytes) -> None:
    """A request aiohttp cannot parse is a 400 ``invalid_request`` saying why, as JSON."""
    answer = send(api.url, request_bytes)
    assert answer.status == 400 and answer.error()["code"] == "invalid_request"


def test_unknown_path_is_404_json(api: Api) -> None:
    """A path no route matches is a 404 in the JSON shape pointing at the spec."""
    answer = send(api.url, b"GET /v2/nothing HTTP/1.1\r\nHost: x\r\n\r\n")
    assert answer.status == 404 and answer.error()["code"] == "not_found"
    assert "/v1/openapi.json" in answer.error()["message"]


def test_unreadable_request_bytes_reach_neither_answer_nor_log(
        api: Api, caplog: pytest.LogCaptureFixture) -> None:
    """A malformed Authorization line holding a key is refused without quoting it: not
    in the answer, not in hopindex's log, not in aiohttp's."""
    secret = KEYS["write"]
    caplog.set_level(logging.DEBUG)
    with structlog.testing.capture_logs() as entries:
        answer = send(api.url, b"GET /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization Bearer "
                      + secret.encode() + b"\r\n\r\n")
    assert answer.status == 400 and answer.error()["code"] == "invalid_request"
    assert secret not in answer.text
    assert secret not in repr(entries) and secret not in caplog.text
    assert [e["status"] for e in entries if e["event"] == "http_request_unreadable"] == [400]
    with structlog.testing.capture_logs() as entries:
        answer = send(api.url, b"FOO" + secret.encode() + b" /v1/jobs HTTP/1.1\r\n\r\n")
    assert answer.status == 501 and secret not in answer.text
    assert secret not in repr(entries) and secret not in caplog.text
