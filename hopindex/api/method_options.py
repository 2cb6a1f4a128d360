"""The query methods' own options (``QueryOptions.params``) as the registry describes
them: what every query is checked against (an option its method does not take is
refused alike by the CLI, the HTTP API and a local call), and what the CLI lists for
``--param``."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from hopindex.api.query_platform import PLATFORM_OPTIONS, platform_options
from hopindex.core.errors import InvalidInputError
from hopindex.core.settings import Settings
from hopindex.methods.registry import get_query_method, query_method_names


def option_schemas(settings: Settings | None = None) -> dict[str, dict[str, Any]]:
    """Each query method's options as a JSON Schema object (every method takes the
    platform's, ``rerank``), as a server with ``settings`` takes them."""
    return {name: option_schema(name, settings) for name in query_method_names()}


def option_schema(method: str, settings: Settings | None = None) -> dict[str, Any]:
    """``method``'s options as a JSON Schema object: its own (none when its spec has no
    ``options_schema``) and the platform's, which the service reads for every method
    (with ``settings``: the values that server accepts)."""
    own = own_options(method)
    properties = {**own.get("properties", {}), **platform_options(settings)}
    return {"type": "object", "additionalProperties": False, **own,
            "properties": properties}


def own_options(method: str) -> dict[str, Any]:
    """``method``'s own options schema (empty when its spec has none)."""
    # Read with getattr: the field is optional on a method's spec.
    return dict(getattr(get_query_method(method), "options_schema", None) or {})


def check_option_names(method: str, names: Iterable[str]) -> None:
    """``InvalidInputError`` naming ``params.NAME`` for an option ``method`` does not
    take (a method without options of its own takes none, rather than ignoring them)."""
    own = tuple(own_options(method).get("properties", {}))
    platform = ", ".join(PLATFORM_OPTIONS)
    for name in names:
        if name not in own and name not in PLATFORM_OPTIONS:
            listed = (f"known: {', '.join(own)} (and {platform}, every method's)" if own
                      else f"it takes none of its own ({platform} is every method's)")
            raise InvalidInputError(f"unknown option {name!r} for method {method!r}; "
                                    f"{listed}", where=f"params.{name}")
