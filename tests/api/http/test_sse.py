"""Server-sent events: ``id:`` lines, resuming after a disconnect from Last-Event-ID or
``from``, keep-alive comments, a clean end when the client leaves, and JSON errors for
cursors that are malformed or were never issued."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

import pytest
import requests

from hopindex.api.http.routing import CONTEXT
from hopindex.core.events import EventType
from tests.api.http.conftest import KEYS, Api, ApiFactory
from tests.waiting import wait_until

pytestmark = pytest.mark.integration

INDEX = "sse-index"
AUTH = {"Authorization": f"Bearer {KEYS['read']}"}


@pytest.fixture(scope="module")
def sse_api(make_api: ApiFactory) -> Api:
    return make_api(api_sse_keepalive_s=0.3)


def append(api: Api, n: int, index: str = INDEX) -> list[str]:
    log = api.service.backends.events
    return [log.append_event(EventType.JOB_PROGRESS, index, "job-sse", {"n": i}).event_id
            for i in range(n)]


def frames(lines: Iterable[str]) -> Iterator[dict[str, Any]]:
    """Each SSE frame as {"id", "event", "data"} or {"comment"}."""
    frame: dict[str, Any] = {}
    for line in lines:
        if line.startswith(":"):
            yield {"comment": line[1:].strip()}
        elif line.startswith(("id: ", "event: ")):
            name, _, value = line.partition(": ")
            frame[name] = value
        elif line.startswith("data: "):
            frame["data"] = json.loads(line[6:])
        elif not line and frame:
            yield frame
            frame = {}


def read_events(api: Api, n: int, **request: Any) -> list[dict[str, Any]]:
    """Open a stream, take ``n`` events, disconnect."""
    taken: list[dict[str, Any]] = []
    with requests.get(f"{api.url}/v1/events", stream=True, timeout=30, **request) as response:
        assert response.status_code == 200, response.text
        for frame in frames(response.iter_lines(decode_unicode=True)):
            if "data" in frame:
                assert frame["id"] == frame["data"]["id"]
                assert frame["event"] == frame["data"]["type"]
                taken.append(frame["data"])
                if len(taken) == n:
                    break
    return taken


def test_resume_after_disconnect_with_last_event_id(sse_api: Api) -> None:
    """A client that read three events and dropped the connection reconnects with
    Last-Event-ID and gets exactly the events after the third, including those appended
    while it was away; ``from`` does the same for a first connection."""
    ids = append(sse_api, 5)
    params = {"index": INDEX}
    first = read_events(sse_api, 3, params=params, headers=AUTH)
    assert [e["id"] for e in first] == ids[:3]
    later = append(sse_api, 2)
    resumed = read_events(sse_api, 4, params=params,
                          headers={**AUTH, "Last-Event-ID": first[-1]["id"]})
    assert [e["id"] for e in resumed] == ids[3:] + later
    by_from = read_events(sse_api, 2, params={**params, "from": ids[-1]}, headers=AUTH)
    assert [e["id"] for e in by_from] == later


def test_keepalive_comments_and_a_clean_end_on_disconnect(sse_api: Api) -> None:
    """An idle stream carries keep-alive comments; when the client leaves, the server
    closes its side and frees the stream slot."""
    gate = sse_api.server.app[CONTEXT].streams
    comments = []
    with requests.get(f"{sse_api.url}/v1/events", params={"index": "idle-index"},
                      headers=AUTH, stream=True, timeout=30) as response:
        for frame in frames(response.iter_lines(decode_unicode=True)):
            comments.append(frame.get("comment"))
            if comments.count("keep-alive") == 2:
                break
        assert gate.open == 1
    # The server notices the closed connection on its next poll or write (a keep-alive
    # every 0.3 s) and then frees the slot.
    wait_until(lambda: gate.open == 0, what="the server to free the stream slot")


def test_backlog_mode_ends_at_the_log_end(sse_api: Api) -> None:
    """mode=backlog streams what is there and ends (the CLI's `events` without --follow)."""
    ids = append(sse_api, 3, index="backlog-index")
    response = requests.get(f"{sse_api.url}/v1/events", headers=AUTH, timeout=30,
                            params={"index": "backlog-index", "mode": "backlog"})
    assert response.status_code == 200
    sse_api.conforms(response)
    assert [f["data"]["id"] for f in frames(response.text.split("\n")) if "data" in f] == ids


def test_unknown_or_malformed_cursors_are_json_errors(sse_api: Api) -> None:
    """Before any stream starts, a well-formed id the log never issued is a 404 and a
    malformed one a 400, each naming where the id came from."""
    append(sse_api, 1)
    unknown = sse_api.call("GET", "/v1/events", key="read",
                           params={"index": INDEX, "from": "99999999"})
    assert unknown.status_code == 404 and unknown.json()["error"]["field"] == "from"
    assert unknown.json()["error"]["code"] == "unknown_event_id"
    malformed = sse_api.call("GET", "/v1/events", key="read", params={"index": INDEX},
                             headers={"Last-Event-ID": "not-an-id"})
    assert malformed.status_code == 400
    assert malformed.json()["error"]["field"] == "Last-Event-ID"
