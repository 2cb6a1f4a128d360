"""``VectorStore`` on Qdrant Edge: the Qdrant engine in-process, one shard per index.

Each hopindex index is an ``EdgeShard`` in ``root / index`` holding one named
dense vector (``dense``, cosine) per unit, with the unit's ``kind``,
``source_doc_ids`` and ``entities`` as payload and a keyword payload index on
each so filtered searches stay fast. Point ids are the unit ids (uuid strings).

A shard directory can be open in one process only (the engine locks its WAL), so
the store claims its root folder when it is made (engine_lock.py): a second process is
told which process holds it instead of meeting ``WouldBlock`` at its first search.
"""

from __future__ import annotations

import json
import shutil
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from qdrant_edge import (
    CountRequest,
    Distance,
    EdgeConfig,
    EdgeShard,
    EdgeVectorParams,
    FieldCondition,
    Filter,
    MatchAny,
    PayloadSchemaType,
    Point,
    Query,
    QueryRequest,
    Record,
    UpdateOperation,
)

from hopindex.backends.embedded import engine_errors, index_folder
from hopindex.backends.engine_lock import claim_folder
from hopindex.backends.protocols import UnitFilter, UnitPayload, Vector, VectorRecord
from hopindex.backends.vector.shape import vector_values
from hopindex.core.errors import BackendError, NotFoundError
from hopindex.core.logging import get_logger
from hopindex.core.models import Hit, UnitKind

log = get_logger(__name__)

ENGINE = "qdrant-edge"

VECTOR_NAME = "dense"
# Written by the engine when a shard is created; its presence means "a shard lives here".
_CONFIG_FILE = "edge_config.json"
_PAYLOAD_FIELDS = ("kind", "source_doc_ids", "entities")
# Points per update call: large enough to amortise the call, small enough to bound memory.
_UPSERT_BATCH = 512


@dataclass(slots=True)
class _OpenShard:
    shard: EdgeShard
    # None when the shard was opened lazily and its config file could not be read;
    # the engine still rejects wrong dimensions, just with a terser message.
    dimension: int | None


