"""One SQLite file shared by a process's threads, and the transaction helper, for every
embedded store that keeps a file of its own (state, event log, LLM response cache).

A single connection behind a lock, rather than one per thread: the statements are
short, and serialising them in-process avoids SQLite's busy-wait back-off between
threads of one process (which sleeps in steps of up to 100 ms). Other processes on
the same file are coordinated by SQLite's file locks with ``busy_timeout``; WAL lets
their readers proceed during a write.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from hopindex.core.errors import BackendError, BackendUnavailableError

BUSY_TIMEOUT_MS = 30_000


def wrap_sqlite_error(what: str, operation: str, exc: sqlite3.Error) -> BackendError:
    """``exc`` as a ``BackendError`` naming ``what`` (the store) and the operation."""
    message = f"{what}: {operation} failed: {exc}"
    if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc).lower():
        # Another process held the write lock past busy_timeout: worth retrying.
        return BackendUnavailableError(message)
    return BackendError(message)


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


def _enter_wal(conn: sqlite3.Connection) -> None:
    """Switch ``conn``'s file to WAL, waiting out other processes doing the same.

    SQLite answers a journal-mode change that meets another connection's lock with
    "database is locked" at once, without calling the busy handler, so processes
    that open a new file together would fail here; they retry until the
    busy_timeout a statement would have waited.
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    pause = 0.005
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc).lower() or time.monotonic() >= deadline:
                raise
        time.sleep(pause)  # back-off on another process's lock, as SQLite's own does
        pause = min(pause * 2, 0.1)


class SqliteFile:
    """One SQLite file behind one connection and one lock, for all of a process's threads.

    A forked child (a prefork worker) reopens the file with a lock of its own: SQLite
    forbids carrying a connection across fork, and a lock another parent thread held
    at the fork would never be released in the child.
    """

    def __init__(self, path: Path, what: str) -> None:
        self.path = Path(path)
        self._what = what
        self._lock = threading.RLock()
        self._closed = False
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise BackendError(f"{what}: cannot create {self.path.parent}: {exc}") from exc
        self._pid = os.getpid()
        self._conn = self._open()

    def _open(self) -> sqlite3.Connection:
        try:
            # isolation_level=None: transactions are begun explicitly, so a write can
            # take the lock up front (BEGIN IMMEDIATE) instead of upgrading a read
            # lock mid-transaction, which can deadlock.
            conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            _enter_wal(conn)
            # NORMAL under WAL: a power loss may drop the last commits but never
            # corrupts the file; every write here is an idempotent upsert or an append.
            conn.execute("PRAGMA synchronous = NORMAL")
        except sqlite3.Error as exc:
            raise wrap_sqlite_error(self._what, f"open {self.path}", exc) from exc
        return conn

    def _check_process(self) -> None:
        if self._pid != os.getpid():
            self._pid = os.getpid()
            self._lock = threading.RLock()
            self._conn = self._open()

    @contextmanager
    def transaction(self, operation: str, *, write: bool) -> Iterator[sqlite3.Connection]:
        """One transaction per call: all of a bulk write lands, or none of it."""
        self._check_process()
        with self._lock:
            if self._closed:
                raise BackendError(f"{self._what} {self.path} is closed")
            with sqlite_transaction(self._conn, self._what, operation, write=write) as conn:
                yield conn

    def close(self) -> bool:
        """Close the connection; True when this call closed it."""
        if self._pid != os.getpid():
            # A forked child's inherited connection and lock are the parent's: closing
            # must touch neither (the lock may be held for ever, see _check_process).
            self._closed = True
            return False
        with self._lock:
            if self._closed:
                return False
            self._closed = True
            self._conn.close()
        return True
