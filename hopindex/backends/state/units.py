"""Units, their provenance side table and the embedded flag."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from hopindex.backends.state.connection import SqliteConnection, dumps, id_list
from hopindex.core.errors import InvalidInputError
from hopindex.core.models import Unit, UnitKind

_COLUMNS = ("u.unit_id, u.idx, u.kind, u.text, u.source_doc_ids, u.method, u.source_key,"
            " u.entities, u.level, u.metadata")

# A re-put of an unchanged text keeps its vector (the embed stage skips it); a
# changed text under the same id must be embedded again.
_UPSERT = (
    "INSERT INTO units (idx, unit_id, kind, text, source_doc_ids, method, source_key,"
    " entities, level, metadata, embedded) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0)"
    " ON CONFLICT (idx, unit_id) DO UPDATE SET kind = excluded.kind,"
    " embedded = CASE WHEN units.text = excluded.text THEN units.embedded ELSE 0 END,"
    " text = excluded.text, source_doc_ids = excluded.source_doc_ids,"
    " method = excluded.method, source_key = excluded.source_key,"
    " entities = excluded.entities, level = excluded.level, metadata = excluded.metadata"
)


def _unit(row: tuple[Any, ...]) -> Unit:
    unit_id, index, kind, text, sources, method, source_key, entities, level, metadata = row
    return Unit(unit_id=unit_id, index=index, kind=UnitKind(kind), text=text,
                source_doc_ids=tuple(json.loads(sources)), method=method,
                source_key=source_key, entities=tuple(json.loads(entities)), level=level,
                metadata=json.loads(metadata))


def _unit_row(unit: Unit) -> tuple[Any, ...]:
    try:
        metadata = dumps(unit.metadata)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"metadata is not JSON-serialisable: {exc}",
                                where=f"unit {unit.unit_id}") from exc
    return (unit.index, unit.unit_id, unit.kind.value, unit.text, dumps(unit.source_doc_ids),
            unit.method, unit.source_key, dumps(unit.entities), unit.level, metadata)


class UnitsMixin(SqliteConnection):
    def put_units(self, units: Sequence[Unit]) -> None:
        """Upsert units and their provenance in one transaction."""
        if not units:
            return
        rows = [_unit_row(u) for u in units]
        keys = [(u.index, u.unit_id) for u in units]
        sources = [(u.index, u.unit_id, d) for u in units for d in u.source_doc_ids]
        with self._transaction("put_units", write=True) as conn:
            conn.executemany(_UPSERT, rows)
            # Provenance can shrink on update: replace it rather than merge.
            conn.executemany("DELETE FROM unit_sources WHERE idx = ? AND unit_id = ?", keys)
            conn.executemany("INSERT OR IGNORE INTO unit_sources (idx, unit_id, doc_id)"
                             " VALUES (?, ?, ?)", sources)

    def get_units(self, index: str, unit_ids: Sequence[str]) -> list[Unit]:
        """Units in the order asked, each once; unknown ids are skipped."""
        if not unit_ids:
            return []
        with self._transaction("get_units", write=False) as conn:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM json_each(?) AS j JOIN units AS u"
                " ON u.idx = ? AND u.unit_id = j.value ORDER BY j.key",
                (id_list(list(dict.fromkeys(unit_ids))), index)).fetchall()
        return [_unit(row) for row in rows]

    def units_of_documents(self, index: str, doc_ids: Sequence[str],
                           kinds: Sequence[UnitKind] = ()) -> list[Unit]:
        """Units citing any of the documents (optionally only some kinds), in write order."""
        if not doc_ids:
            return []
        sql = (f"SELECT {_COLUMNS} FROM units AS u WHERE u.idx = ? AND u.unit_id IN"
               " (SELECT s.unit_id FROM unit_sources AS s WHERE s.idx = ? AND s.doc_id IN"
               " (SELECT value FROM json_each(?)))")
        params: list[str] = [index, index, id_list(doc_ids)]
        if kinds:
            # Unary + keeps the planner on the provenance lookup instead of scanning
            # every unit of the wanted kinds through units_by_kind.
            sql += " AND +u.kind IN (SELECT value FROM json_each(?))"
            params.append(dumps([UnitKind(k).value for k in kinds]))
        with self._transaction("units_of_documents", write=False) as conn:
            rows = conn.execute(sql + " ORDER BY u.rowid", params).fetchall()
        return [_unit(row) for row in rows]

    def delete_units(self, index: str, unit_ids: Sequence[str]) -> None:
        if not unit_ids:
            return
        ids = id_list(unit_ids)
        with self._transaction("delete_units", write=True) as conn:
            for table in ("units", "unit_sources"):
                conn.execute(f"DELETE FROM {table} WHERE idx = ? AND unit_id IN"
                             " (SELECT value FROM json_each(?))", (index, ids))

    def mark_embedded(self, index: str, unit_ids: Sequence[str]) -> None:
        if not unit_ids:
            return
        with self._transaction("mark_embedded", write=True) as conn:
            conn.execute("UPDATE units SET embedded = 1 WHERE idx = ? AND unit_id IN"
                         " (SELECT value FROM json_each(?))", (index, id_list(unit_ids)))

    def unembedded_units(self, index: str, unit_ids: Sequence[str]) -> list[str]:
        """The given units that are stored and still lack a vector, in the order asked.

        Unknown ids are not returned: there is nothing to embed for them.
        """
        if not unit_ids:
            return []
        with self._transaction("unembedded_units", write=False) as conn:
            rows = conn.execute(
                "SELECT u.unit_id FROM json_each(?) AS j JOIN units AS u"
                " ON u.idx = ? AND u.unit_id = j.value WHERE u.embedded = 0 ORDER BY j.key",
                (id_list(list(dict.fromkeys(unit_ids))), index)).fetchall()
        return [unit_id for (unit_id,) in rows]

    def count_units(self, index: str) -> dict[UnitKind, int]:
        """Units per kind; kinds with no unit are absent."""
        with self._transaction("count_units", write=False) as conn:
            rows = conn.execute("SELECT kind, count(*) FROM units WHERE idx = ? GROUP BY kind",
                                (index,)).fetchall()
        return {UnitKind(kind): n for kind, n in rows}
