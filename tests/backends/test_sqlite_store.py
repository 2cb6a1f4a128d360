"""The SQLite state store: the shared contract plus what only a file on disk can show."""

from __future__ import annotations

import json
import multiprocessing
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import ClassVar

import pytest

from hopindex.backends.protocols import StateStore
from hopindex.backends.state import SqliteStateStore
from hopindex.backends.state.connection import dumps
from hopindex.backends.state.schema import MIGRATIONS
from hopindex.core.errors import BackendError
from hopindex.core.models import FailedItem, Group, Job, UnitKind
from hopindex.methods.extractive.analyses import decode_analysis
from hopindex.testing.contracts.groups import GroupsContract
from hopindex.testing.contracts.state_records import analysis, new_job, unit
from hopindex.testing.contracts.state_store import StateStoreContract
from tests.backends.layout_records import encoded_analysis

ROUNDS = 40


class TestSqliteStateStore(StateStoreContract, GroupsContract):
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


_TRANSACTION_CONTROL = ("BEGIN", "COMMIT", "END", "ROLLBACK", "SAVEPOINT", "RELEASE")


def _statements(store: SqliteStateStore, write: Callable[[], None]) -> list[tuple[str, bool]]:
    """Each statement SQLite started on the store's connection during ``write`` (each
    row of an executemany is one), and whether a transaction was open as it started:
    one that was not ran as a transaction of its own (autocommit)."""
    conn = store._db._conn
    seen: list[tuple[str, bool]] = []
    conn.set_trace_callback(lambda sql: seen.append((sql, conn.in_transaction)))
    try:
        write()
    finally:
        conn.set_trace_callback(None)
    return seen


def test_ten_thousand_units_in_one_transaction(store: SqliteStateStore) -> None:
    """Bulk unit writes are one transaction of executemany: 10k units, written and then
    rewritten, take one BEGIN and one COMMIT each time, never one per row."""
    # The cost of a bulk write is its transactions (each commit appends to the WAL
    # and takes the file lock), so counting them guards against a commit per row
    # without a clock, which a busy machine would fail; the speed itself is measured
    # by benchmarks/state_store_bulk.py.
    units = [unit("bulk", f"k{i}", docs=(f"d{i % 500}", "shared")) for i in range(10_000)]
    for _ in ("insert", "update"):
        statements = _statements(store, lambda: store.put_units(units))
        assert statements[0] == ("BEGIN IMMEDIATE", False)
        assert statements[-1] == ("COMMIT", True)
        inside = statements[1:-1]
        assert not [sql for sql, _ in inside if sql.upper().startswith(_TRANSACTION_CONTROL)]
        assert all(open_ for _, open_ in inside), "a row was written in autocommit"
        # The rows went through this connection (a statement per unit at least), so the
        # checks above saw them.
        assert len(inside) >= 10_000
        assert store.count_units("bulk") == {UnitKind.PASSAGE: 10_000}


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


# -- the groups-and-records migration (schema version 4) -------------------------------------

GROUPS_VERSION = 4


def _file_at_version(path: Path, version: int) -> sqlite3.Connection:
    """A state file as an older hopindex left it: the first ``version`` migrations only."""
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
    conn.execute("INSERT INTO schema_version (version) VALUES (?)", (version,))
    for script in MIGRATIONS[:version]:
        conn.executescript(script)
    return conn


def _put_legacy_unit(conn: sqlite3.Connection, index: str, unit_id: str,
                     docs: tuple[str, ...]) -> None:
    """A bridge unit row and its provenance rows, as ``put_units`` wrote them at version 3."""
    conn.execute("INSERT INTO units (idx, unit_id, kind, text, source_doc_ids, method,"
                 " source_key, entities, level, metadata) VALUES (?, ?, 'bridge', 't', ?,"
                 " 'extractive', ?, '[]', 1, '{}')", (index, unit_id, dumps(docs), unit_id))
    conn.executemany("INSERT INTO unit_sources (idx, unit_id, doc_id) VALUES (?, ?, ?)",
                     [(index, unit_id, d) for d in docs])


