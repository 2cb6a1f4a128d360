"""The SQLite state store: the shared contract plus what only a file on disk can show."""

from __future__ import annotations

import multiprocessing
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import ClassVar

import pytest

from hopindex.backends.protocols import StateStore
from hopindex.backends.state import SqliteStateStore
from hopindex.backends.state.schema import MIGRATIONS
from hopindex.core.errors import BackendError
from hopindex.core.models import Job, UnitKind
from tests.backends.contracts.state_contract import StateStoreContract
from tests.backends.contracts.state_records import new_job, unit

ROUNDS = 40


class TestSqliteStateStore(StateStoreContract):
    persistent: ClassVar[bool] = True

    @pytest.fixture
    def path(self, tmp_path: Path) -> Path:
        return tmp_path / "nested" / "dir" / "state.sqlite3"

    @pytest.fixture
    def store(self, path: Path) -> Iterator[StateStore]:
        store = SqliteStateStore(path)
        yield store
        store.close()

    @pytest.fixture
    def reopen_store(self, path: Path) -> Callable[[], StateStore]:
        return lambda: SqliteStateStore(path)


def _bump(job: Job) -> None:
    job.units_embedded += 1


def _bump_in_own_store(path: Path, job_id: str) -> None:
    store = SqliteStateStore(path)
    try:
        for _ in range(ROUNDS):
            store.update_job(job_id, _bump)
    finally:
        store.close()


def _bump_in_inherited_store(store: SqliteStateStore, job_id: str) -> None:
    for _ in range(ROUNDS):
        store.update_job(job_id, _bump)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteStateStore]:
    store = SqliteStateStore(tmp_path / "state.sqlite3")
    yield store
    store.close()


def test_opens_in_wal_mode_with_schema_version(tmp_path: Path) -> None:
    """A new file is created with its folders, in WAL mode, stamped with the schema version."""
    path = tmp_path / "a" / "b" / "state.sqlite3"
    SqliteStateStore(path).close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("SELECT version FROM schema_version").fetchall() == [
            (len(MIGRATIONS),)]
    conn.close()


def test_synchronous_is_normal(store: SqliteStateStore) -> None:
    """Commits do not fsync on every write (synchronous=NORMAL, level 1)."""
    with store._transaction("read pragma", write=False) as conn:
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 1


def test_refuses_a_newer_schema(tmp_path: Path) -> None:
    """A file written by a newer hopindex is refused instead of misread."""
    path = tmp_path / "state.sqlite3"
    SqliteStateStore(path).close()
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("UPDATE schema_version SET version = ?", (len(MIGRATIONS) + 1,))
    conn.close()
    with pytest.raises(BackendError, match="newer"):
        SqliteStateStore(path)


def test_reopen_keeps_schema_version_row_single(tmp_path: Path) -> None:
    """Opening an existing file again does not re-run or re-stamp migrations."""
    path = tmp_path / "state.sqlite3"
    for _ in range(3):
        SqliteStateStore(path).close()
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT count(*) FROM schema_version").fetchone()[0] == 1
    conn.close()


def test_use_after_close_is_a_backend_error(store: SqliteStateStore) -> None:
    """A closed store refuses work with BackendError; closing twice is harmless."""
    store.close()
    store.close()
    with pytest.raises(BackendError, match="closed"):
        store.document_hashes("x")


def test_ten_thousand_units_in_well_under_a_second(store: SqliteStateStore) -> None:
    """Bulk unit writes are one transaction of executemany: 10k units take < 1 s."""
    units = [unit("bulk", f"k{i}", docs=(f"d{i % 500}", "shared")) for i in range(10_000)]
    started = time.perf_counter()
    store.put_units(units)
    elapsed = time.perf_counter() - started
    assert store.count_units("bulk") == {UnitKind.PASSAGE: 10_000}
    assert elapsed < 1.0, f"put_units of 10k units took {elapsed:.2f}s"
    started = time.perf_counter()
    store.put_units(units)
    assert time.perf_counter() - started < 1.0


def test_processes_sharing_one_file_lose_no_update(tmp_path: Path) -> None:
    """Several processes updating one job through their own stores lose no increment."""
    path = tmp_path / "state.sqlite3"
    store = SqliteStateStore(path)
    job = new_job("shared")
    store.create_job(job)
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_bump_in_own_store, args=(path, job.job_id)) for _ in range(3)]
    for p in procs:
        p.start()
    for _ in range(ROUNDS):
        store.update_job(job.job_id, _bump)
    for p in procs:
        p.join(timeout=120)
        assert p.exitcode == 0
    final = store.get_job(job.job_id)
    store.close()
    assert final is not None
    assert final.units_embedded == 4 * ROUNDS


def test_forked_child_reopens_its_connection(store: SqliteStateStore) -> None:
    """A store object inherited across fork opens its own connection and stays consistent."""
    job = new_job("forked")
    store.create_job(job)
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_bump_in_inherited_store, args=(store, job.job_id))
             for _ in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
        assert p.exitcode == 0
    final = store.get_job(job.job_id)
    assert final is not None
    assert final.units_embedded == 2 * ROUNDS
