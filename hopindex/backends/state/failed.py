"""Work items that failed for good, per index, in SQLite (``FailedItemStore``)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from hopindex.backends.state.connection import SqliteConnection, dumps, id_list
from hopindex.core.models import FailedItem


class FailedItemsMixin(SqliteConnection):
    def put_failed_items(self, index: str, items: Sequence[FailedItem]) -> None:
        if not items:
            return
        with self._transaction("put_failed_items", write=True) as conn:
            conn.executemany("INSERT OR REPLACE INTO failed_items (idx, phase, item, data)"
                             " VALUES (?, ?, ?, ?)",
                             [(index, i.phase, i.item, dumps(i.as_dict())) for i in items])

    def list_failed_items(self, index: str, phase: str | None = None) -> list[FailedItem]:
        """The index's failed items by phase, then item."""
        where, params = ("AND phase = ?", [phase]) if phase is not None else ("", [])
        with self._transaction("list_failed_items", write=False) as conn:
            rows = conn.execute(f"SELECT data FROM failed_items WHERE idx = ? {where}"
                                " ORDER BY phase, item", [index, *params]).fetchall()
        return [FailedItem.from_dict(json.loads(data)) for (data,) in rows]

    def clear_failed_items(self, index: str, phase: str, items: Sequence[str]) -> None:
        if not items:
            return
        with self._transaction("clear_failed_items", write=True) as conn:
            conn.execute("DELETE FROM failed_items WHERE idx = ? AND phase = ?"
                         " AND item IN (SELECT value FROM json_each(?))",
                         (index, phase, id_list(items)))
