"""Both event logs against the shared contracts (the log's, and its retention's), plus
what only each one can show: SQLite's file across processes and a fork, Redis's stream
keys, its approximate trimming and its outage error."""

from __future__ import annotations

import multiprocessing
import sqlite3
import threading
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

import pytest
import redis

from hopindex.backends.events.redis_log import RedisEventLog
from hopindex.backends.events.sqlite_log import SqliteEventLog
from hopindex.backends.protocols import EventLog
from hopindex.backends.registry import open_event_log
from hopindex.core.errors import BackendError, BackendUnavailableError, EventsGoneError
from hopindex.core.events import EventType
from hopindex.core.settings import Settings
from hopindex.testing.contracts.event_log import EventLogContract, append, hook, ids, new_index
from hopindex.testing.contracts.event_retention import (
    RETENTION,
    EventRetentionContract,
    OpenLog,
)
from hopindex.testing.redis_server import free_port
from tests.redis_server import redis_url, unique_key  # noqa: F401  # pytest fixture
from tests.waiting import wait_until

ROUNDS = 30


class TestSqliteEventLog(EventLogContract, EventRetentionContract):
    unissued_id: ClassVar[str] = "999999999"
    before_all_id: ClassVar[str] = "0"
    read_method: ClassVar[str] = "_read"

    @staticmethod
    def id_key(event_id: str) -> int:
        return int(event_id)

    @pytest.fixture
    def path(self, tmp_path: Path) -> Path:
        return tmp_path / "nested" / "events.sqlite3"

    @pytest.fixture
    def log(self, path: Path) -> Iterator[EventLog]:
        log = SqliteEventLog(path)
        yield log
        log.close()

    @pytest.fixture
    def reopen_log(self, path: Path) -> Callable[[], EventLog]:
        return lambda: SqliteEventLog(path)

    @pytest.fixture
    def open_retained_log(self, path: Path) -> Iterator[OpenLog]:
        opened: list[EventLog] = []

        def open_log() -> EventLog:
            opened.append(SqliteEventLog(path, retention=RETENTION))
            return opened[-1]

        yield open_log
        for log in opened:
            log.close()


