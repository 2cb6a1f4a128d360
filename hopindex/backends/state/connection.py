"""One SQLite connection shared by the store's threads, and the transaction helper.

A single connection behind a lock, rather than one per thread: the state store's
statements are short, and serialising them in-process avoids SQLite's
busy-wait back-off between threads of one process (which sleeps in steps of up
to 100 ms). Other processes on the same file are coordinated by SQLite's file
locks with ``busy_timeout``; WAL lets their readers proceed during a write.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hopindex.backends.state.schema import migrate
from hopindex.core.errors import BackendError, BackendUnavailableError
from hopindex.core.logging import get_logger

log = get_logger(__name__)

BUSY_TIMEOUT_MS = 30_000


# One encoder for every call: json.dumps with non-default arguments builds a new
# encoder each time, a third of the cost of a 10k-unit put.
_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)


def dumps(value: Any) -> str:
    """Compact JSON: analyses and unit provenance are stored for thousands of rows."""
    return _ENCODER.encode(value)


def id_list(ids: Sequence[str]) -> str:
    """Ids as one JSON parameter for ``json_each``: no limit on host parameters, order kept."""
    return dumps(list(ids))


def wrap_sqlite_error(what: str, operation: str, exc: sqlite3.Error) -> BackendError:
    """``exc`` as a ``BackendError`` naming ``what`` (the store) and the operation."""
    message = f"{what}: {operation} failed: {exc}"
    if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc).lower():
        # Another process held the write lock past busy_timeout: worth retrying.
        return BackendUnavailableError(message)
    return BackendError(message)


def _wrap(operation: str, exc: sqlite3.Error) -> BackendError:
    return wrap_sqlite_error("sqlite state store", operation, exc)


@contextmanager
def sqlite_transaction(conn: sqlite3.Connection, what: str, operation: str, *,
                       write: bool) -> Iterator[sqlite3.Connection]:
    """One transaction on ``conn`` (the caller holds its lock): all of it lands, or none."""
    try:
        conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
    except sqlite3.Error as exc:
        raise wrap_sqlite_error(what, operation, exc) from exc
    try:
        yield conn
    except sqlite3.Error as exc:
        conn.rollback()
        raise wrap_sqlite_error(what, operation, exc) from exc
    except BaseException:
        conn.rollback()
        raise
    try:
        conn.execute("COMMIT")
    except sqlite3.Error as exc:
        conn.rollback()
        raise wrap_sqlite_error(what, operation, exc) from exc


class SqliteConnection:
    """Opens the file, migrates it, and hands out transactions under one lock."""

    def __init__(self, path: Path) -> None:
        self._path = Path(path)
        self._lock = threading.RLock()
        self._closed = False
        try:
            self._path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise BackendError(f"sqlite state store: cannot create {self._path.parent}: "
                               f"{exc}") from exc
        self._pid = os.getpid()
        self._conn = self._open()
        try:
            with self._transaction("migrate", write=True) as conn:
                found, current = migrate(conn)
        except BaseException:
            self._conn.close()
            raise
        log.info("state_store_opened", path=str(self._path), schema_from=found,
                 schema_version=current)

    @property
    def path(self) -> Path:
        return self._path

    def _open(self) -> sqlite3.Connection:
        try:
            # isolation_level=None: transactions are begun explicitly below, so a
            # write can take the lock up front (BEGIN IMMEDIATE) instead of
            # upgrading a read lock mid-transaction, which can deadlock.
            conn = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False)
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            conn.execute("PRAGMA journal_mode = WAL")
            # NORMAL under WAL: a power loss may drop the last commits but never
            # corrupts the file; every write here is an idempotent upsert anyway.
            conn.execute("PRAGMA synchronous = NORMAL")
        except sqlite3.Error as exc:
            raise _wrap(f"open {self._path}", exc) from exc
        return conn

    def _connection(self) -> sqlite3.Connection:
        if self._closed:
            raise BackendError(f"sqlite state store {self._path} is closed")
        if self._pid != os.getpid():
            # A forked worker must not share the parent's connection (SQLite
            # forbids carrying one across fork); the inherited one is abandoned.
            self._pid = os.getpid()
            self._conn = self._open()
        return self._conn

    @contextmanager
    def _transaction(self, operation: str, *, write: bool) -> Iterator[sqlite3.Connection]:
        """One transaction per call: all of a bulk write lands, or none of it."""
        with self._lock, sqlite_transaction(self._connection(), "sqlite state store",
                                            operation, write=write) as conn:
            yield conn

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._pid == os.getpid():
                self._conn.close()
        log.debug("state_store_closed", path=str(self._path))
