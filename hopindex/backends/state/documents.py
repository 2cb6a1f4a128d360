"""Documents as ingested, keyed by (index, doc_id)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from hopindex.backends.state.connection import SqliteConnection, dumps, id_list
from hopindex.core.errors import InvalidInputError
from hopindex.core.models import Document


class DocumentsMixin(SqliteConnection):
    def put_documents(self, documents: Sequence[Document]) -> None:
        """Upsert documents (title, text, content hash and metadata replaced)."""
        rows = []
        for doc in documents:
            try:
                metadata = dumps(doc.metadata)
            except (TypeError, ValueError) as exc:
                raise InvalidInputError(f"metadata is not JSON-serialisable: {exc}",
                                        where=f"document {doc.doc_id}") from exc
            rows.append((doc.index, doc.doc_id, doc.title, doc.text, doc.content_hash, metadata))
        if not rows:
            return
        with self._transaction("put_documents", write=True) as conn:
            conn.executemany(
                "INSERT INTO documents (idx, doc_id, title, text, content_hash, metadata)"
                " VALUES (?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (idx, doc_id) DO UPDATE SET title = excluded.title,"
                " text = excluded.text, content_hash = excluded.content_hash,"
                " metadata = excluded.metadata",
                rows)

    def get_documents(self, index: str, doc_ids: Sequence[str]) -> list[Document]:
        """Documents in the order asked, each once; unknown ids are skipped."""
        wanted = list(dict.fromkeys(doc_ids))
        if not wanted:
            return []
        with self._transaction("get_documents", write=False) as conn:
            rows = conn.execute(
                "SELECT d.doc_id, d.title, d.text, d.content_hash, d.metadata"
                " FROM json_each(?) AS j JOIN documents AS d"
                " ON d.idx = ? AND d.doc_id = j.value ORDER BY j.key",
                (id_list(wanted), index)).fetchall()
        return [Document(doc_id=doc_id, index=index, title=title, text=text,
                         content_hash=content_hash, metadata=json.loads(metadata))
                for doc_id, title, text, content_hash, metadata in rows]

    def document_hashes(self, index: str) -> dict[str, str]:
        with self._transaction("document_hashes", write=False) as conn:
            rows = conn.execute("SELECT doc_id, content_hash FROM documents WHERE idx = ?",
                                (index,)).fetchall()
        return dict(rows)

    def delete_documents(self, index: str, doc_ids: Sequence[str]) -> None:
        if not doc_ids:
            return
        ids = id_list(doc_ids)
        with self._transaction("delete_documents", write=True) as conn:
            conn.execute("DELETE FROM documents WHERE idx = ? AND doc_id IN"
                         " (SELECT value FROM json_each(?))", (index, ids))
