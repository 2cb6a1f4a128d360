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

# Method-owned groups and records (``GroupStore``, ``RecordStore``). A group's
# members are kept twice: as a sorted JSON list in its row (what ``get_groups``
# returns) and as one ``group_members`` row per document, whose key starts with the
# document so ``groups_of_documents`` is an index seek. Records keep a rowid, as
# documents do: an analysis of a long text is large. The copies move the bridge
# catalogue into namespace "bridge" (members: the documents its units cite, from
# the units' provenance table) and the analyses, unchanged, into namespace
# "extractive.analysis". CROSS JOIN fixes the loop order: left to the planner, it
# reads every provenance row of the index once per bridge. No statement may hold a
# semicolon inside a literal: ``migrate`` splits scripts on them.
_V4 = """
CREATE TABLE unit_groups (
    idx TEXT NOT NULL,
    namespace TEXT NOT NULL,
    group_key TEXT NOT NULL,
    unit_ids TEXT NOT NULL,
    members TEXT NOT NULL,
    PRIMARY KEY (idx, namespace, group_key)
) WITHOUT ROWID;
CREATE TABLE group_members (
    idx TEXT NOT NULL,
    namespace TEXT NOT NULL,
    doc_id TEXT NOT NULL,
    group_key TEXT NOT NULL,
    PRIMARY KEY (idx, namespace, doc_id, group_key)
) WITHOUT ROWID;
CREATE TABLE records (
    idx TEXT NOT NULL,
    namespace TEXT NOT NULL,
    record_key TEXT NOT NULL,
    data TEXT NOT NULL,
    UNIQUE (idx, namespace, record_key)
);
CREATE INDEX records_by_key ON records (idx, record_key);
INSERT INTO group_members (idx, namespace, doc_id, group_key)
SELECT DISTINCT b.idx, 'bridge', s.doc_id, b.entity
FROM bridges AS b CROSS JOIN json_each(b.unit_ids) AS j
CROSS JOIN unit_sources AS s ON s.idx = b.idx AND s.unit_id = j.value;
INSERT INTO unit_groups (idx, namespace, group_key, unit_ids, members)
SELECT b.idx, 'bridge', b.entity, b.unit_ids,
    (SELECT json_group_array(doc_id) FROM (
        SELECT DISTINCT s.doc_id AS doc_id FROM json_each(b.unit_ids) AS j
        CROSS JOIN unit_sources AS s ON s.idx = b.idx AND s.unit_id = j.value
        ORDER BY 1))
FROM bridges AS b;
INSERT INTO records (idx, namespace, record_key, data)
SELECT idx, 'extractive.analysis', doc_id, data FROM analyses;
"""

# Failed items are recorded under qualified phase names ("extractive.stage1"). The
# bare "stage1" and "stage2" of earlier releases take their index's method as prefix,
# in the key and in the stored record, or no later job would ever re-plan or clear
# them. An item already recorded under the new name is the newer failure and stays.
# Items of an index gone from the catalogue have no method to take: they go.
_V5 = """
DELETE FROM failed_items
WHERE phase IN ('stage1', 'stage2') AND idx NOT IN (SELECT name FROM indexes);
DELETE FROM failed_items
WHERE phase IN ('stage1', 'stage2') AND EXISTS (
    SELECT 1 FROM indexes AS i CROSS JOIN failed_items AS q
        ON q.idx = i.name AND q.phase = i.method || '.' || failed_items.phase
        AND q.item = failed_items.item
    WHERE i.name = failed_items.idx);
UPDATE failed_items
SET phase = (SELECT i.method FROM indexes AS i WHERE i.name = failed_items.idx)
        || '.' || phase,
    data = json_set(data, '$.phase',
        (SELECT i.method FROM indexes AS i WHERE i.name = failed_items.idx) || '.' || phase)
WHERE phase IN ('stage1', 'stage2');
"""

# A running job's scope (what it changes), in pages (``JobStore.put_job_scope``): the
# steps read it here instead of carrying it in every task message.
_V6 = """
CREATE TABLE job_scopes (
    job_id TEXT NOT NULL,
    page INTEGER NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (job_id, page)
);
"""

# The keys a job's updates were settled under (``update_job(..., once=key)``), one row
# each: in the job's record they made every task's write rewrite every earlier task's
# key, a cost that grew with the square of the job's tasks.
_V7 = """
CREATE TABLE job_settled (
    idx TEXT NOT NULL,
    job_id TEXT NOT NULL,
    key TEXT NOT NULL,
    PRIMARY KEY (job_id, key)
) WITHOUT ROWID;
CREATE INDEX job_settled_by_index ON job_settled (idx);
"""

MIGRATIONS: tuple[str, ...] = (_V1, _V2, _V3, _V4, _V5, _V6, _V7)

# The tables every index owns rows in; deleting an index empties all of them.
INDEX_TABLES: tuple[str, ...] = (
    "documents", "analyses", "units", "unit_sources", "mentions", "bridges", "jobs",
    "failed_items", "unit_groups", "group_members", "records", "job_settled",
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
