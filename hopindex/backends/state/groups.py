"""Method-owned groups and records in SQLite (``GroupStore``, ``RecordStore``).

``unit_groups`` holds one row per (index, namespace, group key) with its unit ids
and sorted members as JSON lists; ``group_members`` repeats the members one row
each, keyed by document first, so ``groups_of_documents`` is an index seek.
``records`` holds one JSON object per (index, namespace, record key), with a
second index by key alone for a deleted document's records in every namespace.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from hopindex.backends.state.connection import SqliteConnection, dumps, id_list
from hopindex.core.errors import InvalidInputError
from hopindex.core.models import Group

# Where the stores' layout upgrades put the bridge catalogue and the spaCy analyses.
BRIDGE_NAMESPACE = "bridge"
ANALYSIS_NAMESPACE = "extractive.analysis"


def check_namespace(namespace: str) -> str:
    """The namespace, once checked to be a non-empty string (both stores refuse the same)."""
    if not isinstance(namespace, str) or not namespace:
        raise InvalidInputError(f"namespace must be a non-empty string, not {namespace!r}",
                                where="namespace")
    return namespace


def member_list(members: Sequence[str]) -> list[str]:
    """A group's members as stored: sorted, each once (code point order, which is also
    the byte order of their UTF-8 that SQLite and Redis compare)."""
    return sorted(set(members))


def encoded_records(records: Mapping[str, dict[str, Any]]) -> list[tuple[str, str]]:
    """(key, JSON) per record, once every value is checked to be a serialisable object."""
    rows = []
    for key, value in records.items():
        if not isinstance(value, dict):
            raise InvalidInputError(f"record {key!r} is a {type(value).__name__}, not a JSON"
                                    " object", where=f"record {key}")
        try:
            rows.append((key, dumps(value)))
        except (TypeError, ValueError) as exc:
            raise InvalidInputError(f"record {key!r} is not JSON-serialisable: {exc}",
                                    where=f"record {key}") from exc
    return rows


def decoded_record(data: str) -> dict[str, Any]:
    record: dict[str, Any] = json.loads(data)
    return record


class GroupsMixin(SqliteConnection):
    def replace_group(self, index: str, namespace: str, key: str, unit_ids: Sequence[str],
                      members: Sequence[str]) -> list[str]:
        """Record the units the group produced and the documents they cite; return the
        unit ids it had before (``[]`` if new). No unit ids: the group is removed."""
        check_namespace(namespace)
        docs = member_list(members)
        where = "idx = ? AND namespace = ? AND group_key = ?"
        with self._transaction("replace_group", write=True) as conn:
            row = conn.execute(f"SELECT unit_ids, members FROM unit_groups WHERE {where}",
                               (index, namespace, key)).fetchone()
            if row is not None:
                conn.execute(f"DELETE FROM group_members WHERE {where} AND doc_id IN"
                             " (SELECT value FROM json_each(?))",
                             (index, namespace, key, row[1]))
            if unit_ids:
                conn.execute("INSERT INTO unit_groups (idx, namespace, group_key, unit_ids,"
                             " members) VALUES (?, ?, ?, ?, ?)"
                             " ON CONFLICT (idx, namespace, group_key) DO UPDATE"
                             " SET unit_ids = excluded.unit_ids, members = excluded.members",
                             (index, namespace, key, id_list(unit_ids), id_list(docs)))
                conn.executemany("INSERT INTO group_members (idx, namespace, doc_id, group_key)"
                                 " VALUES (?, ?, ?, ?)",
                                 [(index, namespace, doc, key) for doc in docs])
            elif row is not None:
                conn.execute(f"DELETE FROM unit_groups WHERE {where}", (index, namespace, key))
        previous: list[str] = json.loads(row[0]) if row else []
        return previous

    def get_groups(self, index: str, namespace: str, keys: Sequence[str]) -> dict[str, Group]:
        """Key → its group, in the order asked; unknown keys are absent."""
        check_namespace(namespace)
        if not keys:
            return {}
        with self._transaction("get_groups", write=False) as conn:
            rows = conn.execute(
                "SELECT g.group_key, g.unit_ids, g.members FROM json_each(?) AS j"
                " JOIN unit_groups AS g ON g.idx = ? AND g.namespace = ?"
                " AND g.group_key = j.value ORDER BY j.key",
                (id_list(list(dict.fromkeys(keys))), index, namespace)).fetchall()
        return {key: Group(namespace=namespace, key=key, unit_ids=tuple(json.loads(ids)),
                           members=tuple(json.loads(members)))
                for key, ids, members in rows}

    def list_group_keys(self, index: str, namespace: str) -> list[str]:
        """Every group key of the namespace, sorted."""
        check_namespace(namespace)
        with self._transaction("list_group_keys", write=False) as conn:
            rows = conn.execute("SELECT group_key FROM unit_groups WHERE idx = ?"
                                " AND namespace = ? ORDER BY group_key",
                                (index, namespace)).fetchall()
        return [key for (key,) in rows]

    def groups_of_documents(self, index: str, namespace: str,
                            doc_ids: Sequence[str]) -> set[str]:
        """Keys of the namespace's groups with any of ``doc_ids`` among their members."""
        check_namespace(namespace)
        if not doc_ids:
            return set()
        with self._transaction("groups_of_documents", write=False) as conn:
            rows = conn.execute("SELECT group_key FROM group_members WHERE idx = ?"
                                " AND namespace = ? AND doc_id IN"
                                " (SELECT value FROM json_each(?))",
                                (index, namespace, id_list(doc_ids))).fetchall()
        return {key for (key,) in rows}

    def namespaces_of_groups(self, index: str) -> list[str]:
        """Namespaces holding at least one group of the index, sorted."""
        return self._namespaces("namespaces_of_groups", "unit_groups", index)

    def _namespaces(self, operation: str, table: Literal["unit_groups", "records"],
                    index: str) -> list[str]:
        """The distinct namespaces of ``table`` for the index, sorted: one seek per
        namespace (a loose index scan over its (idx, namespace, ...) index) instead of
        reading every row."""
        with self._transaction(operation, write=False) as conn:
            rows = conn.execute(
                # The table is one of the two literals above, never input.
                "WITH RECURSIVE ns (name) AS ("
                f" SELECT min(namespace) FROM {table} WHERE idx = ?1"
                f" UNION ALL SELECT (SELECT min(namespace) FROM {table}"
                " WHERE idx = ?1 AND namespace > ns.name) FROM ns WHERE ns.name IS NOT NULL)"
                " SELECT name FROM ns WHERE name IS NOT NULL", (index,)).fetchall()
        return [name for (name,) in rows]

    def put_records(self, index: str, namespace: str,
                    records: Mapping[str, dict[str, Any]]) -> None:
        """Upsert the records of one namespace."""
        check_namespace(namespace)
        rows = [(index, namespace, key, data) for key, data in encoded_records(records)]
        if not rows:
            return
        with self._transaction("put_records", write=True) as conn:
            conn.executemany("INSERT INTO records (idx, namespace, record_key, data)"
                             " VALUES (?, ?, ?, ?) ON CONFLICT (idx, namespace, record_key)"
                             " DO UPDATE SET data = excluded.data", rows)

    def get_records(self, index: str, namespace: str,
                    keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        """Key → its record, in the order asked; unknown keys are absent."""
        check_namespace(namespace)
        if not keys:
            return {}
        with self._transaction("get_records", write=False) as conn:
            rows = conn.execute(
                "SELECT r.record_key, r.data FROM json_each(?) AS j JOIN records AS r"
                " ON r.idx = ? AND r.namespace = ? AND r.record_key = j.value"
                " ORDER BY j.key",
                (id_list(list(dict.fromkeys(keys))), index, namespace)).fetchall()
        return {key: decoded_record(data) for key, data in rows}

    def delete_records(self, index: str, keys: Sequence[str],
                       namespace: str | None = None) -> None:
        """Forget the records under ``keys``: in ``namespace``, or in every namespace."""
        if namespace is not None:
            check_namespace(namespace)
        if not keys:
            return
        where, params = (" AND namespace = ?", [namespace]) if namespace is not None else ("", [])
        with self._transaction("delete_records", write=True) as conn:
            conn.execute(f"DELETE FROM records WHERE idx = ?{where} AND record_key IN"
                         " (SELECT value FROM json_each(?))",
                         [index, *params, id_list(keys)])

    def list_record_namespaces(self, index: str) -> list[str]:
        """Namespaces holding at least one record of the index, sorted."""
        return self._namespaces("list_record_namespaces", "records", index)