@pytest.mark.integration
class TestRedisEventLog(EventLogContract, EventRetentionContract):
    unissued_id: ClassVar[str] = "99999999999999-0"
    before_all_id: ClassVar[str] = "0-1"
    read_method: ClassVar[str] = "_scan"

    @staticmethod
    def id_key(event_id: str) -> tuple[int, int]:
        ms, seq = event_id.split("-")
        return int(ms), int(seq)

    @pytest.fixture
    def prefix(self, redis_url: str) -> Iterator[str]:  # noqa: F811  # the imported fixture
        prefix = unique_key("hopindex-test")
        yield prefix
        client = redis.Redis.from_url(redis_url)
        client.delete(f"{prefix}:events", f"{prefix}:webhooks")
        client.close()

    @pytest.fixture
    def log(self, redis_url: str, prefix: str) -> Iterator[EventLog]:  # noqa: F811  # the imported fixture
        log = RedisEventLog(redis_url, prefix=prefix)
        yield log
        log.close()

    @pytest.fixture
    def reopen_log(self, redis_url: str, prefix: str) -> Callable[[], EventLog]:  # noqa: F811  # the imported fixture
        return lambda: RedisEventLog(redis_url, prefix=prefix)

    @pytest.fixture
    def open_retained_log(self, redis_url: str, prefix: str) -> Iterator[OpenLog]:  # noqa: F811  # the imported fixture
        opened: list[EventLog] = []

        def open_log() -> EventLog:
            # Exact trimming, so the contract can count what is kept.
            opened.append(RedisEventLog(redis_url, prefix=prefix, retention=RETENTION,
                                        approximate=False))
            return opened[-1]

        yield open_log
        for log in opened:
            log.close()

    def test_approximate_trimming_keeps_about_the_retention_and_reports_gaps(
            self, redis_url: str, prefix: str) -> None:  # noqa: F811  # the imported fixture
        """With the default approximate trimming (whole macro-nodes) a log keeping 5
        holds at least 5 and far fewer than the 300 appended, and what it reports is
        exact: a read after the first id raises EventsGoneError naming the oldest entry
        the stream still holds, and a read from the start returns every kept event."""
        log = RedisEventLog(redis_url, prefix=prefix, retention=RETENTION)
        try:
            events = append(log, new_index(), 300)
            kept = log.read_events(limit=300)
            assert RETENTION <= len(kept) < 300
            assert ids(kept) == ids(events[-len(kept):])
            with pytest.raises(EventsGoneError) as caught:
                log.read_events(after_id=events[0].event_id)
            assert caught.value.oldest_id == kept[0].event_id
            assert ids(log.read_events(after_id=kept[0].event_id, limit=300)) == ids(kept[1:])
        finally:
            log.close()

    def test_keys_are_a_stream_and_a_hash_under_the_prefix(self, log: EventLog,
                                                           redis_url: str,  # noqa: F811  # the imported fixture
                                                           prefix: str) -> None:
        """Events are entries of the ``{prefix}:events`` stream whose ids are the event
        ids, with the data as JSON; webhooks are fields of the ``{prefix}:webhooks`` hash."""
        index = new_index()
        event = log.append_event(EventType.INDEX_READY, index, "job-1", {"units": {"aku": 2}})
        log.put_webhook(hook(index))
        client = redis.Redis.from_url(redis_url, decode_responses=True)
        try:
            assert client.type(f"{prefix}:events") == "stream"
            assert client.type(f"{prefix}:webhooks") == "hash"
            # redis-py types replies as unions over bytes and str; this client decodes.
            entries: Any = client.xrange(f"{prefix}:events")
            [(entry_id, fields)] = entries
            assert entry_id == event.event_id
            assert fields["type"] == "index.ready" and fields["index"] == index
            assert fields["data"] == '{"units":{"aku":2}}'
        finally:
            client.close()

    def test_entries_from_before_prev_was_recorded_still_report_gaps(
            self, redis_url: str, prefix: str) -> None:  # noqa: F811  # the imported fixture
        """A stream written before entries named the one before them (no ``prev``
        field): untrimmed, a cursor older than everything reads from the start; once
        trimmed, a cursor with trimmed entries after it is gone, never skipped."""
        client = redis.Redis.from_url(redis_url, decode_responses=True)
        log = RedisEventLog(redis_url, prefix=prefix, retention=RETENTION)
        try:
            stream = f"{prefix}:events"
            old = [str(client.xadd(stream, {"type": "job.progress", "index": "old",
                                            "job_id": "j", "data": "{}", "created_at": "1.0"}))
                   for _ in range(3)]
            assert ids(log.read_events(after_id="0-1")) == old
            client.xtrim(stream, maxlen=1, approximate=False)
            with pytest.raises(EventsGoneError) as caught:
                log.read_events(after_id=old[0])
            assert caught.value.oldest_id == old[2]
            assert log.read_events(after_id=old[2]) == []
        finally:
            log.close()
            client.close()

    def test_close_during_a_wait_ends_it_with_a_backend_error(
            self, redis_url: str, prefix: str) -> None:  # noqa: F811  # the imported fixture
        """Closing the log from another thread while a follower blocks in XREAD ends the
        wait promptly with a BackendError saying it was closed, not an outage."""
        # A connection name of its own, so Redis can tell when this follower blocks.
        name = unique_key("event-log-follower")
        separator = "&" if "?" in redis_url else "?"
        log = RedisEventLog(f"{redis_url}{separator}client_name={name}", prefix=prefix)
        failures: list[BaseException] = []

        def wait() -> None:
            try:
                log.wait_events(None, None, timeout_s=8)
            except BaseException as exc:  # the thread reports it to the test
                failures.append(exc)

        waiter = threading.Thread(target=wait)
        waiter.start()
        client = redis.Redis.from_url(redis_url, decode_responses=True)
        try:
            wait_until(lambda: any(c["name"] == name and c["cmd"] == "xread" and "b" in c["flags"]
                                   for c in client.client_list()),
                       what="the follower to block in XREAD")
        finally:
            client.close()
        log.close()
        waiter.join(timeout=5)
        assert not waiter.is_alive()
        [failure] = failures
        assert type(failure) is BackendError and "closed" in str(failure)


def test_sqlite_log_is_a_wal_file_of_its_own(tmp_path: Path) -> None:
    """The log creates its folders and one WAL-mode file holding events and webhooks."""
    path = tmp_path / "a" / "b" / "events.sqlite3"
    SqliteEventLog(path).close()
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master "
                                             "WHERE type = 'table'")}
        assert {"events", "webhooks"} <= tables
    finally:
        conn.close()


