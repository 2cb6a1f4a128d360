"""hopindex's errors map to HTTP answers by type, as JSON naming the field; the ones that
are the server's fault map to nothing (a logged 500)."""

from __future__ import annotations

import json

import pytest

from hopindex.api.http.errors import ApiError, error_response, from_hopindex_error
from hopindex.core.errors import (
    BackendError,
    BackendUnavailableError,
    ConfigError,
    HopindexError,
    InvalidIndexNameError,
    InvalidInputError,
    JobCancelledError,
    JobFinishedError,
    LlmAuthenticationError,
    LlmOutputError,
    LlmUnavailableError,
    NotFoundError,
)


@pytest.mark.parametrize(("error", "status", "code"), [
    (InvalidInputError("k must be 1..100", where="k"), 400, "invalid_input"),
    (InvalidIndexNameError("bad name", where="index"), 400, "invalid_input"),
    (NotFoundError("no index 'x'"), 404, "not_found"),
    (JobCancelledError("cancelled"), 409, "job_cancelled"),
    (JobFinishedError("already succeeded", where="job_id"), 409, "job_finished"),
    (ConfigError("set HOPINDEX_LLM_MODEL"), 422, "not_configured"),
    (LlmAuthenticationError("key sk-abc refused"), 502, "llm_refused"),
    (LlmOutputError("not JSON"), 502, "upstream_failed"),
    (LlmUnavailableError("429s", retry_after_s=7.4), 503, "unavailable"),
    (BackendUnavailableError("redis down"), 503, "unavailable"),
])
def test_hopindex_errors_map_by_type(error: HopindexError, status: int, code: str) -> None:
    mapped = from_hopindex_error(error)
    assert mapped is not None and (mapped.status, mapped.code) == (status, code)


def test_fields_retry_after_and_what_is_not_said() -> None:
    """An input error names its field; a retryable one says when to retry; a refused LLM
    key is not echoed; a backend failure is the server's fault (None: a 500)."""
    assert from_hopindex_error(InvalidInputError("bad", where="k")).field == "k"  # type: ignore[union-attr]  # mapped
    unavailable = from_hopindex_error(LlmUnavailableError("busy", retry_after_s=7.4))
    assert unavailable is not None and unavailable.headers["Retry-After"] == "7"
    refused = from_hopindex_error(LlmAuthenticationError("key sk-abc refused"))
    assert refused is not None and "sk-abc" not in refused.message
    assert from_hopindex_error(BackendError("disk full")) is None
    assert from_hopindex_error(HopindexError("anything else")) is None


def test_error_body_shape() -> None:
    """Every error body is {"error": {code, message, field|line, ..., request_id}}; a 401
    says which scheme to use."""
    response = error_response(ApiError(400, "invalid_document", "body.jsonl:3: bad", line=3,
                                       details={"file": "body.jsonl"}), "rid-1")
    assert json.loads(response.text) == {"error": {
        "code": "invalid_document", "message": "body.jsonl:3: bad", "line": 3,
        "file": "body.jsonl", "request_id": "rid-1"}}
    assert response.content_type == "application/json"
    unauthenticated = error_response(ApiError(401, "unauthenticated", "send a key"))
    assert unauthenticated.headers["WWW-Authenticate"].startswith("Bearer")
