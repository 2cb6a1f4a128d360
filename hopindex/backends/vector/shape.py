"""The one check every vector store makes before a vector reaches its engine."""

from __future__ import annotations

import numpy as np

from hopindex.backends.protocols import Vector
from hopindex.core.errors import BackendError


def vector_values(vector: Vector, dimension: int | None, *, where: str,
                  what: str) -> list[float]:
    """``vector`` as a list of floats, refused (naming ``where``) when it is not 1-D or
    not ``dimension`` long: an engine would store or search it wrongly, not fail."""
    array = np.asarray(vector, dtype=np.float32)
    if array.ndim != 1 or (dimension is not None and array.shape[0] != dimension):
        expected = f"({dimension},)" if dimension is not None else "a 1-D vector"
        raise BackendError(f"{where}: dimension mismatch: {what} has shape {array.shape}, "
                           f"the index expects {expected}")
    values: list[float] = array.tolist()
    return values
