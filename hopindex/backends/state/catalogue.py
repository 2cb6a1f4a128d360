"""Entity mentions: what incremental planning reads (docs/architecture.md)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Literal

from hopindex.backends.state.connection import SqliteConnection, dumps, id_list
from hopindex.core.errors import InvalidInputError
from hopindex.core.models import EntityMention, MentionSource


def replaced_sources(doc_id: str, mentions: Sequence[EntityMention],
                     sources: Sequence[MentionSource]) -> set[str]:
    """The source values ``replace_mentions`` replaces, once every mention is checked to
    be of ``doc_id`` and from one of ``sources`` (both stores refuse the same input)."""
    source_values = {MentionSource(s).value for s in sources}
    for mention in mentions:
        if mention.doc_id != doc_id:
            raise InvalidInputError(f"mention of {mention.entity!r} belongs to document "
                                    f"{mention.doc_id!r}, not {doc_id!r}", where="mentions")
        if mention.source.value not in source_values:
            raise InvalidInputError(f"mention of {mention.entity!r} has source "
                                    f"{mention.source.value!r}, outside the replaced "
                                    f"sources {sorted(source_values)}", where="mentions")
    return source_values


def _entities_of(conn: sqlite3.Connection, index: str, doc_id: str) -> set[str]:
    # No DISTINCT: with it SQLite's planner walks the whole (idx, entity) index to
    # get entities in order (12 ms per call at 60k mentions) instead of seeking the
    # primary key by document; the set below removes duplicates.
    rows = conn.execute("SELECT entity FROM mentions WHERE idx = ? AND doc_id = ?",
                        (index, doc_id)).fetchall()
    return {entity for (entity,) in rows}


class CatalogueMixin(SqliteConnection):
    def replace_mentions(self, index: str, doc_id: str, mentions: Sequence[EntityMention],
                         sources: Sequence[MentionSource]) -> set[str]:
        """Replace the document's mentions from ``sources``; return entities it joined or left.

        Only a change in an entity's set of documents is reported: a new count, or
        a mention moving from one source to another, leaves the bridge as it was.
        """
        source_values = replaced_sources(doc_id, mentions, sources)
        rows = [(index, doc_id, m.source.value, m.entity, m.count) for m in mentions]
        with self._transaction("replace_mentions", write=True) as conn:
            before = _entities_of(conn, index, doc_id)
            conn.execute("DELETE FROM mentions WHERE idx = ? AND doc_id = ? AND source IN"
                         " (SELECT value FROM json_each(?))",
                         (index, doc_id, dumps(sorted(source_values))))
            # The same entity listed twice by one source is one mention counted twice.
            conn.executemany(
                "INSERT INTO mentions (idx, doc_id, source, entity, count) VALUES (?, ?, ?, ?, ?)"
                " ON CONFLICT (idx, doc_id, source, entity) DO UPDATE"
                " SET count = mentions.count + excluded.count", rows)
            after = _entities_of(conn, index, doc_id)
        return before ^ after

    def delete_mentions(self, index: str, doc_ids: Sequence[str]) -> set[str]:
        """Forget the documents' mentions; return every entity that lost a document."""
        if not doc_ids:
            return set()
        ids = id_list(doc_ids)
        with self._transaction("delete_mentions", write=True) as conn:
            rows = conn.execute("SELECT DISTINCT entity FROM mentions WHERE idx = ? AND doc_id IN"
                                " (SELECT value FROM json_each(?))", (index, ids)).fetchall()
            conn.execute("DELETE FROM mentions WHERE idx = ? AND doc_id IN"
                         " (SELECT value FROM json_each(?))", (index, ids))
        return {entity for (entity,) in rows}

    def mentions_of_entities(self, index: str,
                             entities: Sequence[str]) -> dict[str, list[EntityMention]]:
        """Each entity's mentions, one per (document, source); unmentioned entities are absent."""
        result: dict[str, list[EntityMention]] = {}
        for mention in self._mentions_where(index, "mentions_of_entities", "entity", entities):
            result.setdefault(mention.entity, []).append(mention)
        return result

    def mentions_of_documents(self, index: str,
                              doc_ids: Sequence[str]) -> dict[str, list[EntityMention]]:
        """Each document's mentions, one per (entity, source), sorted; documents with
        none are absent."""
        result: dict[str, list[EntityMention]] = {}
        for mention in self._mentions_where(index, "mentions_of_documents", "doc_id", doc_ids):
            result.setdefault(mention.doc_id, []).append(mention)
        return result

    def _mentions_where(self, index: str, operation: str, column: Literal["entity", "doc_id"],
                        values: Sequence[str]) -> list[EntityMention]:
        """Mentions whose ``column`` (entity or doc_id) is one of ``values``, ordered by
        that column, then the other, then the source."""
        if not values:
            return []
        other = "doc_id" if column == "entity" else "entity"
        with self._transaction(operation, write=False) as conn:
            rows = conn.execute(
                "SELECT entity, doc_id, source, count FROM mentions WHERE idx = ? AND "
                # The column names are the two literals above, never input.
                f"{column} IN (SELECT value FROM json_each(?)) "
                f"ORDER BY {column}, {other}, source", (index, id_list(values))).fetchall()
        return [EntityMention(entity=entity, doc_id=doc_id, source=MentionSource(source),
                              count=count) for entity, doc_id, source, count in rows]

    def title_lexicon(self, index: str) -> dict[str, list[str]]:
        """Title entity → the documents it is the title of (sorted)."""
        with self._transaction("title_lexicon", write=False) as conn:
            rows = conn.execute("SELECT entity, doc_id FROM mentions WHERE idx = ? AND source = ?"
                                " ORDER BY entity, doc_id",
                                (index, MentionSource.TITLE.value)).fetchall()
        lexicon: dict[str, list[str]] = {}
        for entity, doc_id in rows:
            lexicon.setdefault(entity, []).append(doc_id)
        return lexicon