def test_migration_copies_bridges_and_analyses(tmp_path: Path) -> None:
    """Opening a version-3 file moves each bridge into a "bridge" group whose members are
    the sorted union of its units' documents, and each analysis, unchanged, into an
    "extractive.analysis" record that still decodes to the same TextAnalysis."""
    path = tmp_path / "state.sqlite3"
    conn = _file_at_version(path, GROUPS_VERSION - 1)
    with conn:
        _put_legacy_unit(conn, "wiki", "b1", ("d2", "é1"))
        _put_legacy_unit(conn, "wiki", "b2", ("z9", "d2", "d1"))
        _put_legacy_unit(conn, "other", "b1", ("d7",))
        conn.executemany("INSERT INTO bridges (idx, entity, unit_ids) VALUES (?, ?, ?)",
                         [("wiki", "paris", dumps(["b2", "b1"])),
                          ("wiki", "ghost", dumps(["gone"])),
                          ("other", "paris", dumps(["b1"]))])
        conn.executemany("INSERT INTO analyses (idx, doc_id, data) VALUES (?, ?, ?)",
                         [("wiki", "d1", encoded_analysis(analysis(1))),
                          ("other", "d1", encoded_analysis(analysis(2)))])
    conn.close()
    store = SqliteStateStore(path)
    try:
        assert store.get_groups("wiki", "bridge", ["paris", "ghost"]) == {
            "paris": Group(namespace="bridge", key="paris", unit_ids=("b2", "b1"),
                           members=("d1", "d2", "z9", "é1")),
            "ghost": Group(namespace="bridge", key="ghost", unit_ids=("gone",), members=())}
        assert store.groups_of_documents("wiki", "bridge", ["é1"]) == {"paris"}
        assert store.groups_of_documents("wiki", "bridge", ["d7"]) == set()
        assert store.get_groups("other", "bridge", ["paris"])["paris"].members == ("d7",)
        assert store.namespaces_of_groups("wiki") == ["bridge"]
        copied = store.get_records("wiki", "extractive.analysis", ["d1"])
        assert copied == {"d1": json.loads(encoded_analysis(analysis(1)))}
        assert decode_analysis(copied["d1"]) == analysis(1)
        assert store.get_records("other", "extractive.analysis", ["d1"]) == {
            "d1": json.loads(encoded_analysis(analysis(2)))}
        # A later replacement finds the copied members in the reverse index.
        assert store.replace_group("wiki", "bridge", "paris", ["b3"], ["d1"]) == ["b2", "b1"]
        assert store.groups_of_documents("wiki", "bridge", ["d2", "z9", "é1"]) == set()
    finally:
        store.close()
    with sqlite3.connect(path) as check:
        assert check.execute("SELECT version FROM schema_version").fetchall() == [
            (len(MIGRATIONS),)]
        # The old tables are left as they were (a later migration drops them).
        assert check.execute("SELECT unit_ids FROM bridges WHERE idx = 'wiki'"
                             " AND entity = 'paris'").fetchall() == [(dumps(["b2", "b1"]),)]
        assert check.execute("SELECT count(*) FROM analyses").fetchall() == [(2,)]
    check.close()


def test_migration_of_a_file_without_bridges_or_analyses(tmp_path: Path) -> None:
    """A version-3 file with nothing to copy opens with empty groups and records."""
    path = tmp_path / "state.sqlite3"
    _file_at_version(path, GROUPS_VERSION - 1).close()
    store = SqliteStateStore(path)
    try:
        assert store.namespaces_of_groups("wiki") == []
        assert store.get_records("wiki", "extractive.analysis", ["d1"]) == {}
    finally:
        store.close()


