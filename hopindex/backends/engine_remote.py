"""``VectorStore`` and ``KeywordIndex`` of a process that does not own the embedded
engines: every call travels to the owner (see engine_calls.py) and comes back.

The methods, the import and export of an index, its deletion: none of them can tell
these from the engines themselves. ``close`` closes nothing: the engines are the
owner's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from hopindex.backends.engine_calls import (
    Engine,
    EngineChannel,
    filter_out,
    hits_in,
    ids_out,
    keyword_record_out,
    request,
    value_of,
    vector_out,
    vector_record_in,
    vector_record_out,
)
from hopindex.backends.protocols import KeywordRecord, UnitFilter, Vector, VectorRecord
from hopindex.core.models import Hit


class _Remote:
    def __init__(self, channel: EngineChannel, engine: Engine) -> None:
        self._channel = channel
        self._engine = engine

    def _call(self, op: str, **args: Any) -> Any:
        return value_of(self._channel.send_request(request(self._engine, op, **args)))

    def close(self) -> None:
        """Nothing to close here: the owner keeps its engines open."""


class RemoteVectorStore(_Remote):
    """The owner's vector store, one engine call per method."""

    def __init__(self, channel: EngineChannel) -> None:
        super().__init__(channel, Engine.VECTORS)

    def ensure_index(self, index: str, dimension: int) -> None:
        self._call("ensure_index", index=index, dimension=dimension)

    def upsert_vectors(self, index: str, records: Sequence[VectorRecord]) -> None:
        if records:
            self._call("upsert_vectors", index=index,
                       records=[vector_record_out(r) for r in records])

    def delete_vectors(self, index: str, unit_ids: Sequence[str]) -> None:
        if unit_ids:
            self._call("delete_vectors", index=index, unit_ids=ids_out(unit_ids))

    def search_vectors(self, index: str, vector: Vector, k: int,
                       unit_filter: UnitFilter | None = None) -> list[Hit]:
        return hits_in(self._call("search_vectors", index=index, vector=vector_out(vector),
                                  k=k, filter=filter_out(unit_filter)))

    def count_vectors(self, index: str) -> int:
        return int(self._call("count_vectors", index=index))

    def get_vectors(self, index: str, unit_ids: Sequence[str]) -> list[VectorRecord]:
        if not unit_ids:
            return []
        found = cast("list[dict[str, Any]]",
                     self._call("get_vectors", index=index, unit_ids=ids_out(unit_ids)))
        return [vector_record_in(r) for r in found]

    def drop_index(self, index: str) -> None:
        self._call("drop_index", index=index)


class RemoteKeywordIndex(_Remote):
    """The owner's keyword index, one engine call per method."""

    def __init__(self, channel: EngineChannel) -> None:
        super().__init__(channel, Engine.KEYWORDS)

    def ensure_index(self, index: str) -> None:
        self._call("ensure_index", index=index)

    def index_units(self, index: str, records: Sequence[KeywordRecord]) -> None:
        if records:
            self._call("index_units", index=index,
                       records=[keyword_record_out(r) for r in records])

    def delete_units(self, index: str, unit_ids: Sequence[str]) -> None:
        if unit_ids:
            self._call("delete_units", index=index, unit_ids=ids_out(unit_ids))

    def search_text(self, index: str, query: str, k: int,
                    unit_filter: UnitFilter | None = None) -> list[Hit]:
        return hits_in(self._call("search_text", index=index, query=query, k=k,
                                  filter=filter_out(unit_filter)))

    def search_phrase(self, index: str, phrase: str, k: int,
                      unit_filter: UnitFilter | None = None) -> list[Hit]:
        return hits_in(self._call("search_phrase", index=index, phrase=phrase, k=k,
                                  filter=filter_out(unit_filter)))

    def count_units(self, index: str) -> int:
        return int(self._call("count_units", index=index))

    def drop_index(self, index: str) -> None:
        self._call("drop_index", index=index)
