"""The embedded state store (``sqlite://PATH``): catalog, documents, units, entities, jobs,
failed items, method-owned groups and records.

Each role lives in its own mixin module; this class adds the index catalog,
whose deletion has to reach every other table.
"""

from __future__ import annotations

import json
from typing import Any

from hopindex.backends.protocols import IndexInfo
from hopindex.backends.state.catalogue import CatalogueMixin
from hopindex.backends.state.connection import dumps
from hopindex.backends.state.documents import DocumentsMixin
from hopindex.backends.state.failed import FailedItemsMixin
from hopindex.backends.state.groups import GroupsMixin
from hopindex.backends.state.jobs import JobsMixin
from hopindex.backends.state.schema import INDEX_TABLES
from hopindex.backends.state.units import UnitsMixin
from hopindex.core.errors import InvalidInputError, NotFoundError
from hopindex.core.ids import validate_index_name
from hopindex.core.logging import get_logger

log = get_logger(__name__)


class SqliteStateStore(DocumentsMixin, UnitsMixin, CatalogueMixin, JobsMixin,
                       FailedItemsMixin, GroupsMixin):
    """``StateStore`` on one SQLite file (``SqliteStateStore(path)``), safe for several
    threads and processes."""

    def create_index(self, info: IndexInfo) -> IndexInfo:
        """Register an index; if the name exists, the stored record is returned unchanged."""
        validate_index_name(info.name)
        options = _options_json(info.options)
        with self._transaction("create_index", write=True) as conn:
            conn.execute("INSERT OR IGNORE INTO indexes (name, method, created_at, options)"
                         " VALUES (?, ?, ?, ?)",
                         (info.name, info.method, info.created_at, options))
            row = conn.execute("SELECT name, method, created_at, options FROM indexes"
                               " WHERE name = ?", (info.name,)).fetchone()
        return IndexInfo(name=row[0], method=row[1], created_at=row[2],
                         options=json.loads(row[3]))

    def get_index(self, name: str) -> IndexInfo | None:
        with self._transaction("get_index", write=False) as conn:
            row = conn.execute("SELECT name, method, created_at, options FROM indexes"
                               " WHERE name = ?", (name,)).fetchone()
        if row is None:
            return None
        return IndexInfo(name=row[0], method=row[1], created_at=row[2],
                         options=json.loads(row[3]))

    def list_indexes(self) -> list[IndexInfo]:
        """Every index, by name."""
        with self._transaction("list_indexes", write=False) as conn:
            rows = conn.execute("SELECT name, method, created_at, options FROM indexes"
                                " ORDER BY name").fetchall()
        return [IndexInfo(name=name, method=method, created_at=created_at,
                          options=json.loads(options))
                for name, method, created_at, options in rows]

    def set_index_options(self, name: str, options: dict[str, Any]) -> IndexInfo:
        """Replace the options of index ``name``; ``NotFoundError`` when there is none."""
        stored = _options_json(options)
        with self._transaction("set_index_options", write=True) as conn:
            conn.execute("UPDATE indexes SET options = ? WHERE name = ?", (stored, name))
            row = conn.execute("SELECT name, method, created_at, options FROM indexes"
                               " WHERE name = ?", (name,)).fetchone()
        if row is None:
            raise NotFoundError(f"no index {name!r}")
        return IndexInfo(name=row[0], method=row[1], created_at=row[2],
                         options=json.loads(row[3]))

    def delete_index(self, name: str) -> None:
        """Remove the index and everything stored under it; unknown names are a no-op."""
        with self._transaction("delete_index", write=True) as conn:
            conn.execute("DELETE FROM indexes WHERE name = ?", (name,))
            removed: dict[str, int] = {}
            for table in INDEX_TABLES:
                removed[table] = conn.execute(f"DELETE FROM {table} WHERE idx = ?",
                                              (name,)).rowcount
        log.info("state_index_deleted", index=name, **removed)


def _options_json(options: dict[str, Any]) -> str:
    try:
        return dumps(options)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"options are not JSON-serialisable: {exc}",
                                where="options") from exc
