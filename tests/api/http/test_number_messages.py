"""What a refusal shows of the value refused, on a real server: a number out of range
is shown short (``1e+308``, not its 309 digits) with the allowed range, a long literal
is cut, and a limit that a setting gives is named by its variable (a fixed one says it
is fixed)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.api.http.conftest import Api, ApiFactory

pytestmark = pytest.mark.integration

INDEX = "numbers"
# Longer than any message here needs: a value echoed whole would pass it.
MAX_MESSAGE_CHARS = 200


@pytest.fixture(scope="module")
def api(make_api: ApiFactory) -> Api:
    # A question limit above the fixed string limit of JSON bodies (2,048), so the
    # parser's limit comes from the setting; a small upload limit.
    api = make_api(api_max_query_chars=3000, api_max_body_bytes=2000)
    assert api.call("POST", "/v1/indexes", json={"name": INDEX}).status_code == 201
    return api


def refusal(response: Any, status: int = 400) -> dict[str, Any]:
    assert response.status_code == status, response.text
    found: dict[str, Any] = response.json()["error"]
    assert len(found["message"]) < MAX_MESSAGE_CHARS, found["message"]
    return found


def query(api: Api, raw_body: str) -> Any:
    return api.call("POST", f"/v1/indexes/{INDEX}/query", data=raw_body,
                    headers={"Content-Type": "application/json"})


@pytest.mark.parametrize(("fields", "field", "shown"), [
    ('"k": 1e308', "k", "must be between 1 and 100, got 1e+308"),
    ('"k": -1e300', "k", "must be between 1 and 100, got -1e+300"),
    ('"k": 123456789012345678901234567890', "k", "must be between 1 and 100, got 1.23457e+29"),
    ('"k": 1e999', "k", "out of the range of a 64-bit float (±1.79769e+308)"),
    ('"candidates": 1e20', "candidates", "must be between 1 and 1000, got 1e+20"),
    ('"k": 2.5', "k", "must be an integer, got 2.5"),
    ('"dense_weight": -1e300', "dense_weight", "must be at least 0, got -1e+300"),
])
def test_a_number_out_of_range_is_shown_short_with_the_range(api: Api, fields: str, field: str,
                                                             shown: str) -> None:
    """Each out-of-range or ill-typed number of a query body is a 400 naming the field,
    the range it must be in and the value as a short number."""
    found = refusal(query(api, f'{{"question": "Who?", {fields}}}'))
    assert found["field"] == field and shown in found["message"], found


def test_a_query_parameter_out_of_range_is_shown_short(api: Api) -> None:
    """``limit`` past what Python converts (5,000 digits) is cut in the message; one it
    converts is shown as a short number; both name the range."""
    digits = api.call("GET", "/v1/jobs", params={"limit": "9" * 5000})
    found = refusal(digits)
    assert found["field"] == "limit" and "between 1 and" in found["message"]
    assert "…" in found["message"]
    big = refusal(api.call("GET", "/v1/jobs", params={"limit": str(10 ** 30)}))
    assert big["message"].endswith(", got 1e+30") and "between 1 and" in big["message"]


def test_limits_from_settings_name_their_variables(api: Api) -> None:
    """A question over HOPINDEX_API_MAX_QUERY_CHARS names the variable and its value; an
    upload over HOPINDEX_API_MAX_BODY_BYTES names that one; the fixed limit of a small
    JSON body (a webhook's) names none and says it is fixed."""
    long_question = refusal(query(api, json.dumps({"question": "q" * 3500})))
    assert long_question["field"] == "question"
    assert "over HOPINDEX_API_MAX_QUERY_CHARS=3,000" in long_question["message"]
    upload = refusal(api.call("POST", f"/v1/indexes/{INDEX}/documents",
                              json=[{"title": "T", "text": "x" * 3000}]), 413)
    assert "(HOPINDEX_API_MAX_BODY_BYTES)" in upload["message"]
    webhook = refusal(api.call("POST", "/v1/webhooks", data=b" " * 1_000_001,
                               headers={"Content-Type": "application/json"}), 413)
    assert webhook["message"].endswith("(fixed)") and "HOPINDEX" not in webhook["message"]


def test_a_small_question_limit_is_named_too(make_api: ApiFactory) -> None:
    """Below the fixed string limit of JSON bodies, the question's own check names
    HOPINDEX_API_MAX_QUERY_CHARS as well."""
    small = make_api(api_max_query_chars=50)
    assert small.call("POST", "/v1/indexes", json={"name": INDEX}).status_code == 201
    found = refusal(query(small, json.dumps({"question": "q" * 60})))
    assert found["field"] == "question"
    assert found["message"] == ("field 'question' is 60 characters, over "
                                "HOPINDEX_API_MAX_QUERY_CHARS=50")
