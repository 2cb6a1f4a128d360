"""hopindex: multi-hop retrieval with cross-document reasoning done at index time.

``from hopindex import Client`` is the Python SDK (``hopindex.api.client``). It is
resolved on first use, so a worker process importing ``hopindex`` never loads the
front doors.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from hopindex.api.client import Client
    from hopindex.core.errors import HopindexError

__all__ = ["Client", "HopindexError", "__version__"]


def __getattr__(name: str) -> Any:
    if name == "Client":
        from hopindex.api.client import Client

        return Client
    if name == "HopindexError":
        from hopindex.core.errors import HopindexError

        return HopindexError
    raise AttributeError(f"module 'hopindex' has no attribute {name!r}")
