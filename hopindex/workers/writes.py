"""Writes that must reach every store together, in an order that survives a crash.

Deletes go engines first, state last: a crash in between leaves a state row
whose vectors are gone, which a retry deletes again; the reverse would leave
orphan vectors nothing points to.
"""

from __future__ import annotations

from collections.abc import Sequence

from hopindex.backends.registry import Backends


def delete_units_everywhere(backends: Backends, index: str, unit_ids: Sequence[str]) -> None:
    if not unit_ids:
        return
    ids = list(unit_ids)
    backends.vectors.delete_vectors(index, ids)
    backends.keywords.delete_units(index, ids)
    backends.state.delete_units(index, ids)
