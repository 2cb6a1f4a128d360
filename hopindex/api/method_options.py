"""The query methods' own options (``QueryOptions.params``) as the registry describes
them: what the HTTP API checks a query's ``options`` against and the CLI lists for
``--param``."""

from __future__ import annotations

from typing import Any

from hopindex.methods.registry import get_query_method, query_method_names


def option_schemas() -> dict[str, dict[str, Any]]:
    """Each query method's options as a JSON Schema object, for the methods that take
    any; a method whose spec has no ``options_schema`` takes none."""
    found: dict[str, dict[str, Any]] = {}
    for name in query_method_names():
        # Read with getattr: the field is optional on a method's spec.
        schema = getattr(get_query_method(name), "options_schema", None)
        if schema:
            found[name] = dict(schema)
    return found