def test_sqlite_log_from_before_recorded_decisions_is_upgraded(tmp_path: Path) -> None:
    """A file whose webhooks table predates the recorded decision on private targets
    gains the column when opened: its webhooks read as not recorded (None), and one
    registered afterwards keeps its decision."""
    path = tmp_path / "events.sqlite3"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE webhooks (webhook_id TEXT PRIMARY KEY, idx TEXT NOT NULL, "
                 "url TEXT NOT NULL, secret TEXT NOT NULL, created_at REAL NOT NULL)")
    conn.execute("INSERT INTO webhooks VALUES ('wh-old', 'wiki', 'http://10.0.0.5/in', "
                 "'old-secret', 1.0)")
    conn.commit()
    conn.close()
    log = SqliteEventLog(path)
    try:
        [old] = log.list_webhooks("wiki")
        assert (old.webhook_id, old.allow_private) == ("wh-old", None)
        log.put_webhook(replace(hook("wiki", "new", 2.0), allow_private=True))
        assert [w.allow_private for w in log.list_webhooks("wiki")] == [None, True]
    finally:
        log.close()
    SqliteEventLog(path).close()  # opening it again finds the column there


def _append_in_own_log(path: Path, worker: int) -> None:
    log = SqliteEventLog(path)
    try:
        for i in range(ROUNDS):
            log.append_event(EventType.JOB_PROGRESS, "shared", f"job-{worker}", {"i": i})
    finally:
        log.close()


def _append_in_inherited_log(log: SqliteEventLog) -> None:
    for i in range(ROUNDS):
        log.append_event(EventType.JOB_PROGRESS, "forked", "job-child", {"i": i})


def test_sqlite_processes_appending_to_one_file_lose_nothing(tmp_path: Path) -> None:
    """Several processes appending to one file at once: every event is kept, each id
    once, and ids follow each process's own append order."""
    path = tmp_path / "events.sqlite3"
    log = SqliteEventLog(path)
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_append_in_own_log, args=(path, w)) for w in range(3)]
    for p in procs:
        p.start()
    _append_in_own_log(path, 99)
    for p in procs:
        p.join(timeout=120)
        assert p.exitcode == 0
    events = log.read_events(limit=1000)
    log.close()
    assert len(events) == 4 * ROUNDS
    assert len(set(ids(events))) == len(events)
    for worker in (0, 1, 2, 99):
        mine = [e.data["i"] for e in events if e.job_id == f"job-{worker}"]
        assert mine == list(range(ROUNDS))


def test_sqlite_forked_child_reopens_its_connection(tmp_path: Path) -> None:
    """A log object inherited across fork opens its own connection; the parent then
    reads what the child appended, after what it appended itself."""
    log = SqliteEventLog(tmp_path / "events.sqlite3")
    before = append(log, "forked", 2, job_id="job-parent")
    ctx = multiprocessing.get_context("fork")
    child = ctx.Process(target=_append_in_inherited_log, args=(log,))
    child.start()
    child.join(timeout=120)
    assert child.exitcode == 0
    events = log.read_events(index="forked", limit=1000)
    log.close()
    assert ids(events[:2]) == ids(before)
    assert [e.job_id for e in events[2:]] == ["job-child"] * ROUNDS


def test_redis_log_down_is_a_retryable_backend_error() -> None:
    """A Redis that does not answer fails the first call with BackendUnavailableError
    (retryable) naming the URL without its password."""
    log = RedisEventLog(f"redis://:hunter2@127.0.0.1:{free_port()}/0", prefix="nobody")
    try:
        with pytest.raises(BackendUnavailableError) as caught:
            log.last_event_id()
    finally:
        log.close()
    assert caught.value.retryable
    assert "127.0.0.1" in str(caught.value) and "hunter2" not in str(caught.value)


def test_opened_logs_keep_hopindex_event_retention(tmp_path: Path) -> None:
    """The event log opened beside the state, SQLite or Redis, keeps as many events as
    HOPINDEX_EVENT_RETENTION says; the SQLite one trims to exactly that on append."""
    settings = Settings(data_dir=tmp_path, event_retention=3).resolved()
    log = open_event_log(settings.state_url, settings)
    try:
        assert isinstance(log, SqliteEventLog) and log.retention == 3
        events = append(log, "kept", 5)
        assert ids(log.read_events()) == ids(events[-3:])
    finally:
        log.close()
    # Opening connects to nothing, so a Redis that is not there is enough here.
    remote = open_event_log(f"redis://127.0.0.1:{free_port()}/0", settings)
    try:
        assert isinstance(remote, RedisEventLog) and remote.retention == 3
    finally:
        remote.close()
