"""A job's scope as the state stores keep it: JSON cut into pages."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from hopindex.backends.state.connection import dumps

# A job's scope is stored in pages of at most this many characters: it lists every
# document of the job, so at a million documents one value would be tens of MB, past
# what a Redis client should move in one reply or SQLite keep in one row comfortably.
SCOPE_PAGE_CHARS = 256 * 1024


def scope_pages(scope: Mapping[str, Any]) -> list[str]:
    """The scope as JSON cut into pages, in order (at least one)."""
    encoded = dumps(scope)
    return [encoded[at:at + SCOPE_PAGE_CHARS]
            for at in range(0, len(encoded), SCOPE_PAGE_CHARS)] or [encoded]


def scope_of_pages(pages: Sequence[str]) -> dict[str, Any] | None:
    """The scope the pages hold; None when there are none."""
    if not pages:
        return None
    scope: dict[str, Any] = json.loads("".join(pages))
    return scope
