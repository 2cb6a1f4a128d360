"""``hopindex events`` core: following the log from a cursor (and being told when the
log's retention trimmed past it), one-line rendering, and webhook registration (over
the SQLite event log)."""

from __future__ import annotations

import base64
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from hopindex.api.events import Follower, follow_events, register_webhook, render_event
from hopindex.backends.events.sqlite_log import SqliteEventLog
from hopindex.core.errors import EventsGoneError, InvalidInputError
from hopindex.core.events import Event, EventType
from tests.waiting import wait_until

INDEX = "curie"


@pytest.fixture
def log(tmp_path: Path) -> Iterator[SqliteEventLog]:
    log = SqliteEventLog(tmp_path / "events.sqlite3")
    yield log
    log.close()


def progress(log: SqliteEventLog, n: int, index: str = INDEX) -> list[Event]:
    return [log.append_event(EventType.JOB_PROGRESS, index, "job-1", {"i": i})
            for i in range(n)]


def test_without_follow_reads_everything_after_the_cursor_and_ends(
        log: SqliteEventLog) -> None:
    """Without --follow every event after the cursor comes out once, in order, across
    more than one read page, and then the iterator ends."""
    events = progress(log, 250)
    cursor = events[9].event_id
    started = time.monotonic()
    # A wait for new events would block for the whole poll timeout: with a minute's
    # timeout, ending within half of it shows none was made, while three page reads
    # take milliseconds even on a loaded 2-core machine.
    seen = list(follow_events(log, index=None, after_id=cursor, follow=False,
                              poll_timeout_s=60))
    assert [e.event_id for e in seen] == [e.event_id for e in events[10:]]
    assert time.monotonic() - started < 30
    assert len(list(follow_events(log, index=None, after_id=None, follow=False))) == 250


def test_follow_resumes_from_a_cursor_and_sees_new_events_until_stopped(
        log: SqliteEventLog) -> None:
    """A follower started from a kept id gets the backlog after it, then events another
    thread appends later (only its index's), and ends soon after ``stop`` turns true."""
    backlog = progress(log, 3)
    stop = threading.Event()
    seen: list[Event] = []
    ended = threading.Event()

    def follow() -> None:
        for event in follow_events(log, index=INDEX, after_id=backlog[0].event_id,
                                   follow=True, poll_timeout_s=0.2, stop=stop.is_set):
            seen.append(event)
        ended.set()

    follower = threading.Thread(target=follow, daemon=True)
    follower.start()
    wait_until(lambda: len(seen) >= 2, what="the follower to read the backlog")
    assert [e.event_id for e in seen] == [e.event_id for e in backlog[1:]]
    progress(log, 2, index="elsewhere")
    ready = log.append_event(EventType.INDEX_READY, INDEX, "job-1", {"units": {"passage": 6}})
    # The other index's events precede ``ready`` in the log: once the follower has
    # ``ready``, any of them it let through would be in ``seen`` already.
    wait_until(lambda: ready in seen, what="the follower to see the new index.ready")
    assert seen == [*backlog[1:], ready]
    stop.set()
    # ``stop`` is checked after each empty wait of poll_timeout_s (0.2 s); a follower
    # that ignored it would never end. 10 s is fifty such waits: room for a loaded
    # 2-core machine to be slow to schedule the thread.
    assert ended.wait(10), "the follower did not stop"


def test_follow_from_an_unknown_id_is_an_error_naming_from(log: SqliteEventLog) -> None:
    """A cursor this log never issued is refused up front, naming ``--from``'s field."""
    progress(log, 1)
    with pytest.raises(InvalidInputError) as caught:
        next(follow_events(log, index=None, after_id="12345", follow=True))
    assert caught.value.where == "from"


def test_a_follower_that_falls_behind_the_retention_is_told(tmp_path: Path) -> None:
    """A follower that read up to id X, when more events than the log keeps are appended
    before its next read, gets EventsGoneError naming X and the oldest id kept instead
    of the events past the gap; so does one started from X afterwards."""
    log = SqliteEventLog(tmp_path / "events.sqlite3", retention=5)
    try:
        first = progress(log, 2)
        follower = follow_events(log, index=INDEX, after_id=None, follow=True,
                                 poll_timeout_s=0.2)
        assert [next(follower), next(follower)] == first
        later = progress(log, 7)
        with pytest.raises(EventsGoneError) as caught:
            next(follower)
        assert (caught.value.after_id, caught.value.oldest_id) == (
            first[-1].event_id, later[-5].event_id)
        with pytest.raises(EventsGoneError):
            next(follow_events(log, index=INDEX, after_id=first[-1].event_id, follow=False))
    finally:
        log.close()


