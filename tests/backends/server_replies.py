"""Response bodies of the shapes Elasticsearch 9 and Qdrant document, for the recording server.

Each helper builds one documented response; ``Script`` routes a request to the reply
a test chose for its method and path. Unrouted requests get a 500 naming them, so
an unexpected call fails the test loudly.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.backends.recording_server import Recorded, Reply

ES_HEADERS = {"X-Elastic-Product": "Elasticsearch"}

Route = Reply | Callable[[Recorded], Reply] | list[Reply]


class Script:
    """Replies by (method, path); a list is served in order, its last entry repeating."""

    def __init__(self, routes: dict[tuple[str, str], Route] | None = None) -> None:
        self.routes: dict[tuple[str, str], Route] = dict(routes or {})

    def __call__(self, request: Recorded) -> Reply:
        route = self.routes.get((request.method, request.path))
        if route is None:
            return Reply(500, {"error": f"unscripted request {request.method} {request.path}"})
        if isinstance(route, list):
            return route.pop(0) if len(route) > 1 else route[0]
        if isinstance(route, Reply):
            return route
        return route(request)


# -- Elasticsearch -------------------------------------------------------------------

def es_error(status: int, error_type: str, reason: str) -> Reply:
    cause = {"type": error_type, "reason": reason}
    return Reply(status, {"error": {"root_cause": [cause], **cause}, "status": status})


def es_ack(**extra: Any) -> Reply:
    return Reply(200, {"acknowledged": True, **extra})


def es_bulk(failures: dict[str, tuple[int, str, str]] | None = None
            ) -> Callable[[Recorded], Reply]:
    """The bulk response to whatever actions were sent; ``failures`` maps a document id
    to (status, error type, reason) for the items that fail."""
    failures = failures or {}

    def reply(request: Recorded) -> Reply:
        items: list[dict[str, Any]] = []
        for line in request.ndjson():
            op = next(iter(line))
            if op not in ("index", "create", "delete", "update"):
                continue  # a document source line
            meta = line[op]
            doc_id = meta.get("_id")
            if doc_id in failures:
                status, error_type, reason = failures[doc_id]
                item: dict[str, Any] = {"_index": meta["_index"], "_id": doc_id,
                                        "status": status,
                                        "error": {"type": error_type, "reason": reason}}
            else:
                result = "deleted" if op == "delete" else "created"
                item = {"_index": meta["_index"], "_id": doc_id, "_version": 1,
                        "result": result, "status": 200 if op == "delete" else 201,
                        "_shards": {"total": 1, "successful": 1, "failed": 0},
                        "_seq_no": 0, "_primary_term": 1}
            items.append({op: item})
        errors = any("error" in next(iter(i.values())) for i in items)
        return Reply(200, {"took": 3, "errors": errors, "items": items})

    return reply


def es_search(hits: list[tuple[str, float]], index: str = "hopindex-x.v1") -> Reply:
    return Reply(200, {
        "took": 2, "timed_out": False,
        "_shards": {"total": 1, "successful": 1, "skipped": 0, "failed": 0},
        "hits": {"max_score": max((s for _, s in hits), default=None),
                 "hits": [{"_index": index, "_id": unit_id, "_score": score}
                          for unit_id, score in hits]},
    })


def es_count(count: int) -> Reply:
    return Reply(200, {"count": count,
                       "_shards": {"total": 1, "successful": 1, "skipped": 0, "failed": 0}})


# -- Qdrant --------------------------------------------------------------------------

def qdrant_ok(result: Any) -> Reply:
    return Reply(200, {"result": result, "status": "ok", "time": 0.001})


def qdrant_error(status: int, message: str) -> Reply:
    return Reply(status, {"status": {"error": message}, "time": 0.0})


def qdrant_update() -> Reply:
    return qdrant_ok({"operation_id": 7, "status": "completed"})


def qdrant_collection(dimension: int, payload_fields: tuple[str, ...] = ()) -> Reply:
    """GET /collections/{name}: a green collection with one named cosine vector."""
    return qdrant_ok({
        "status": "green", "optimizer_status": "ok", "segments_count": 2,
        "points_count": 0, "indexed_vectors_count": 0,
        "config": {
            "params": {"vectors": {"dense": {"size": dimension, "distance": "Cosine"}},
                       "shard_number": 1, "replication_factor": 1,
                       "write_consistency_factor": 1, "on_disk_payload": True},
            "hnsw_config": {"m": 16, "ef_construct": 100, "full_scan_threshold": 10000,
                            "max_indexing_threads": 0, "on_disk": False},
            "optimizer_config": {"deleted_threshold": 0.2, "vacuum_min_vector_number": 1000,
                                 "default_segment_number": 0, "flush_interval_sec": 5},
            "wal_config": {"wal_capacity_mb": 32, "wal_segments_ahead": 0},
        },
        "payload_schema": {name: {"data_type": "keyword", "points": 0}
                           for name in payload_fields},
    })


def qdrant_points(hits: list[tuple[str, float]]) -> Reply:
    return qdrant_ok({"points": [{"id": unit_id, "version": 3, "score": score}
                                 for unit_id, score in hits]})
