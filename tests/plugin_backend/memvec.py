"""``memvec://NAME``: a vector store held in this process's memory, cosine-ranked.

Every opening of one ``NAME`` in a process shares its data, as every opening of one
folder shares its files: a closed store's collections are there for the next opening.
Its one setting, ``HOPINDEX_MEMVEC_MAX_POINTS``, caps the points of each collection.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import numpy as np

from hopindex.backends.plugins import backend_settings
from hopindex.backends.protocols import UnitFilter, Vector, VectorRecord, VectorStore
from hopindex.core.errors import BackendError, ConfigError, NotFoundError
from hopindex.core.models import Hit
from hopindex.core.settings import Settings

NAME = "memvec"


@dataclass(frozen=True, slots=True)
class MemvecSettings:
    """``HOPINDEX_MEMVEC_<FIELD>``."""

    # Points one collection may hold; an upsert that would pass it is refused whole.
    max_points: int = 100_000

    def __post_init__(self) -> None:
        if self.max_points < 1:
            raise ValueError(f"max_points must be at least 1, got {self.max_points}")


@dataclass(slots=True)
class _Collection:
    dimension: int
    points: dict[str, VectorRecord] = field(default_factory=dict)


@dataclass(slots=True)
class _Space:
    """What one ``memvec://NAME`` holds: its collections, behind one lock."""

    collections: dict[str, _Collection] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)


_spaces: dict[str, _Space] = {}
_spaces_lock = threading.Lock()


def _unit(vector: Vector) -> Vector:
    norm = float(np.linalg.norm(vector))
    return (vector / norm if norm else vector).astype(np.float32)


def _matches(record: VectorRecord, unit_filter: UnitFilter | None) -> bool:
    if unit_filter is None:
        return True
    fields = record.payload.as_fields()
    for name, values in unit_filter.conditions():
        held = fields[name] if isinstance(fields[name], list) else [fields[name]]
        if not set(values) & set(held):  # any value within a field, every field
            return False
    return True


class MemoryVectorStore:
    """A ``VectorStore`` over one in-memory space."""

    def __init__(self, name: str, settings: MemvecSettings) -> None:
        with _spaces_lock:
            self._space = _spaces.setdefault(name, _Space())
        self._settings = settings

    def _dimension_error(self, index: str, expected: int, got: int) -> BackendError:
        return BackendError(f"memvec index {index!r} holds {expected}-dimensional vectors, "
                            f"got dimension {got}")

    def ensure_index(self, index: str, dimension: int) -> None:
        with self._space.lock:
            found = self._space.collections.setdefault(index, _Collection(dimension))
            if found.dimension != dimension:
                raise self._dimension_error(index, found.dimension, dimension)

    def upsert_vectors(self, index: str, records: Sequence[VectorRecord]) -> None:
        with self._space.lock:
            collection = self._space.collections.get(index)
            if collection is None:
                raise NotFoundError(f"vector index {index!r} does not exist; "
                                    "call ensure_index first")
            for record in records:
                if record.vector.shape != (collection.dimension,):
                    raise self._dimension_error(index, collection.dimension,
                                                record.vector.size)
            # The last of repeated ids wins, as a later upsert replaces an earlier one.
            batch = {r.unit_id: VectorRecord(r.unit_id, _unit(r.vector), r.payload)
                     for r in records}
            total = len(collection.points.keys() | batch.keys())
            if total > self._settings.max_points:
                raise BackendError(f"memvec index {index!r} would hold {total} points, over "
                                   f"HOPINDEX_MEMVEC_MAX_POINTS={self._settings.max_points}")
            collection.points.update(batch)

    def delete_vectors(self, index: str, unit_ids: Sequence[str]) -> None:
        with self._space.lock:
            collection = self._space.collections.get(index)
            if collection is None:
                return
            for unit_id in unit_ids:
                collection.points.pop(unit_id, None)

    def search_vectors(self, index: str, vector: Vector, k: int,
                       unit_filter: UnitFilter | None = None) -> list[Hit]:
        with self._space.lock:
            collection = self._space.collections.get(index)
            if collection is None or k <= 0:
                return []
            if vector.shape != (collection.dimension,):
                raise self._dimension_error(index, collection.dimension, vector.size)
            kept = [r for r in collection.points.values() if _matches(r, unit_filter)]
        if not kept:
            return []
        scores = np.stack([r.vector for r in kept]) @ _unit(vector)
        order = np.argsort(-scores, kind="stable")[:k]
        return [Hit(unit_id=kept[i].unit_id, score=float(scores[i])) for i in order]

    def count_vectors(self, index: str) -> int:
        with self._space.lock:
            collection = self._space.collections.get(index)
            return 0 if collection is None else len(collection.points)

    def get_vectors(self, index: str, unit_ids: Sequence[str]) -> list[VectorRecord]:
        with self._space.lock:
            collection = self._space.collections.get(index)
            points = {} if collection is None else collection.points
            asked = dict.fromkeys(unit_ids)  # in the order asked, each once
            return [points[unit_id] for unit_id in asked if unit_id in points]

    def drop_index(self, index: str) -> None:
        with self._space.lock:
            self._space.collections.pop(index, None)

    def close(self) -> None:
        """Nothing to release: the space outlives its openings (see the module doc)."""


def open_memvec(url: str, settings: Settings) -> VectorStore:
    parts = urlsplit(url)
    name = parts.netloc + parts.path
    if not name:
        raise ConfigError(f"HOPINDEX_VECTOR_URL: name the space, as in memvec://scratch, "
                          f"got {url!r}")
    return MemoryVectorStore(name, backend_settings(settings, NAME))


def forget_space(name: str) -> None:
    """Drop everything ``memvec://NAME`` holds (a test's clean-up)."""
    with _spaces_lock:
        _spaces.pop(name, None)
