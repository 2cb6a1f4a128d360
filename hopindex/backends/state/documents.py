"""Documents as ingested and their NLP analyses, keyed by (index, doc_id)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from hopindex.backends.state.connection import SqliteConnection, dumps, id_list
from hopindex.core.errors import InvalidInputError
from hopindex.core.models import Document, EntitySpan, Sentence, TextAnalysis


def encode_analysis(analysis: TextAnalysis) -> str:
    """Positional lists rather than objects: a paragraph has dozens of spans."""
    return dumps({
        "s": [[s.start, s.end] for s in analysis.sentences],
        "e": [[e.text, e.label, e.start, e.end] for e in analysis.entities],
    })


def decode_analysis(data: str) -> TextAnalysis:
    raw = json.loads(data)
    return TextAnalysis(
        sentences=tuple(Sentence(start, end) for start, end in raw["s"]),
        entities=tuple(EntitySpan(text, label, start, end) for text, label, start, end in raw["e"]),
    )


class DocumentsMixin(SqliteConnection):
    def put_documents(self, documents: Sequence[Document]) -> None:
        """Upsert documents; one whose text changed loses its (stale) analysis.

        The text, not the content hash, decides: the pipeline re-puts a document
        with its final hash once stage 1 is done, and that must keep the analysis.
        """
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
            # An analysis describes one text: drop it when the text it described changes.
            conn.executemany(
                "DELETE FROM analyses WHERE idx = ? AND doc_id = ? AND EXISTS ("
                " SELECT 1 FROM documents d WHERE d.idx = analyses.idx"
                " AND d.doc_id = analyses.doc_id AND d.text <> ?)",
                [(r[0], r[1], r[3]) for r in rows])
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
            for table in ("documents", "analyses"):
                conn.execute(f"DELETE FROM {table} WHERE idx = ? AND doc_id IN"
                             " (SELECT value FROM json_each(?))", (index, ids))

    def put_analyses(self, index: str, analyses: dict[str, TextAnalysis]) -> None:
        if not analyses:
            return
        rows = [(index, doc_id, encode_analysis(a)) for doc_id, a in analyses.items()]
        with self._transaction("put_analyses", write=True) as conn:
            conn.executemany(
                "INSERT INTO analyses (idx, doc_id, data) VALUES (?, ?, ?)"
                " ON CONFLICT (idx, doc_id) DO UPDATE SET data = excluded.data", rows)

    def get_analyses(self, index: str, doc_ids: Sequence[str]) -> dict[str, TextAnalysis]:
        """Analyses of the given documents that have one, in the order asked."""
        if not doc_ids:
            return {}
        with self._transaction("get_analyses", write=False) as conn:
            rows = conn.execute(
                "SELECT a.doc_id, a.data FROM json_each(?) AS j JOIN analyses AS a"
                " ON a.idx = ? AND a.doc_id = j.value ORDER BY j.key",
                (id_list(list(dict.fromkeys(doc_ids))), index)).fetchall()
        return {doc_id: decode_analysis(data) for doc_id, data in rows}
