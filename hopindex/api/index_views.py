"""An index as callers see it: its name, method, creation time and options, and, when
described, what it holds (documents, units per kind) and its status with what it is
missing (``Outstanding.as_dict``). The CLI shows these fields locally as the HTTP API
sends them, so local and remote commands print alike."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hopindex.core.errors import NotFoundError
from hopindex.core.ids import validate_index_name

if TYPE_CHECKING:
    from hopindex.api.service import Hopindex
    from hopindex.backends.protocols import IndexInfo


def index_view(info: IndexInfo) -> dict[str, Any]:
    return {"name": info.name, "method": info.method, "created_at": info.created_at,
            "options": info.options}


def describe_index(service: Hopindex, name: str, *, verify: bool = False) -> dict[str, Any]:
    """The index with its method, settings, documents, units per kind and status;
    ``verify``: also read every document's text for text its units were not built from
    (what ``repair --check`` asks)."""
    validate_index_name(name)
    info = service.backends.state.get_index(name)
    if info is None:
        raise NotFoundError(f"no index {name!r}")
    units = service.backends.state.count_units(name)
    return {**index_view(info), "documents": service.count_documents(name),
            "units": {kind.value: n for kind, n in sorted(units.items())},
            **service.outstanding(name, verify=verify).as_dict()}