def test_a_quiet_index_follower_moves_on_with_the_log(tmp_path: Path) -> None:
    """A follower of a quiet index is not behind merely because other indexes' events
    passed the retention while it waited: each empty wait moves its place on to the
    log's end, so it goes on and gets its index's next event."""
    log = SqliteEventLog(tmp_path / "events.sqlite3", retention=5)
    try:
        [mine] = progress(log, 1)
        follower = Follower(log, INDEX, None)
        assert follower.read() == [mine]
        for _ in range(4):  # 12 other events in all: ``mine`` is trimmed away
            progress(log, 3, index="busy")
            assert follower.wait(0.0) == []
        ready = log.append_event(EventType.INDEX_READY, INDEX, "job-1", {})
        assert follower.wait(5.0) == [ready]
        assert follower.cursor == ready.event_id
    finally:
        log.close()


def test_render_index_ready_shows_units_per_kind(log: SqliteEventLog) -> None:
    """index.ready renders on one line with its id, UTC time, type, index, job, units per
    kind, document count, failed documents and duration."""
    event = Event(event_id="17", event_type=EventType.INDEX_READY, index=INDEX,
                  job_id="job-9", created_at=0.0,
                  data={"units": {"passage": 6, "bridge": 2}, "documents": 6,
                        "failed": ["d3"], "llm": {}, "duration_s": 1.25})
    line = render_event(event)
    assert "\n" not in line
    assert line.startswith("17  1970-01-01T00:00:00Z  index.ready")
    for part in (INDEX, "job=job-9", "units bridge=2 passage=6", "documents=6",
                 "failed=d3", "in 1.25s"):
        assert part in line, part


def test_render_progress_and_failure_summaries() -> None:
    """job.progress shows its phase and per-stage done/total (stages with work only);
    job.failed shows its reason."""
    counts = {"extractive.stage1": {"total": 6, "done": 4, "failed": 1, "skipped": 0},
              "extractive.stage2": {"total": 0, "done": 0, "failed": 0, "skipped": 0}}
    progress_event = Event(event_id="3", event_type=EventType.JOB_PROGRESS, index=INDEX,
                           job_id="j", created_at=0.0,
                           data={"state": "running", "phase": "extractive.link",
                                 "counts": counts,
                                 "errors": 1})
    line = render_event(progress_event)
    assert "phase=extractive.link" in line and "extractive.stage1 4/6 failed=1" in line
    assert "errors=1" in line and "stage2" not in line
    failed = Event(event_id="4", event_type=EventType.JOB_FAILED, index=INDEX, job_id="j",
                   created_at=0.0, data={"reason": "stalled", "counts": {}})
    assert render_event(failed).endswith("reason='stalled'")


def test_register_webhook_makes_an_id_and_a_secret(log: SqliteEventLog) -> None:
    """Without a secret a random one of 32 bytes is made, in Standard Webhooks form
    (whsec_ + base64); ids differ per webhook; a given secret is kept as its bytes, in
    the same form; the webhook is stored."""
    first = register_webhook(log, INDEX, "https://example.org/hook", None)
    second = register_webhook(log, INDEX, "http://127.0.0.1:8080/x", "mine", allow_private=True)
    assert first.secret.startswith("whsec_")
    assert len(base64.b64decode(first.secret.removeprefix("whsec_"))) == 32
    assert first.webhook_id != second.webhook_id
    assert second.secret == "whsec_" + base64.b64encode(b"mine").decode()
    assert log.list_webhooks(INDEX) == [first, second]


@pytest.mark.parametrize("url", ["ftp://example.org/x", "example.org/hook", "http://",
                                 "https://host:notaport/x", "file:///etc/passwd"])
def test_register_webhook_refuses_urls_that_are_not_http(log: SqliteEventLog,
                                                         url: str) -> None:
    """Anything but an http(s) URL with a host is an input error naming ``url``, and
    nothing is stored."""
    with pytest.raises(InvalidInputError) as caught:
        register_webhook(log, INDEX, url, None)
    assert caught.value.where == "url"
    assert log.list_webhooks() == []
