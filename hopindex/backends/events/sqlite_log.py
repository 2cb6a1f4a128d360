"""The embedded event log: one SQLite file of its own beside the state file.

A separate file rather than tables in the state store: a follower polls it every
50 ms for as long as it follows, and those reads must not queue behind the state
store's connection lock while a bulk write holds it.

Ids are the ``AUTOINCREMENT`` row id as a decimal string. ``AUTOINCREMENT`` (not a
plain rowid) so an id is never issued twice, even after the newest rows are gone;
and appends take the write lock up front, so ids are assigned in commit order and
a reader that has seen id N can never later find an event below N appear.

Each append trims the log to its newest ``retention`` events in the same transaction
(a range delete on the row id: one row in the steady state), and records in
``events_trimmed`` the highest id it deleted, so a reader resuming from an id with
deleted events after it is told (``EventsGoneError``) instead of skipping them.
"""

from __future__ import annotations

import re
import sqlite3
import time
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from hopindex.backends.events.codec import (
    MAX_EVENTS,
    check_limit,
    check_retention,
    decode_allow_private,
    decode_data,
    encode_data,
    sorted_webhooks,
)
from hopindex.backends.sqlite import SqliteFile
from hopindex.core.errors import BackendError, EventsGoneError, InvalidInputError
from hopindex.core.events import Event, EventType, Webhook
from hopindex.core.logging import get_logger

log = get_logger(__name__)

POLL_INTERVAL_S = 0.05
_ID = re.compile(r"[0-9]{1,18}")  # 18 digits stay inside SQLite's signed 64-bit integers

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS events (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        type TEXT NOT NULL,
        idx TEXT NOT NULL,
        job_id TEXT NOT NULL,
        data TEXT NOT NULL,
        created_at REAL NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS events_by_index ON events (idx, id)",
    """CREATE TABLE IF NOT EXISTS webhooks (
        webhook_id TEXT PRIMARY KEY,
        idx TEXT NOT NULL,
        url TEXT NOT NULL,
        secret TEXT NOT NULL,
        created_at REAL NOT NULL)""",
    # One row: the highest event id ever trimmed away. Every id up to it is gone (a
    # trim deletes a prefix of the ids), and none after it was trimmed.
    """CREATE TABLE IF NOT EXISTS events_trimmed (
        one INTEGER PRIMARY KEY CHECK (one = 1),
        through INTEGER NOT NULL)""",
)
_COLUMNS = "id, type, idx, job_id, data, created_at"
# Added after the table: the registering process's decision on private targets
# (core.events.Webhook); NULL on webhooks stored before it was recorded.
_ALLOW_PRIVATE = "ALTER TABLE webhooks ADD COLUMN allow_private INTEGER"


_WHAT = "sqlite event log"


def _event(row: tuple[Any, ...]) -> Event:
    event_id, event_type, index, job_id, data, created_at = row
    return Event(event_id=str(event_id), event_type=EventType(event_type), index=index,
                 job_id=job_id, data=decode_data(data), created_at=float(created_at))


