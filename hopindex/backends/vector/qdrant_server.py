"""``VectorStore`` on a Qdrant server or cluster, for scale-out.

``qdrant://host[:port][/prefix]`` (http, port 6333) or ``qdrant+https://…``;
query options ``prefer_grpc=true`` and ``grpc_port=N`` (or the settings
``HOPINDEX_QDRANT_PREFER_GRPC`` and ``HOPINDEX_QDRANT_API_KEY``). Each hopindex
index is a collection ``{prefix}{index}`` shaped like the Qdrant Edge twin's shard
(``qdrant_server_requests``). ``AsyncQdrantClient`` runs on the adapter's own loop
thread, which keeps the protocol synchronous for Celery tasks and queries. Every
write waits for the server to apply it (``wait=True``), so a search right after
it sees it.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import parse_qs, urlsplit

import numpy as np
from qdrant_client import AsyncQdrantClient
from qdrant_client.http import models
from qdrant_client.http.exceptions import UnexpectedResponse

from hopindex.backends.loop_thread import ClientOnLoop
from hopindex.backends.protocols import UnitFilter, Vector, VectorRecord
from hopindex.backends.vector import qdrant_server_requests as req
from hopindex.backends.vector.qdrant_server_errors import ENGINE, errors, is_missing
from hopindex.core.errors import BackendError, ConfigError, InvalidInputError, NotFoundError
from hopindex.core.ids import validate_index_name
from hopindex.core.logging import get_logger
from hopindex.core.models import Hit
from hopindex.core.settings import Settings

log = get_logger(__name__)

T = TypeVar("T")

SCHEMES = {"qdrant": False, "qdrant+https": True}
DEFAULT_PORT = 6333
DEFAULT_GRPC_PORT = 6334
# Points per upsert request: ~256 vectors of 384 floats is ~1 MB of JSON, well inside the
# server's 32 MB request limit, and a retry resends little.
UPSERT_BATCH = 256
_TRUE = ("1", "true", "yes", "on")


@dataclass(frozen=True, slots=True)
class QdrantServerConfig:
    host: str
    port: int = DEFAULT_PORT
    https: bool = False
    prefix: str = ""
    prefer_grpc: bool = False
    grpc_port: int = DEFAULT_GRPC_PORT
    api_key: str = field(default="", repr=False)
    timeout_s: int = 30
    collection_prefix: str = "hopindex-"
    shard_number: int = 0
    replication_factor: int = 0

    @classmethod
    def from_url(cls, url: str, settings: Settings | None = None) -> QdrantServerConfig:
        s = settings or Settings()
        parts = urlsplit(url)
        if parts.scheme not in SCHEMES:
            raise ConfigError(f"HOPINDEX_VECTOR_URL: expected qdrant://host:port or "
                              f"qdrant+https://host:port, got {url!r}")
        try:
            host, port = parts.hostname, parts.port
        except ValueError:
            host, port = None, None
        if not host:
            raise ConfigError(f"HOPINDEX_VECTOR_URL: no host (or a bad port) in {url!r}")
        query = parse_qs(parts.query)
        unknown = set(query) - {"prefer_grpc", "grpc_port"}
        if unknown:
            raise ConfigError(f"HOPINDEX_VECTOR_URL: unknown option(s) {sorted(unknown)} in "
                              f"{url!r} (known: prefer_grpc, grpc_port)")
        grpc_port = query.get("grpc_port", [str(DEFAULT_GRPC_PORT)])[-1]
        if not grpc_port.isdigit():
            raise ConfigError(f"HOPINDEX_VECTOR_URL: grpc_port must be a number in {url!r}")
        prefer_grpc = (query.get("prefer_grpc", [""])[-1].lower() in _TRUE
                       or s.qdrant_prefer_grpc)
        return cls(host=host, port=port or DEFAULT_PORT, https=SCHEMES[parts.scheme],
                   prefix=parts.path.strip("/"), prefer_grpc=prefer_grpc,
                   grpc_port=int(grpc_port), api_key=s.qdrant_api_key,
                   timeout_s=s.qdrant_timeout_s, collection_prefix=s.qdrant_collection_prefix,
                   shard_number=s.qdrant_shard_number,
                   replication_factor=s.qdrant_replication_factor)

    def client_options(self) -> dict[str, Any]:
        """Keyword arguments of ``AsyncQdrantClient`` (the API key included)."""
        options: dict[str, Any] = {
            "host": self.host, "port": self.port, "grpc_port": self.grpc_port,
            "prefer_grpc": self.prefer_grpc, "https": self.https, "timeout": self.timeout_s,
            # The check runs on a thread of its own at construction and only warns;
            # failures surface on the first real request anyway.
            "check_compatibility": False,
        }
        if self.prefix:
            options["prefix"] = self.prefix
        if self.api_key:
            options["api_key"] = self.api_key
        return options

    def connect(self) -> AsyncQdrantClient:
        """A client of the server this configuration names."""
        return AsyncQdrantClient(**self.client_options())


class QdrantServerVectorStore:
    """Dense vectors in a Qdrant server, one collection per hopindex index.

    ``connect`` builds the client, on the adapter's loop thread and again after each
    ``close``; it defaults to ``config.connect`` (the server ``config`` names). Any
    ``AsyncQdrantClient`` serves, qdrant-client's in-process mode included
    (``AsyncQdrantClient(location=":memory:")``); ``config`` then still gives the
    collection prefix and the shard and replica counts.
    """

    def __init__(self, config: QdrantServerConfig,
                 connect: Callable[[], AsyncQdrantClient] | None = None) -> None:
        self.config = config
        # Dimension of each collection seen, so bad vectors fail before any request.
        # Only touched on the loop thread.
        self._dimensions: dict[str, int] = {}
        self._host = ClientOnLoop("hopindex-qdrant", connect or config.connect)

    @property
    def _client(self) -> AsyncQdrantClient:
        # Read when a coroutine runs, so one started after a reconnect gets the new client.
        return self._host.client

    def _run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run on the adapter's loop; after ``close`` the next call connects again."""
        return self._host.run(coroutine)

    # -- lifecycle -----------------------------------------------------------------

    def ensure_index(self, index: str, dimension: int) -> None:
        if dimension < 1:
            raise BackendError(f"{ENGINE} index {index!r}: dimension must be positive, "
                               f"got {dimension}")
        self._run(self._ensure(validate_index_name(index), dimension))

    def drop_index(self, index: str) -> None:
        self._run(self._drop(validate_index_name(index)))

    def close(self) -> None:
        self._host.close()

    # -- writes --------------------------------------------------------------------

    def upsert_vectors(self, index: str, records: Sequence[VectorRecord]) -> None:
        if records:
            self._run(self._upsert(validate_index_name(index), records))

    def delete_vectors(self, index: str, unit_ids: Sequence[str]) -> None:
        if unit_ids:
            self._run(self._delete(validate_index_name(index), req.point_ids(unit_ids)))

    def delete_matching(self, index: str, unit_filter: UnitFilter) -> None:
        """Delete every point the filter selects. Not part of ``VectorStore``; an empty
        filter is refused (it would select every point: use ``drop_index``)."""
        selection = req.to_filter(unit_filter)
        if selection is None:
            raise InvalidInputError("an empty filter selects every unit; use drop_index",
                                    where="unit_filter")
        self._run(self._delete(validate_index_name(index),
                               models.FilterSelector(filter=selection)))

    # -- reads ---------------------------------------------------------------------

    def search_vectors(self, index: str, vector: Vector, k: int,
                       unit_filter: UnitFilter | None = None) -> list[Hit]:
        if k < 1:
            return []
        return self._run(self._search(validate_index_name(index), vector, k, unit_filter))

    def count_vectors(self, index: str) -> int:
        return self._run(self._count(validate_index_name(index)))

    def get_vectors(self, index: str, unit_ids: Sequence[str]) -> list[VectorRecord]:
        if not unit_ids:
            return []
        return self._run(self._retrieve(validate_index_name(index), unit_ids))

    # -- async side ----------------------------------------------------------------

    def _name(self, index: str) -> str:
        return req.collection_name(self.config.collection_prefix, index)

    async def _dimension(self, index: str) -> int | None:
        """The collection's vector size; None when the collection does not exist."""
        if index not in self._dimensions:
            await self._info(index)
        return self._dimensions.get(index)

    async def _info(self, index: str) -> models.CollectionInfo | None:
        """The collection's description (and its dimension, remembered); None if absent."""
        name = self._name(index)
        with errors(index, "reading the collection of"):
            try:
                info = await self._client.get_collection(name)
            except Exception as exc:
                if is_missing(exc, name):
                    self._dimensions.pop(index, None)
                    return None
                raise
        vectors = info.config.params.vectors
        params = vectors.get(req.VECTOR_NAME) if isinstance(vectors, dict) else None
        if params is None:
            raise BackendError(f"{ENGINE} collection {name!r} has no "
                               f"'{req.VECTOR_NAME}' vector: it was not made by hopindex")
        self._dimensions[index] = int(params.size)
        return info

    async def _ensure(self, index: str, dimension: int) -> None:
        name = self._name(index)
        info = await self._info(index)
        if info is None:
            with errors(index, "creating the collection of"):
                try:
                    await self._client.create_collection(
                        name, vectors_config=req.vectors_config(dimension),
                        shard_number=self.config.shard_number or None,
                        replication_factor=self.config.replication_factor or None)
                    log.info("vector_index_created", engine=ENGINE, index=index,
                             collection=name, dimension=dimension)
                except UnexpectedResponse as exc:
                    # 409: another process created it between our check and our create.
                    if exc.status_code != 409:
                        raise
            info = await self._info(index)
            if info is None:
                raise BackendError(f"{ENGINE} collection {name!r} vanished right after "
                                   "it was created")
        existing = self._dimensions[index]
        if existing != dimension:
            raise BackendError(
                f"{ENGINE} index {index!r} holds {existing}-dimensional vectors, cannot use "
                f"it for {dimension}-dimensional ones; drop it or use another index")
        with errors(index, "indexing the payload of"):
            for field_name in req.PAYLOAD_FIELDS:
                if field_name not in (info.payload_schema or {}):
                    await self._client.create_payload_index(
                        name, field_name=field_name,
                        field_schema=models.PayloadSchemaType.KEYWORD, wait=True)

    async def _drop(self, index: str) -> None:
        self._dimensions.pop(index, None)
        name = self._name(index)
        with errors(index, "dropping the collection of"):
            try:
                dropped = await self._client.delete_collection(name)
            except Exception as exc:
                if is_missing(exc, name):
                    return
                raise
        if dropped:
            log.info("vector_index_dropped", engine=ENGINE, index=index)

    async def _upsert(self, index: str, records: Sequence[VectorRecord]) -> None:
        dimension = await self._dimension(index)
        if dimension is None:
            raise NotFoundError(f"vector index {index!r} does not exist; call ensure_index first")
        name = self._name(index)
        # Validate every record before writing any, so a bad one leaves no partial batch.
        points = [req.point(name, dimension, record) for record in records]
        with errors(index, "upserting into"):
            for start in range(0, len(points), UPSERT_BATCH):
                try:
                    await self._client.upsert(name, points=points[start:start + UPSERT_BATCH],
                                              wait=True)
                except Exception as exc:
                    if is_missing(exc, name):
                        self._dimensions.pop(index, None)
                        raise NotFoundError(f"vector index {index!r} does not exist; call "
                                            "ensure_index first") from exc
                    raise
        log.debug("vectors_upserted", engine=ENGINE, index=index, count=len(points))

    async def _delete(self, index: str, selector: models.PointIdsList | models.FilterSelector
                      ) -> None:
        name = self._name(index)
        with errors(index, "deleting from"):
            try:
                await self._client.delete(name, points_selector=selector, wait=True)
            except Exception as exc:
                if not is_missing(exc, name):
                    raise

    async def _search(self, index: str, vector: Vector, k: int,
                      unit_filter: UnitFilter | None) -> list[Hit]:
        dimension = await self._dimension(index)
        if dimension is None:
            return []
        name = self._name(index)
        query = req.vector_list(name, dimension, vector, what="query vector")
        with errors(index, "searching"):
            try:
                response = await self._client.query_points(
                    name, query=query, using=req.VECTOR_NAME, limit=k,
                    query_filter=req.to_filter(unit_filter), with_payload=False,
                    with_vectors=False)
            except Exception as exc:
                if is_missing(exc, name):
                    return []
                raise
        return [Hit(unit_id=str(p.id), score=float(p.score)) for p in response.points]

    async def _count(self, index: str) -> int:
        name = self._name(index)
        with errors(index, "counting"):
            try:
                result = await self._client.count(name, exact=True)
            except Exception as exc:
                if is_missing(exc, name):
                    return 0
                raise
        return int(result.count)

    async def _retrieve(self, index: str, unit_ids: Sequence[str]) -> list[VectorRecord]:
        name = self._name(index)
        wanted = list(dict.fromkeys(unit_ids))
        with errors(index, "reading"):
            try:
                found = await self._client.retrieve(name, ids=wanted, with_payload=True,
                                                    with_vectors=[req.VECTOR_NAME])
            except Exception as exc:
                if is_missing(exc, name):
                    return []
                raise
        by_id: dict[str, VectorRecord] = {}
        for stored in found:
            vectors = stored.vector
            dense = vectors.get(req.VECTOR_NAME) if isinstance(vectors, dict) else None
            if not isinstance(dense, list):
                raise BackendError(f"{ENGINE} collection {name!r}: point {stored.id} has no "
                                   f"'{req.VECTOR_NAME}' vector")
            unit_id = str(stored.id)
            by_id[unit_id] = VectorRecord(
                unit_id=unit_id, vector=np.asarray(dense, dtype=np.float32),
                payload=req.unit_payload(name, unit_id, stored.payload))
        return [by_id[unit_id] for unit_id in wanted if unit_id in by_id]
