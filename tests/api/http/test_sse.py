"""Server-sent events: ``id:`` lines, resuming after a disconnect from Last-Event-ID or
``from``, keep-alive comments, a clean end when the client leaves, JSON errors for
cursors that are malformed or were never issued, and, past the log's retention, a 410
for a trimmed cursor and a ``gap`` event for a stream that falls behind."""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Iterable, Iterator
from typing import Any

import pytest
import requests

from hopindex.api.client.remote import RemoteClient
from hopindex.api.events import Follower
from hopindex.api.http.routing import CONTEXT
from hopindex.core.errors import EventsGoneError
from hopindex.core.events import EventType
from tests.api.http.conftest import KEYS, Api, ApiFactory
from tests.waiting import wait_until

pytestmark = pytest.mark.integration

INDEX = "sse-index"
AUTH = {"Authorization": f"Bearer {KEYS['read']}"}


@pytest.fixture(scope="module")
def sse_api(make_api: ApiFactory) -> Api:
    return make_api(api_sse_keepalive_s=0.3)


RETENTION = 5


@pytest.fixture(scope="module")
def retained_api(make_api: ApiFactory) -> Api:
    """A server whose event log keeps only the newest five events."""
    return make_api(api_sse_keepalive_s=0.3, event_retention=RETENTION)


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


def test_a_trimmed_cursor_is_a_410_naming_the_oldest_kept(retained_api: Api) -> None:
    """A cursor with trimmed events after it is answered 410 ``events_gone`` before any
    stream starts, the body naming where the id came from, the id, the oldest id kept
    and the retention; a remote client gets the same EventsGoneError, oldest id and
    all; a kept cursor still streams the events after it."""
    index = "gone-index"
    ids = append(retained_api, 12, index=index)
    gone = retained_api.call("GET", "/v1/events", key="read",
                             params={"index": index, "from": ids[0]})
    assert gone.status_code == 410
    error = gone.json()["error"]
    assert (error["code"], error["field"], error["after_id"], error["oldest_id"],
            error["retention"]) == ("events_gone", "from", ids[0], ids[-RETENTION], RETENTION)
    assert ids[-RETENTION] in error["message"] and "HOPINDEX_EVENT_RETENTION" in error["message"]
    header = retained_api.call("GET", "/v1/events", key="read", params={"index": index},
                               headers={"Last-Event-ID": ids[3]})
    assert header.status_code == 410 and header.json()["error"]["field"] == "Last-Event-ID"
    remote = RemoteClient(retained_api.url, KEYS["read"])
    with pytest.raises(EventsGoneError) as caught:
        list(remote.events.iterate_events(index, ids[0]))
    assert (caught.value.oldest_id, caught.value.where) == (ids[-RETENTION], "from")
    kept = read_events(retained_api, 2, params={"index": index, "from": ids[-3]}, headers=AUTH)
    assert [e["id"] for e in kept] == ids[-2:]


def hold_second_read(monkeypatch: pytest.MonkeyPatch) -> tuple[threading.Event,
                                                                threading.Event]:
    """Make the next stream's second read (its first after the backlog) wait for
    ``go``, setting ``held`` when it does: what the test appends meanwhile is appended
    as if the stream were too slow to read it."""
    held, go = threading.Event(), threading.Event()
    reads = itertools.count(1)
    original = Follower.read

    def read(self: Follower) -> Any:
        if next(reads) == 2:
            held.set()
            go.wait(30)
        return original(self)

    monkeypatch.setattr(Follower, "read", read)
    return held, go


def test_a_stream_that_falls_behind_gets_a_gap_event_and_ends(
        retained_api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    """A following stream that sent up to id X, when more events than the log keeps are
    appended before its next read, sends one ``gap`` event (the events_gone body with
    X, the oldest id kept and status 410) and ends, instead of streaming on past the
    trimmed events."""
    index = "gap-index"
    ids = append(retained_api, 3, index=index)
    held, go = hold_second_read(monkeypatch)
    sent: list[str] = []
    with requests.get(f"{retained_api.url}/v1/events", stream=True, timeout=30, headers=AUTH,
                      params={"index": index, "from": ids[0]}) as response:
        assert response.status_code == 200
        stream = frames(response.iter_lines(decode_unicode=True))
        for frame in stream:
            if "data" in frame:
                sent.append(frame["data"]["id"])
            if len(sent) == 2:
                break
        assert held.wait(30)
        later = append(retained_api, 2 * RETENTION, index=index)
        go.set()
        rest = [frame for frame in stream if "comment" not in frame]
    assert sent == ids[1:]
    [gap] = rest  # the gap, then the end of the stream
    assert gap["event"] == "gap" and "id" not in gap
    error = gap["data"]["error"]
    assert (error["code"], error["status"], error["after_id"], error["oldest_id"]) == (
        "events_gone", 410, ids[-1], later[-RETENTION])


def test_a_remote_follower_that_falls_behind_gets_events_gone(
        retained_api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    """Through the remote client the stream's ``gap`` event is raised as the same
    EventsGoneError a local follower gets, naming its last id and the oldest kept."""
    index = "remote-gap-index"
    ids = append(retained_api, 2, index=index)
    held, go = hold_second_read(monkeypatch)
    follower = RemoteClient(retained_api.url, KEYS["read"]).events.iterate_events(
        index, ids[0], follow=True)
    assert next(follower).event_id == ids[1]
    assert held.wait(30)
    later = append(retained_api, 2 * RETENTION, index=index)
    go.set()
    with pytest.raises(EventsGoneError) as caught:
        next(follower)
    assert (caught.value.after_id, caught.value.oldest_id) == (ids[1], later[-RETENTION])
