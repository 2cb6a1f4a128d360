"""The Qdrant server requests of the vector adapter, as qdrant-client models.

Each model serialises to the REST body Qdrant documents (``model_dump`` with
``exclude_none``), so tests can hold them against the REST API and against what
the Qdrant Edge twin writes and asks: one named vector ``dense`` with cosine
distance, the unit's ``kind``, ``source_doc_ids`` and ``entities`` as payload
with a keyword index on each, unit ids (uuid strings) as point ids.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from qdrant_client.http import models

from hopindex.backends.protocols import UnitFilter, UnitPayload, Vector, VectorRecord
from hopindex.backends.vector.shape import vector_values
from hopindex.core.errors import BackendError
from hopindex.core.models import UnitKind

VECTOR_NAME = "dense"
PAYLOAD_FIELDS = ("kind", "source_doc_ids", "entities")


def collection_name(prefix: str, index: str) -> str:
    return f"{prefix}{index}"


def vectors_config(dimension: int) -> dict[str, models.VectorParams]:
    return {VECTOR_NAME: models.VectorParams(size=dimension, distance=models.Distance.COSINE)}


def payload_of(payload: UnitPayload) -> dict[str, object]:
    return payload.as_fields()


def unit_payload(collection: str, point_id: str,
                 payload: dict[str, object] | None) -> UnitPayload:
    """The ``UnitPayload`` a stored point carries (read back by ``get_vectors``)."""
    data = payload or {}
    try:
        kind = UnitKind(str(data["kind"]))
    except (KeyError, ValueError):
        raise BackendError(f"qdrant collection {collection!r}: point {point_id} has no valid "
                           f"'kind' in its payload: {data!r}") from None
    return UnitPayload(kind=kind, source_doc_ids=_strings(data.get("source_doc_ids")),
                       entities=_strings(data.get("entities")))


def _strings(value: object) -> tuple[str, ...]:
    return tuple(str(item) for item in value) if isinstance(value, list) else ()


def vector_list(collection: str, dimension: int | None, vector: Vector, *,
                what: str) -> list[float]:
    """``vector`` as a JSON list, refused (naming the collection) when its shape is wrong."""
    return vector_values(vector, dimension, where=f"qdrant collection {collection!r}", what=what)


def point(collection: str, dimension: int | None, record: VectorRecord) -> models.PointStruct:
    try:
        uuid.UUID(record.unit_id)
    except ValueError:
        # The server would refuse the whole batch; say which unit instead.
        raise BackendError(f"qdrant collection {collection!r}: unit id {record.unit_id!r} is "
                           "not a uuid (Qdrant point ids are uuids or integers)") from None
    vector = vector_list(collection, dimension, record.vector,
                         what=f"vector of unit {record.unit_id!r}")
    return models.PointStruct(id=record.unit_id, vector={VECTOR_NAME: vector},
                              payload=payload_of(record.payload))


def to_filter(unit_filter: UnitFilter | None) -> models.Filter | None:
    """Every non-empty field must match; within a field any listed value matches."""
    if unit_filter is None or unit_filter.is_empty:
        return None
    return models.Filter(must=[models.FieldCondition(key=key, match=models.MatchAny(any=values))
                               for key, values in unit_filter.conditions()])


def point_ids(unit_ids: Sequence[str]) -> models.PointIdsList:
    return models.PointIdsList(points=list(dict.fromkeys(unit_ids)))
