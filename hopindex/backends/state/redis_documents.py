"""Documents and their NLP analyses in Redis hashes keyed by doc id.

Per index: ``doc`` (doc id → [title, text, content_hash, metadata]), ``dochash``
(doc id → content hash, so ``document_hashes`` never reads texts), ``doctext``
(doc id → digest of the text, what decides whether an analysis is stale) and
``analysis`` (doc id → encoded analysis).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

from redis.client import Pipeline

from hopindex.backends.state.connection import dumps
from hopindex.backends.state.documents import decode_analysis, encode_analysis
from hopindex.backends.state.redis_connection import CHUNK, RedisConnection, unique
from hopindex.core.errors import InvalidInputError
from hopindex.core.models import Document, TextAnalysis

# Documents can be megabytes: a script call carries at most this much text, so
# one call never holds the server for long.
_SCRIPT_BYTES = 4 << 20

# ARGV: base, then (doc id, record, content hash, text digest) per document.
# Comparing with the stored digest and writing happen in one script, so two
# writers of one document cannot leave an analysis of the text that lost.
_PUT_DOCUMENTS = """
local base = ARGV[1]
local docs, hashes, texts, analyses =
  base .. 'doc', base .. 'dochash', base .. 'doctext', base .. 'analysis'
for i = 2, #ARGV, 4 do
  local id, sig = ARGV[i], ARGV[i + 3]
  local old = redis.call('HGET', texts, id)
  if old and old ~= sig then
    redis.call('HDEL', analyses, id)
  end
  redis.call('HSET', docs, id, ARGV[i + 1])
  redis.call('HSET', hashes, id, ARGV[i + 2])
  redis.call('HSET', texts, id, sig)
end
return 0
"""


def text_digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


def _script_batches(rows: list[tuple[str, str, str, str]]) -> list[list[str]]:
    """Flat script arguments, cut at ``CHUNK`` documents or ``_SCRIPT_BYTES`` of records."""
    batches: list[list[str]] = []
    current: list[str] = []
    size = 0
    for row in rows:
        if current and (len(current) >= 4 * CHUNK or size + len(row[1]) > _SCRIPT_BYTES):
            batches.append(current)
            current, size = [], 0
        current.extend(row)
        size += len(row[1])
    if current:
        batches.append(current)
    return batches


class RedisDocumentsMixin(RedisConnection):
    def put_documents(self, documents: Sequence[Document]) -> None:
        """Upsert documents; one whose text changed loses its (stale) analysis.

        The text, not the content hash, decides: the pipeline re-puts a document
        with its final hash once stage 1 is done, and that must keep the analysis.
        Each script call is atomic; a batch spanning several calls may be seen
        half-written, and a retry after a failure repeats the same upserts.
        """
        by_index: dict[str, list[tuple[str, str, str, str]]] = {}
        for doc in documents:
            try:
                record = dumps([doc.title, doc.text, doc.content_hash, doc.metadata])
            except (TypeError, ValueError) as exc:
                raise InvalidInputError(f"metadata is not JSON-serialisable: {exc}",
                                        where=f"document {doc.doc_id}") from exc
            by_index.setdefault(doc.index, []).append(
                (doc.doc_id, record, doc.content_hash, text_digest(doc.text)))
        script = self._script(_PUT_DOCUMENTS)
        for index, rows in by_index.items():
            base = self._base(index)

            def add(pipe: Pipeline, batch: Sequence[list[str]], base: str = base) -> None:
                for args in batch:
                    script(args=[base, *args], client=pipe)

            self._batched("put_documents", _script_batches(rows), add, size=1)

    def get_documents(self, index: str, doc_ids: Sequence[str]) -> list[Document]:
        """Documents in the order asked, each once; unknown ids are skipped."""
        wanted = unique(doc_ids)
        key = self._base(index) + "doc"
        replies = self._batched("get_documents", wanted,
                                lambda pipe, chunk: pipe.hmget(key, chunk))
        records = [record for reply in replies for record in reply]
        documents = []
        for doc_id, record in zip(wanted, records, strict=True):
            if record is None:
                continue
            title, text, content_hash, metadata = json.loads(record)
            documents.append(Document(doc_id=doc_id, index=index, title=title, text=text,
                                      content_hash=content_hash, metadata=metadata))
        return documents

    def document_hashes(self, index: str) -> dict[str, str]:
        """Doc id → content hash of every document of the index."""
        key = self._base(index) + "dochash"
        with self._errors("document_hashes"):
            # HSCAN pages rather than one HGETALL: an index of a million documents
            # must not hold the server for the length of one huge reply.
            return dict(self._redis().hscan_iter(key, count=CHUNK))

    def delete_documents(self, index: str, doc_ids: Sequence[str]) -> None:
        """Forget the documents and their analyses; unknown ids are ignored."""
        base = self._base(index)

        def add(pipe: Pipeline, chunk: Sequence[str]) -> None:
            for name in ("doc", "dochash", "doctext", "analysis"):
                pipe.hdel(base + name, *chunk)

        self._batched("delete_documents", list(doc_ids), add, transaction=True)

    def put_analyses(self, index: str, analyses: dict[str, TextAnalysis]) -> None:
        items = [(doc_id, encode_analysis(a)) for doc_id, a in analyses.items()]
        key = self._base(index) + "analysis"
        self._batched("put_analyses", items,
                      lambda pipe, chunk: pipe.hset(key, mapping=dict(chunk)))

    def get_analyses(self, index: str, doc_ids: Sequence[str]) -> dict[str, TextAnalysis]:
        """Analyses of the given documents that have one, in the order asked."""
        wanted = unique(doc_ids)
        key = self._base(index) + "analysis"
        replies = self._batched("get_analyses", wanted,
                                lambda pipe, chunk: pipe.hmget(key, chunk))
        records = (record for reply in replies for record in reply)
        return {doc_id: decode_analysis(record)
                for doc_id, record in zip(wanted, records, strict=True) if record is not None}

