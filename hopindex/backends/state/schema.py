"""The SQLite state schema as an ordered list of migrations.

The ``schema_version`` table records how many migrations a file has seen, so a
later release appends a migration instead of editing this one; a file written by
a newer hopindex is refused rather than silently misread.
"""

from __future__ import annotations

import sqlite3

from hopindex.core.errors import BackendError

# Index names are column values ("idx": "index" is an SQL keyword). Unit and
# mention tables are WITHOUT ROWID where rows are small and always reached by
# their key; documents keep a rowid because their texts can be megabytes.
_V1 = """
CREATE TABLE indexes (
    name TEXT PRIMARY KEY,
    method TEXT NOT NULL,
    created_at REAL NOT NULL,
    options TEXT NOT NULL
);
CREATE TABLE documents (
    idx TEXT NOT NULL,
    doc_id TEXT NOT NULL,
    title TEXT NOT NULL,
    text TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    metadata TEXT NOT NULL,
    UNIQUE (idx, doc_id)
);
CREATE TABLE analyses (
    idx TEXT NOT NULL,
    doc_id TEXT NOT NULL,
    data TEXT NOT NULL,
    UNIQUE (idx, doc_id)
);
CREATE TABLE units (
    idx TEXT NOT NULL,
    unit_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    text TEXT NOT NULL,
    source_doc_ids TEXT NOT NULL,
    method TEXT NOT NULL,
    source_key TEXT NOT NULL,
    entities TEXT NOT NULL,
    level INTEGER NOT NULL,
    metadata TEXT NOT NULL,
    embedded INTEGER NOT NULL DEFAULT 0,
    UNIQUE (idx, unit_id)
);
CREATE INDEX units_by_kind ON units (idx, kind);
CREATE TABLE unit_sources (
    idx TEXT NOT NULL,
    unit_id TEXT NOT NULL,
    doc_id TEXT NOT NULL,
    PRIMARY KEY (idx, unit_id, doc_id)
) WITHOUT ROWID;
CREATE INDEX unit_sources_by_doc ON unit_sources (idx, doc_id);
CREATE TABLE mentions (
    idx TEXT NOT NULL,
    doc_id TEXT NOT NULL,
    source TEXT NOT NULL,
    entity TEXT NOT NULL,
    count INTEGER NOT NULL,
    PRIMARY KEY (idx, doc_id, source, entity)
) WITHOUT ROWID;
CREATE INDEX mentions_by_entity ON mentions (idx, entity);
CREATE INDEX mentions_by_source ON mentions (idx, source, entity);
CREATE TABLE bridges (
    idx TEXT NOT NULL,
    entity TEXT NOT NULL,
    unit_ids TEXT NOT NULL,
    PRIMARY KEY (idx, entity)
) WITHOUT ROWID;
CREATE TABLE jobs (
    job_id TEXT PRIMARY KEY,
    idx TEXT NOT NULL,
    created_at REAL NOT NULL,
    data TEXT NOT NULL
);
CREATE INDEX jobs_by_time ON jobs (created_at);
CREATE INDEX jobs_by_index_time ON jobs (idx, created_at);
"""

# A running job's fan-outs, newest last (``JobStore.add_dispatch``); a finished
# job's are cleared.
_V2 = """
CREATE TABLE dispatches (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id TEXT NOT NULL,
    data TEXT NOT NULL
);
CREATE INDEX dispatches_by_job ON dispatches (job_id, seq);
"""

# Work items that failed for good, per index, until a later job redoes them
# (``FailedItemStore``).
_V3 = """
CREATE TABLE failed_items (
    idx TEXT NOT NULL,
    phase TEXT NOT NULL,
    item TEXT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (idx, phase, item)
) WITHOUT ROWID;
"""

MIGRATIONS: tuple[str, ...] = (_V1, _V2, _V3)

# The tables every index owns rows in; deleting an index empties all of them.
INDEX_TABLES: tuple[str, ...] = (
    "documents", "analyses", "units", "unit_sources", "mentions", "bridges", "jobs",
    "failed_items",
)


def migrate(conn: sqlite3.Connection) -> tuple[int, int]:
    """Bring the schema up to date inside the caller's write transaction.

    Returns the version found and the version left, so opening can log upgrades.
    """
    conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
    row = conn.execute("SELECT version FROM schema_version").fetchone()
    found = int(row[0]) if row else 0
    if found > len(MIGRATIONS):
        raise BackendError(
            f"state database has schema version {found}, newer than this hopindex "
            f"understands ({len(MIGRATIONS)}); upgrade hopindex to open it")
    for script in MIGRATIONS[found:]:
        # executescript would COMMIT the caller's transaction; run statement by statement.
        for statement in script.split(";"):
            if statement.strip():
                conn.execute(statement)
    if row is None:
        conn.execute("INSERT INTO schema_version (version) VALUES (?)", (len(MIGRATIONS),))
    else:
        conn.execute("UPDATE schema_version SET version = ?", (len(MIGRATIONS),))
    return found, len(MIGRATIONS)