def _persisted_dimension(path: Path) -> int | None:
    """The dense vector size recorded in the shard's config, if it can be read."""
    try:
        config = json.loads((path / _CONFIG_FILE).read_text(encoding="utf-8"))
        return int(config["vectors"][VECTOR_NAME]["size"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _shard_config(dimension: int) -> EdgeConfig:
    return EdgeConfig(vectors={VECTOR_NAME: EdgeVectorParams(size=dimension,
                                                             distance=Distance.Cosine)})


def _to_filter(unit_filter: UnitFilter | None) -> Filter | None:
    """Every non-empty field must match; within a field any listed value matches."""
    if unit_filter is None or unit_filter.is_empty:
        return None
    return Filter(must=[FieldCondition(key=key, match=MatchAny(any=values))
                        for key, values in unit_filter.conditions()])


def _search_request(vector: list[float], k: int, unit_filter: UnitFilter | None) -> QueryRequest:
    """Nearest ``k`` on the dense vector, ids and scores only (texts live in the state)."""
    return QueryRequest(query=Query.Nearest(vector, using=VECTOR_NAME), limit=k,
                        filter=_to_filter(unit_filter), with_payload=False)


class QdrantEdgeVectorStore:
    """Dense vectors in embedded Qdrant Edge shards under ``root``."""

    def __init__(self, root: Path) -> None:
        self._root = Path(root)
        self._claim = claim_folder(self._root, ENGINE)
        self._shards: dict[str, _OpenShard] = {}
        # Guards the dict and shard open/create/close; the engine itself is thread-safe
        # for concurrent queries and updates on an open shard.
        self._lock = threading.RLock()

    # -- lifecycle -----------------------------------------------------------------

    def ensure_index(self, index: str, dimension: int) -> None:
        if dimension < 1:
            raise BackendError(f"qdrant-edge index {index!r}: dimension must be positive, "
                               f"got {dimension}")
        with self._lock:
            opened = self._open(index)
            if opened is None:
                opened = self._create(index, dimension)
            elif opened.dimension is None:
                opened.dimension = dimension
            elif opened.dimension != dimension:
                raise BackendError(
                    f"qdrant-edge index {index!r} holds {opened.dimension}-dimensional vectors, "
                    f"cannot use it for {dimension}-dimensional ones; drop it or use another index")
            self._ensure_payload_indexes(index, opened.shard)

    def drop_index(self, index: str) -> None:
        path = self._path(index)
        with self._lock:
            opened = self._shards.pop(index, None)
            if opened is not None:
                with engine_errors(ENGINE, index, "close"):
                    opened.shard.close()
            if path.exists():
                shutil.rmtree(path)
                log.info("vector_index_dropped", index=index, path=str(path))

    def close(self) -> None:
        with self._lock:
            shards, self._shards = self._shards, {}
        failure: BackendError | None = None
        for index, opened in shards.items():
            # One shard failing to flush must not leave the others open (and WAL-locked).
            try:
                with engine_errors(ENGINE, index, "flush and close"):
                    opened.shard.flush()
                    opened.shard.close()
            except BackendError as exc:
                log.error("vector_index_close_failed", index=index, error=str(exc))
                failure = failure or exc
        self._claim.release()
        if failure is not None:
            raise failure

    def optimize_index(self, index: str) -> bool:
        """Build HNSW for the shard's grown segments (blocking; seconds per 10k points).

        Not part of ``VectorStore``: Qdrant Edge runs no background optimizer, so
        unindexed points are searched exhaustively (exact, ~1.7 ms at 20k 384-d
        points on a 2-core machine). HNSW halves that but is approximate, so call
        this only for large indexes where the speed matters more than exactness.
        Returns whether any segment changed.
        """
        opened = self._open(index)
        if opened is None:
            return False
        started = time.perf_counter()
        with engine_errors(ENGINE, index, "optimize"):
            changed = opened.shard.optimize()
        log.info("vector_index_optimized", index=index, changed=changed,
                 seconds=round(time.perf_counter() - started, 3))
        return bool(changed)

    # -- writes --------------------------------------------------------------------

    def upsert_vectors(self, index: str, records: Sequence[VectorRecord]) -> None:
        if not records:
            return
        opened = self._require(index)
        # Validate every record before writing any, so a bad vector leaves no partial batch.
        points = [self._point(index, opened.dimension, record) for record in records]
        for start in range(0, len(points), _UPSERT_BATCH):
            with engine_errors(ENGINE, index, "upsert"):
                opened.shard.update(
                    UpdateOperation.upsert_points(points[start:start + _UPSERT_BATCH]))
        log.debug("vectors_upserted", index=index, count=len(records))

    def delete_vectors(self, index: str, unit_ids: Sequence[str]) -> None:
        if not unit_ids:
            return
        opened = self._open(index)
        if opened is None:
            return
        with engine_errors(ENGINE, index, "delete"):
            opened.shard.update(UpdateOperation.delete_points(list(unit_ids)))
        log.debug("vectors_deleted", index=index, count=len(unit_ids))

    # -- reads ---------------------------------------------------------------------

    def search_vectors(self, index: str, vector: Vector, k: int,
                       unit_filter: UnitFilter | None = None) -> list[Hit]:
        if k < 1:
            return []
        opened = self._open(index)
        if opened is None:
            return []
        query_vector = self._as_list(index, opened.dimension, vector, what="query vector")
        request = _search_request(query_vector, k, unit_filter)
        with engine_errors(ENGINE, index, "search"):
            points = opened.shard.query(request)
        return [Hit(unit_id=str(point.id), score=float(point.score)) for point in points]

    def count_vectors(self, index: str) -> int:
        opened = self._open(index)
        if opened is None:
            return 0
        with engine_errors(ENGINE, index, "count"):
            return int(opened.shard.count(CountRequest(exact=True)))

    def get_vectors(self, index: str, unit_ids: Sequence[str]) -> list[VectorRecord]:
        if not unit_ids:
            return []
        opened = self._open(index)
        if opened is None:
            return []
        wanted = list(dict.fromkeys(unit_ids))
        with engine_errors(ENGINE, index, "retrieve"):
            point_ids: list[int | uuid.UUID | str] = list(wanted)
            stored = opened.shard.retrieve(point_ids, with_payload=True,
                                           with_vector=[VECTOR_NAME])
        by_id = {str(point.id): self._record(index, point) for point in stored}
        return [by_id[unit_id] for unit_id in wanted if unit_id in by_id]

    # -- helpers -------------------------------------------------------------------

    def _path(self, index: str) -> Path:
        return index_folder(self._root, index)

    def _open(self, index: str) -> _OpenShard | None:
        """The open shard of ``index``, loading it from disk if needed; None if absent."""
        path = self._path(index)
        with self._lock:
            opened = self._shards.get(index)
            if opened is not None:
                return opened
            if not (path / _CONFIG_FILE).exists():
                return None
            with engine_errors(ENGINE, index, "open"):
                shard = EdgeShard.load(str(path))
            opened = _OpenShard(shard=shard, dimension=_persisted_dimension(path))
            self._shards[index] = opened
            log.debug("vector_index_opened", index=index, path=str(path),
                      dimension=opened.dimension)
            return opened

    def _require(self, index: str) -> _OpenShard:
        opened = self._open(index)
        if opened is None:
            raise NotFoundError(f"vector index {index!r} does not exist; call ensure_index first")
        return opened

    def _create(self, index: str, dimension: int) -> _OpenShard:
        path = self._path(index)
        path.mkdir(parents=True, exist_ok=True)
        with engine_errors(ENGINE, index, "create"):
            shard = EdgeShard.create(str(path), _shard_config(dimension))
        opened = _OpenShard(shard=shard, dimension=dimension)
        self._shards[index] = opened
        log.info("vector_index_created", index=index, path=str(path), dimension=dimension)
        return opened

    @staticmethod
    def _ensure_payload_indexes(index: str, shard: EdgeShard) -> None:
        with engine_errors(ENGINE, index, "create payload indexes"):
            present = set(shard.info().payload_schema)
            for field in _PAYLOAD_FIELDS:
                if field not in present:
                    shard.update(UpdateOperation.create_field_index(field,
                                                                    PayloadSchemaType.Keyword))

    @staticmethod
    def _as_list(index: str, dimension: int | None, vector: Vector, *, what: str) -> list[float]:
        return vector_values(vector, dimension, where=f"qdrant-edge index {index!r}", what=what)

    @staticmethod
    def _record(index: str, point: Record) -> VectorRecord:
        vectors = point.vector
        dense = vectors.get(VECTOR_NAME) if isinstance(vectors, dict) else None
        payload = point.payload or {}
        if not isinstance(dense, list) or "kind" not in payload:
            raise BackendError(f"qdrant-edge index {index!r}: point {point.id} lacks its "
                               f"'{VECTOR_NAME}' vector or its 'kind' payload")
        return VectorRecord(unit_id=str(point.id), vector=np.asarray(dense, dtype=np.float32),
                            payload=UnitPayload(
                                kind=UnitKind(payload["kind"]),
                                source_doc_ids=tuple(payload.get("source_doc_ids") or ()),
                                entities=tuple(payload.get("entities") or ())))

    @classmethod
    def _point(cls, index: str, dimension: int | None, record: VectorRecord) -> Point:
        vector = cls._as_list(index, dimension, record.vector,
                              what=f"vector of unit {record.unit_id!r}")
        # The engine parses the id here: a non-uuid unit id fails before any write.
        with engine_errors(ENGINE, index, f"upsert of unit {record.unit_id!r}"):
            return Point(record.unit_id, {VECTOR_NAME: vector}, record.payload.as_fields())