class SqliteEventLog:
    """``EventLog`` on one SQLite file; safe for several threads and processes.

    One connection behind a lock (``SqliteFile``, as the state store); other processes
    are coordinated by SQLite's file locks with ``busy_timeout``, and WAL lets
    followers read during appends.
    """

    def __init__(self, path: Path, *, retention: int = MAX_EVENTS) -> None:
        self._retention = check_retention(retention)
        self._db = SqliteFile(path, _WHAT)
        try:
            with self._db.transaction("create schema", write=True) as conn:
                for statement in _SCHEMA:
                    conn.execute(statement)
                # In the same write transaction: two processes opening an older file at
                # once add the column once.
                columns = {row[1] for row in conn.execute("PRAGMA table_info(webhooks)")}
                if "allow_private" not in columns:
                    conn.execute(_ALLOW_PRIVATE)
        except BaseException:
            self._db.close()
            raise
        log.info("event_log_opened", backend="sqlite", path=str(self._db.path))

    @property
    def path(self) -> Path:
        return self._db.path

    @property
    def retention(self) -> int:
        """How many events the log keeps, the newest."""
        return self._retention

    def _transaction(self, operation: str, *,
                     write: bool) -> AbstractContextManager[sqlite3.Connection]:
        return self._db.transaction(operation, write=write)

    # -- events ----------------------------------------------------------------------------

    def append_event(self, event_type: EventType, index: str, job_id: str,
                     data: dict[str, Any]) -> Event:
        encoded = encode_data(data)
        created_at = time.time()
        with self._transaction("append_event", write=True) as conn:
            cursor = conn.execute(
                "INSERT INTO events (type, idx, job_id, data, created_at) VALUES (?, ?, ?, ?, ?)",
                (EventType(event_type).value, index, job_id, encoded, created_at))
            row_id = cursor.lastrowid
            assert row_id is not None  # an INSERT into a rowid table always sets it
            self._trim(conn, row_id - self._retention)
        # The stored data, not the caller's dict: a later change to it must not show.
        return Event(event_id=str(row_id), event_type=EventType(event_type), index=index,
                     job_id=job_id, data=decode_data(encoded), created_at=created_at)

    @staticmethod
    def _trim(conn: sqlite3.Connection, through: int) -> None:
        """Delete every event up to id ``through``, and record ``through`` when that
        deleted any. Ids are issued without holes (AUTOINCREMENT; a failed append rolls
        its id back with it), so a position below the recorded id has deleted events
        after it, and one at or above it has none."""
        if through < 1:
            return
        deleted = conn.execute("DELETE FROM events WHERE id <= ?", (through,)).rowcount
        if deleted:
            conn.execute("INSERT INTO events_trimmed (one, through) VALUES (1, ?) "
                         "ON CONFLICT (one) DO UPDATE SET "
                         "through = max(through, excluded.through)", (through,))

    def _check_kept(self, conn: sqlite3.Connection, position: int, asked: str | None) -> None:
        """EventsGoneError when events after id ``position`` were trimmed away; the
        reader asked for those after ``asked`` (None: from the start, where whatever is
        kept is all there is to read)."""
        if asked is None:
            return
        through, oldest = conn.execute("SELECT (SELECT through FROM events_trimmed), "
                                       "(SELECT min(id) FROM events)").fetchone()
        if through is not None and position < through:
            raise EventsGoneError(asked, None if oldest is None else str(oldest),
                                  self._retention)

    def _position(self, conn: sqlite3.Connection, after_id: str | None) -> int:
        """The row id to read after; see the ``EventLog`` docstring for what is accepted.
        Whether events after it were trimmed is ``_read``'s to say."""
        if after_id is None:
            return 0
        if not _ID.fullmatch(after_id):
            raise InvalidInputError(f"malformed event id {after_id!r}: this log's ids are "
                                    "decimal integers", where="from")
        position = int(after_id)
        found = conn.execute("SELECT EXISTS (SELECT 1 FROM events WHERE id = ?), "
                             "(SELECT min(id) FROM events)", (position,)).fetchone()
        exists, oldest = found
        if exists or (oldest is not None and position < oldest):
            return position
        raise InvalidInputError(f"unknown event id {after_id!r}: this log never issued it",
                                where="from")

    def _read(self, conn: sqlite3.Connection, position: int, index: str | None,
              limit: int, asked: str | None) -> list[Event]:
        # At every read, not only the first: a waiter's position may be trimmed past
        # between two polls.
        self._check_kept(conn, position, asked)
        if index is None:
            rows = conn.execute(f"SELECT {_COLUMNS} FROM events WHERE id > ? "
                                "ORDER BY id LIMIT ?", (position, limit)).fetchall()
        else:
            rows = conn.execute(f"SELECT {_COLUMNS} FROM events WHERE idx = ? AND id > ? "
                                "ORDER BY id LIMIT ?", (index, position, limit)).fetchall()
        return [_event(row) for row in rows]

    def read_events(self, after_id: str | None = None, index: str | None = None,
                    limit: int = 100) -> list[Event]:
        check_limit(limit)
        with self._transaction("read_events", write=False) as conn:
            return self._read(conn, self._position(conn, after_id), index, limit, after_id)

    def wait_events(self, after_id: str | None, index: str | None, timeout_s: float,
                    limit: int = 100) -> list[Event]:
        check_limit(limit)
        deadline = time.monotonic() + max(0.0, timeout_s)
        with self._transaction("wait_events", write=False) as conn:
            position = self._position(conn, after_id)
            found = self._read(conn, position, index, limit, after_id)
        # The lock is released between polls so appends and other readers go on.
        while not found and time.monotonic() < deadline:
            time.sleep(min(POLL_INTERVAL_S, max(0.0, deadline - time.monotonic())))
            with self._transaction("wait_events", write=False) as conn:
                found = self._read(conn, position, index, limit, after_id)
        return found

    def get_event(self, event_id: str) -> Event | None:
        if not _ID.fullmatch(event_id):
            return None
        with self._transaction("get_event", write=False) as conn:
            row = conn.execute(f"SELECT {_COLUMNS} FROM events WHERE id = ?",
                               (int(event_id),)).fetchone()
        return None if row is None else _event(row)

    def last_event_id(self) -> str | None:
        with self._transaction("last_event_id", write=False) as conn:
            (newest,) = conn.execute("SELECT max(id) FROM events").fetchone()
        return None if newest is None else str(newest)

    # -- webhooks --------------------------------------------------------------------------

    def put_webhook(self, webhook: Webhook) -> Webhook:
        with self._transaction("put_webhook", write=True) as conn:
            conn.execute("INSERT OR REPLACE INTO webhooks (webhook_id, idx, url, secret, "
                         "created_at, allow_private) VALUES (?, ?, ?, ?, ?, ?)",
                         (webhook.webhook_id, webhook.index, webhook.url, webhook.secret,
                          webhook.created_at, webhook.allow_private))
        return webhook

    def list_webhooks(self, index: str | None = None) -> list[Webhook]:
        query = "SELECT webhook_id, idx, url, secret, created_at, allow_private FROM webhooks"
        with self._transaction("list_webhooks", write=False) as conn:
            rows = (conn.execute(query).fetchall() if index is None
                    else conn.execute(f"{query} WHERE idx = ?", (index,)).fetchall())
        try:
            return sorted_webhooks([
                Webhook(webhook_id=w, index=i, url=u, secret=s, created_at=float(c),
                        allow_private=decode_allow_private(a))
                for w, i, u, s, c, a in rows])
        except ValueError as exc:
            raise BackendError(f"event log holds a malformed webhook record: {exc}") from exc

    def delete_webhook(self, webhook_id: str) -> bool:
        with self._transaction("delete_webhook", write=True) as conn:
            deleted = conn.execute("DELETE FROM webhooks WHERE webhook_id = ?",
                                   (webhook_id,)).rowcount
        return bool(deleted)

    def close(self) -> None:
        if self._db.close():
            log.debug("event_log_closed", backend="sqlite", path=str(self._db.path))
