"""Documents in Redis hashes keyed by doc id.

Per index: ``doc`` (doc id → [title, text, content_hash, metadata]) and ``dochash``
(doc id → content hash, so ``document_hashes`` never reads texts).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

from redis.client import Pipeline

from hopindex.backends.state.connection import dumps
from hopindex.backends.state.redis_connection import CHUNK, RedisConnection, unique
from hopindex.core.errors import InvalidInputError
from hopindex.core.models import Document

# Documents can be megabytes: a script call carries at most this much text, so
# one call never holds the server for long.
_SCRIPT_BYTES = 4 << 20

# ARGV: base, then (doc id, record, content hash) per document: a reader never sees a
# document without its hash, or the other way round.
_PUT_DOCUMENTS = """
local base = ARGV[1]
local docs, hashes = base .. 'doc', base .. 'dochash'
for i = 2, #ARGV, 3 do
  redis.call('HSET', docs, ARGV[i], ARGV[i + 1])
  redis.call('HSET', hashes, ARGV[i], ARGV[i + 2])
end
return 0
"""


def text_digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


def _script_batches(rows: list[tuple[str, str, str]]) -> list[list[str]]:
    """Flat script arguments, cut at ``CHUNK`` documents or ``_SCRIPT_BYTES`` of records."""
    batches: list[list[str]] = []
    current: list[str] = []
    size = 0
    for row in rows:
        if current and (len(current) >= 3 * CHUNK or size + len(row[1]) > _SCRIPT_BYTES):
            batches.append(current)
            current, size = [], 0
        current.extend(row)
        size += len(row[1])
    if current:
        batches.append(current)
    return batches


class RedisDocumentsMixin(RedisConnection):
    def put_documents(self, documents: Sequence[Document]) -> None:
        """Upsert documents (title, text, content hash and metadata replaced).

        Each script call is atomic; a batch spanning several calls may be seen
        half-written, and a retry after a failure repeats the same upserts.
        """
        by_index: dict[str, list[tuple[str, str, str]]] = {}
        for doc in documents:
            try:
                record = dumps([doc.title, doc.text, doc.content_hash, doc.metadata])
            except (TypeError, ValueError) as exc:
                raise InvalidInputError(f"metadata is not JSON-serialisable: {exc}",
                                        where=f"document {doc.doc_id}") from exc
            by_index.setdefault(doc.index, []).append((doc.doc_id, record, doc.content_hash))
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
        """Forget the documents; unknown ids are ignored."""
        base = self._base(index)

        def add(pipe: Pipeline, chunk: Sequence[str]) -> None:
            for name in ("doc", "dochash"):
                pipe.hdel(base + name, *chunk)

        self._batched("delete_documents", list(doc_ids), add, transaction=True)
