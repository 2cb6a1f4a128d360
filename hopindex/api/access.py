"""Who a request acts as, and what it may do: read or write, on which indexes.

Every door that serves callers other than the process's own user checks these: the
HTTP API's routes (from an API key or an event token, api/http/keys.py) and the MCP
server's tools (the same key's principal over HTTP; the whole service over stdio).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from hopindex.core.errors import AccessDeniedError

ALL_INDEXES = "*"


class Access(enum.StrEnum):
    READ = "read"  # queries, jobs, events, index descriptions, ingest dry runs
    WRITE = "write"  # everything READ allows, plus ingest, delete, cancel, webhooks

    def allows(self, needed: Access) -> bool:
        return self is Access.WRITE or needed is Access.READ


@dataclass(frozen=True, slots=True)
class Principal:
    """Who a request acts as: the key entry's name, its access and its indexes."""

    name: str
    access: Access
    indexes: frozenset[str] | None  # None: every index

    def covers(self, index: str) -> bool:
        return self.indexes is None or index in self.indexes

    @property
    def index_label(self) -> str:
        return ALL_INDEXES if self.indexes is None else "+".join(sorted(self.indexes))


# The principal of a server with no keys configured (it listens on loopback only), and
# of a door the process's own user drives (the MCP server on stdio).
LOCAL_PRINCIPAL = Principal(name="local", access=Access.WRITE, indexes=None)


def require_access(who: Principal, needed: Access) -> None:
    """Refused (``AccessDeniedError``) unless ``who`` has ``needed`` access."""
    if not who.access.allows(needed):
        raise AccessDeniedError(f"this API key ({who.name}) is {who.access.value}-only; "
                                f"this request needs {needed.value} access")


def require_index_scope(who: Principal, index: str) -> None:
    """Refused (``AccessDeniedError``, naming ``index``) unless ``who`` covers ``index``."""
    if not who.covers(index):
        raise AccessDeniedError(f"this API key ({who.name}) is not allowed on index "
                                f"{index!r}; it covers {who.index_label}", where="index")
