"""Event tokens over a real server: a token from ``POST /v1/indexes/{name}/events/token``
opens that index's event stream without a key (as a page's EventSource must), and
nothing else: not another index, not the whole log, not any other route; expired,
changed and foreign tokens are 401s, and an API key in the query string is never
taken for one. A second server with the same keys accepts the token."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
import requests
import structlog

from hopindex.api.access import Principal
from hopindex.api.http.event_tokens import EVENT_TOKEN_TTL_S
from hopindex.api.http.routing import CONTEXT
from hopindex.core.events import EventType
from hopindex.core.logging import configure_logging
from tests.api.http.conftest import KEY_SPEC, KEYS, SCOPED_INDEX, Api, ApiFactory

pytestmark = pytest.mark.integration

INDEX = "watched"
OTHER = "unwatched"


@pytest.fixture(scope="module")
def token_api(make_api: ApiFactory) -> Api:
    # Many refusals come from this one address: the failure budget is tested on its own.
    api = make_api(log_level="INFO", api_auth_failures_per_minute=0)
    log = api.service.backends.events
    for index in (INDEX, OTHER, SCOPED_INDEX):
        for n in range(2):
            log.append_event(EventType.JOB_PROGRESS, index, f"job-{index}", {"n": n})
    return api


def issue(api: Api, index: str = INDEX, key: str = "read") -> dict[str, Any]:
    answer = api.call("POST", f"/v1/indexes/{index}/events/token", key=key)
    assert answer.status_code == 200, answer.text
    assert answer.headers["Cache-Control"] == "no-store"
    return dict(answer.json())


def stream(api: Api, token: str, **params: str) -> requests.Response:
    """The backlog of the event stream with a token and no Authorization header."""
    return api.call("GET", "/v1/events", key=None, check=False,
                    params={"mode": "backlog", **params, "token": token})


def test_a_token_opens_its_index_stream_without_a_key(token_api: Api) -> None:
    """What a page does: fetch a token with its key, then open the stream passing the
    token in the URL. The stream holds that index's events only."""
    issued = issue(token_api)
    assert issued["index"] == INDEX
    assert 0 < issued["expires_at"] - time.time() <= EVENT_TOKEN_TTL_S
    answer = stream(token_api, issued["token"], index=INDEX)
    assert answer.status_code == 200, answer.text
    assert answer.headers["Content-Type"].startswith("text/event-stream")
    indexes = [json.loads(line[len("data: "):])["index"]
               for line in answer.text.splitlines() if line.startswith("data: ")]
    assert indexes == [INDEX, INDEX]


@pytest.mark.parametrize("params", [{"index": OTHER}, {}])
def test_a_token_is_refused_for_other_indexes_and_the_whole_log(
        token_api: Api, params: dict[str, str]) -> None:
    """A token for one index does not open another index's stream, nor the unfiltered
    one, even when issued by a key that covers every index."""
    token = issue(token_api, key="write")["token"]
    answer = stream(token_api, token, **params)
    assert answer.status_code == 403, answer.text
    assert answer.json()["error"]["code"] == "forbidden"


@pytest.mark.parametrize(("method", "path", "body"), [
    ("GET", f"/v1/indexes/{INDEX}", None),
    ("GET", "/v1/indexes", None),
    ("POST", f"/v1/indexes/{INDEX}/query", {"question": "anything"}),
    ("POST", f"/v1/indexes/{INDEX}/documents", [{"text": "planted by a token"}]),
    ("DELETE", f"/v1/indexes/{INDEX}", None),
    ("GET", f"/v1/jobs?index={INDEX}", None),
    ("POST", "/v1/webhooks", {"index": INDEX, "url": "https://example.org/h"}),
    ("POST", f"/v1/indexes/{INDEX}/events/token", None),
])
def test_a_token_is_refused_by_every_other_route(token_api: Api, method: str, path: str,
                                                 body: object) -> None:
    """Reads and writes alike: a token from a write key is a 401 anywhere but the event
    stream, and the answer says where tokens are taken."""
    token = issue(token_api, key="write")["token"]
    joiner = "&" if "?" in path else "?"
    answer = token_api.call(method, f"{path}{joiner}token={token}", key=None, json=body)
    assert answer.status_code == 401, answer.text
    assert "GET /v1/events only" in answer.json()["error"]["message"]


def _refusal(answer: requests.Response) -> dict[str, Any]:
    assert answer.status_code == 401, answer.text
    assert answer.headers["WWW-Authenticate"].startswith("Bearer")
    error = dict(answer.json()["error"])
    assert error["code"] == "unauthenticated" and error["field"] == "token"
    return error