def test_group_queries_use_indexes(store: SqliteStateStore) -> None:
    """Finding groups from documents, deleting a document's records in every namespace
    and stepping to the next namespace seek an index instead of scanning a table."""
    queries = [
        ("SELECT group_key FROM group_members WHERE idx = ? AND namespace = ? AND doc_id IN"
         " (SELECT value FROM json_each(?))", ("i", "bridge", '["d1"]'),
         "SEARCH group_members USING PRIMARY KEY (idx=? AND namespace=? AND doc_id=?)"),
        ("DELETE FROM records WHERE idx = ? AND record_key IN"
         " (SELECT value FROM json_each(?))", ("i", '["d1"]'),
         "SEARCH records USING INDEX records_by_key (idx=? AND record_key=?)"),
        ("SELECT min(namespace) FROM unit_groups WHERE idx = ? AND namespace > ?", ("i", "a"),
         "SEARCH unit_groups USING PRIMARY KEY (idx=? AND namespace>?)"),
    ]
    with store._transaction("explain", write=False) as conn:
        for sql, params, expected in queries:
            plan = [str(row[-1]) for row in
                    conn.execute(f"EXPLAIN QUERY PLAN {sql}", params).fetchall()]
            assert expected in plan, plan


# -- the qualified failed-item phases migration (schema version 5) ---------------------------

QUALIFIED_PHASES_VERSION = 5


def _put_legacy_failed(conn: sqlite3.Connection, index: str, phase: str, item: str,
                       reason: str = "LLM unavailable") -> None:
    """A failed-item row as ``put_failed_items`` wrote it (the phase is in the record too)."""
    item_record = FailedItem(phase=phase, item=item, reason=reason, job_id="j0", failed_at=1.5)
    conn.execute("INSERT INTO failed_items (idx, phase, item, data) VALUES (?, ?, ?, ?)",
                 (index, phase, item, dumps(item_record.as_dict())))


def _legacy_failed_file(path: Path, version: int) -> None:
    """A file at ``version`` holding bare "stage1"/"stage2" items of an extractive index,
    an indexrag index and an index no longer in the catalogue."""
    conn = _file_at_version(path, version)
    with conn:
        conn.executemany("INSERT INTO indexes (name, method, created_at, options)"
                         " VALUES (?, ?, 1.0, '{}')",
                         [("wiki", "extractive"), ("news", "indexrag")])
        for index in ("wiki", "news", "gone"):
            _put_legacy_failed(conn, index, "stage1", "d1")
            _put_legacy_failed(conn, index, "stage2", "paris")
            _put_legacy_failed(conn, index, "purge", "u1")
        # Recorded again under the new name after an upgraded job failed it once more.
        _put_legacy_failed(conn, "news", "indexrag.stage1", "d1", "newer failure")
    conn.close()


def _failed(phase: str, item: str, reason: str = "LLM unavailable") -> FailedItem:
    return FailedItem(phase=phase, item=item, reason=reason, job_id="j0", failed_at=1.5)


@pytest.mark.parametrize("version", [QUALIFIED_PHASES_VERSION - 2, QUALIFIED_PHASES_VERSION - 1])
def test_migration_qualifies_failed_item_phases(tmp_path: Path, version: int) -> None:
    """Opening a file from before qualified phase names renames each index's "stage1" and
    "stage2" items to "<method>.stage1"/"<method>.stage2" (key and record), keeps an item
    already recorded under the new name, leaves "purge" alone and drops the old-named
    items of an index missing from the catalogue; a second open changes nothing."""
    path = tmp_path / "state.sqlite3"
    _legacy_failed_file(path, version)
    store = SqliteStateStore(path)
    try:
        assert store.list_failed_items("wiki") == [
            _failed("extractive.stage1", "d1"), _failed("extractive.stage2", "paris"),
            _failed("purge", "u1")]
        assert store.list_failed_items("news") == [
            _failed("indexrag.stage1", "d1", "newer failure"),
            _failed("indexrag.stage2", "paris"), _failed("purge", "u1")]
        assert store.list_failed_items("gone") == [_failed("purge", "u1")]
        assert store.list_failed_items("wiki", "stage1") == []
        # Clearing under the new name reaches the migrated item.
        store.clear_failed_items("wiki", "extractive.stage2", ["paris"])
        # A bare name written now would be renamed by a migration run twice.
        store.put_failed_items("wiki", [_failed("stage2", "probe")])
        before = store.list_failed_items("wiki") + store.list_failed_items("news")
    finally:
        store.close()
    store = SqliteStateStore(path)
    try:
        assert store.list_failed_items("wiki") + store.list_failed_items("news") == before
        assert _failed("stage2", "probe") in before
    finally:
        store.close()
