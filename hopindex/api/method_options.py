"""The query methods' own options (``QueryOptions.params``) as the registry describes
them: what every query is checked against (an option its method does not take is
refused alike by the CLI, the HTTP API and a local call), and what the CLI lists for
``--param``."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from hopindex.core.errors import InvalidInputError
from hopindex.methods.registry import get_query_method, query_method_names


def option_schemas() -> dict[str, dict[str, Any]]:
    """Each query method's options as a JSON Schema object, for the methods that take
    any; a method whose spec has no ``options_schema`` takes none."""
    return {name: schema for name in query_method_names() if (schema := option_schema(name))}


def option_schema(method: str) -> dict[str, Any]:
    """``method``'s options as a JSON Schema object; empty when it takes none."""
    # Read with getattr: the field is optional on a method's spec.
    return dict(getattr(get_query_method(method), "options_schema", None) or {})


def check_option_names(method: str, names: Iterable[str]) -> None:
    """``InvalidInputError`` naming ``params.NAME`` for an option ``method`` does not
    take (a method without options takes none, rather than ignoring them)."""
    known = tuple(option_schema(method).get("properties", {}))
    for name in names:
        if name not in known:
            listed = f"known: {', '.join(known)}" if known else "it takes none"
            raise InvalidInputError(f"unknown option {name!r} for method {method!r}; "
                                    f"{listed}", where=f"params.{name}")