def test_an_expired_token_is_refused(token_api: Api) -> None:
    """A token past its expiry is a 401 saying so and where to get a new one."""
    tokens = token_api.server.app[CONTEXT].tokens
    who = token_api.server.app[CONTEXT].keys.lookup(KEYS["read"])
    assert isinstance(who, Principal)
    expired = tokens.issue(who, INDEX, now=time.time() - EVENT_TOKEN_TTL_S - 1).token
    error = _refusal(stream(token_api, expired, index=INDEX))
    assert "expired" in error["message"] and "/events/token" in error["message"]


def test_changed_tokens_are_refused(token_api: Api) -> None:
    """A token re-pointed at another index, given a longer life, or with a changed MAC
    is a 401; so is one cut short."""
    version, entry, _, expires, mac = issue(token_api)["token"].split(".")
    flipped = ("A" if mac[0] != "A" else "B") + mac[1:]
    for changed in (".".join((version, entry, OTHER, expires, mac)),
                    ".".join((version, entry, INDEX, str(int(expires) + 86_400), mac)),
                    ".".join((version, entry, INDEX, expires, flipped)),
                    ".".join((version, entry, INDEX, expires, mac[:-2]))):
        index = changed.split(".")[2]
        error = _refusal(stream(token_api, changed, index=index))
        assert error["message"] == "the event token is not valid"


@pytest.mark.parametrize("key", ["read", "write"])
def test_an_api_key_in_the_query_string_is_refused(token_api: Api, key: str) -> None:
    """An API key passed as ``token`` is no token, and under any other name it is an
    unknown parameter on a request without a key: the key only ever works as a header."""
    _refusal(stream(token_api, KEYS[key], index=INDEX))
    for name in ("api_key", "key", "access_token"):
        answer = token_api.call("GET", "/v1/events", key=None, check=False,
                                params={"index": INDEX, "mode": "backlog", name: KEYS[key]})
        assert answer.status_code == 401, answer.text


def test_with_a_key_and_a_token_the_key_decides(token_api: Api) -> None:
    """A request with an Authorization header is judged by its key alone, whatever
    token it also carries: a right key opens the stream, a wrong one is a 401 even
    beside a valid token."""
    token = issue(token_api)["token"]
    params = {"index": INDEX, "mode": "backlog"}
    with_key = token_api.call("GET", "/v1/events", key="read", check=False,
                              params={**params, "token": "not-a-token"})
    assert with_key.status_code == 200, with_key.text
    wrong_key = token_api.call("GET", "/v1/events", key="wrong-key-0123456789abcdef",
                               check=False, params={**params, "token": token})
    assert wrong_key.status_code == 401, wrong_key.text
    assert wrong_key.json()["error"]["message"] == "the API key is not valid"


def test_tokens_follow_the_issuing_key_scope(token_api: Api) -> None:
    """A key limited to some indexes gets tokens for those only; a read key gets them
    too (a token is read-only whatever issued it)."""
    assert token_api.call("POST", f"/v1/indexes/{OTHER}/events/token",
                          key="scoped").status_code == 403
    token = issue(token_api, SCOPED_INDEX, key="scoped")["token"]
    assert stream(token_api, token, index=SCOPED_INDEX).status_code == 200
    assert token_api.call("POST", f"/v1/indexes/{INDEX}/events/token", key=None,
                          check=False).status_code == 401


def test_another_server_with_the_same_keys_accepts_the_token(token_api: Api,
                                                             make_api: ApiFactory) -> None:
    """Tokens need no shared state: a second server configured with the same keys
    accepts one; a server with other keys refuses it."""
    token = issue(token_api)["token"]
    same = make_api(KEY_SPEC)
    assert stream(same, token, index=INDEX).status_code == 200
    other = make_api(f"{KEYS['write']}")
    _refusal(stream(other, token, index=INDEX))


def test_tokens_never_reach_the_log(token_api: Api) -> None:
    """Neither a right nor a refused token is logged; the refusal is logged by reason."""
    # Each server configures logging as it starts; this one's level (INFO) applies.
    configure_logging(token_api.service.settings)
    token = issue(token_api)["token"]
    with structlog.testing.capture_logs() as entries:
        stream(token_api, token, index=INDEX)
        stream(token_api, token + "x", index=INDEX)
    assert token not in repr(entries)
    refused = [e for e in entries if e["event"] == "event_token_refused"]
    assert [e["reason"] for e in refused] == ["malformed"]
    logged = [e["key"] for e in entries if e["event"] == "http_request"]
    assert logged == ["env-2 (event token)", None]


def test_refused_tokens_spend_the_failure_budget(make_api: ApiFactory) -> None:
    """Guessing tokens costs what guessing keys does: past the failure burst, a 429."""
    api = make_api(api_auth_failure_burst=2, api_auth_failures_per_minute=1)
    token = issue(api)["token"]
    statuses = [stream(api, token[:-1] + ("A" if token[-1] != "A" else "B"),
                       index=INDEX).status_code for _ in range(3)]
    assert statuses == [401, 401, 429]
    assert stream(api, token, index=INDEX).status_code == 200
