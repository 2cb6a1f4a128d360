"""The one registry of index and query methods, and the methods' own settings.

Built-in methods register here; third-party ones are found through the
``hopindex.methods`` entry-point group, whose every entry names a callable that
takes the registry::

    [project.entry-points."hopindex.methods"]
    sentences = "my_package.sentences:register"

    def register(registry: MethodRegistry) -> None:
        registry.add_index_method(SentencesMethod())
        registry.add_query_method(QueryMethodSpec(...))

Method packages never import this module; the layers above them (the runtime, the
API) look methods up here, so no layer names a concrete method.
"""

from __future__ import annotations

import dataclasses
import os
import threading
from collections.abc import Mapping
from typing import Any

from hopindex.backends.plugins import backend_variables, check_backend_settings
from hopindex.core.errors import ConfigError, InvalidInputError
from hopindex.core.plugin_settings import load_plugins, read_namespace
from hopindex.core.settings import Settings
from hopindex.methods.base import QueryMethod, SearchContext
from hopindex.methods.operations import MethodOperation
from hopindex.methods.plugin import IndexMethod, LlmUse, MethodRegistry, QueryMethodSpec

ENTRY_POINT_GROUP = "hopindex.methods"
_PREFIX = "HOPINDEX_"

_lock = threading.Lock()
_registry: MethodRegistry | None = None


def registry() -> MethodRegistry:
    """The registry, filled on first use: built-in methods, then entry points."""
    global _registry  # noqa: PLW0603  # one registry per process is the point
    with _lock:
        if _registry is None:
            found = MethodRegistry()
            _register_builtins(found)
            _register_entry_points(found)
            _check_defaults(found)
            _registry = found
        return _registry


def _register_builtins(found: MethodRegistry) -> None:
    # Imported here: each package imports this module's inputs (base, plugin), not it.
    from hopindex.methods import (
        bridgerag,
        compactrag,
        extractive,
        hops,
        indexrag,
        ircot,
        kgbridge,
        naive,
        sirerag,
    )

    for package in (extractive, indexrag, naive, ircot, bridgerag, sirerag, compactrag,
                    kgbridge, hops):
        package.register(found)


def _register_entry_points(found: MethodRegistry) -> None:
    load_plugins(ENTRY_POINT_GROUP, "method", found)


def _check_defaults(found: MethodRegistry) -> None:
    for method in found.index_methods.values():
        unknown = [q for q in method.default_queries if q not in found.query_methods]
        if not method.default_queries or unknown:
            raise ConfigError(f"index method {method.name!r} names default query methods "
                              f"{list(method.default_queries)}; unknown: {unknown}")


# An index created without naming its method: an LLM configured builds with the
# method that uses it, none with the one that needs none.
DEFAULT_INDEX_METHODS = {LlmUse.REQUIRED: "indexrag", LlmUse.NONE: "extractive"}


def default_index_method(llm_enabled: bool) -> str:
    return DEFAULT_INDEX_METHODS[LlmUse.REQUIRED if llm_enabled else LlmUse.NONE]


def index_method_names() -> list[str]:
    return sorted(registry().index_methods)


def query_method_names() -> list[str]:
    return sorted(registry().query_methods)


def get_index_method(name: str) -> IndexMethod:
    try:
        return registry().index_methods[name]
    except KeyError:
        raise InvalidInputError(f"unknown index method {name!r}; known: "
                                f"{', '.join(index_method_names())}", where="method") from None


def get_query_method(name: str) -> QueryMethodSpec:
    try:
        return registry().query_methods[name]
    except KeyError:
        raise InvalidInputError(f"unknown method {name!r}; known: "
                                f"{', '.join(query_method_names())}", where="method") from None


def fits(query: QueryMethodSpec, index_method: str) -> bool:
    """Whether ``query`` can read an index built by ``index_method``."""
    method = registry().index_methods.get(index_method)
    if method is None:
        return False
    return not query.reads or bool(query.reads & method.writes)


def fitting_queries(index_method: str) -> list[str]:
    return [name for name in query_method_names()
            if fits(registry().query_methods[name], index_method)]


def check_fit(query_name: str, index: str, index_method: str) -> QueryMethodSpec:
    """The query method, or a 400 naming the methods that can read the index."""
    spec = get_query_method(query_name)
    if index_method not in registry().index_methods:
        raise ConfigError(f"index {index!r} is built with {index_method!r}, which no "
                          "installed method provides: install its plugin")
    if not fits(spec, index_method):
        kinds = ", ".join(sorted(k.value for k in spec.reads))
        written = ", ".join(sorted(k.value for k in get_index_method(index_method).writes))
        raise InvalidInputError(
            f"method {query_name!r} reads {kinds} units, and index {index!r} "
            f"({index_method}) holds {written}; methods that fit: "
            f"{', '.join(fitting_queries(index_method))}", where="method")
    return spec


def create_query(name: str, context: SearchContext) -> QueryMethod:
    return get_query_method(name).factory(context)


def list_operations(method: str | None = None) -> list[MethodOperation]:
    """The operations methods registered (of one index method, or all), by name."""
    found = registry().operations.values()
    return sorted((o for o in found if method is None or o.method == method),
                  key=lambda o: (o.method, o.name))


def get_operation(index: str, index_method: str, name: str) -> MethodOperation:
    """Operation ``name`` of ``index``'s method; refused naming the methods that have
    it (``method``: what is wrong is the index's method, as a query's fit)."""
    operation = registry().operations.get((index_method, name))
    if operation is not None:
        return operation
    having = sorted(m for m, n in registry().operations if n == name)
    if not having:
        known = sorted({n for _, n in registry().operations})
        raise InvalidInputError(f"no operation {name!r}; operations: {known or 'none'}",
                                where="operation")
    raise InvalidInputError(f"index {index!r} is built with {index_method!r}, which has no "
                            f"operation {name!r} (only {', '.join(having)} indexes do)",
                            where="method")


def default_query(index_method: str) -> str:
    return get_index_method(index_method).default_queries[0]


def settings_types() -> dict[str, type[Any]]:
    """Each method that has settings, by name (index and query methods)."""
    found = registry()
    types: dict[str, type[Any]] = {}
    for name, method in found.index_methods.items():
        types[name] = method.settings_type
    for name, spec in found.query_methods.items():
        if spec.settings_type is not None:
            types[name] = spec.settings_type
    return types


def method_variables() -> dict[str, tuple[str, dataclasses.Field[Any]]]:
    """Every method setting's variable: ``HOPINDEX_<METHOD>_<FIELD>`` → (method, field)."""
    found: dict[str, tuple[str, dataclasses.Field[Any]]] = {}
    for name, kind in settings_types().items():
        for f in dataclasses.fields(kind):
            found[f"{_PREFIX}{name.upper()}_{f.name.upper()}"] = (name, f)
    return found


# Settings that moved into a method's own settings: the variables that replace them.
RENAMED_SETTINGS = {
    "HOPINDEX_TAU": "HOPINDEX_EXTRACTIVE_TAU (extractive) or HOPINDEX_INDEXRAG_TAU (indexrag)",
    "HOPINDEX_BRIDGE_MAX_DOCS": "HOPINDEX_EXTRACTIVE_BRIDGE_MAX_DOCS",
    "HOPINDEX_BRIDGE_MAX_SENTENCES": "HOPINDEX_EXTRACTIVE_BRIDGE_MAX_SENTENCES",
}


def load_settings(environ: Mapping[str, str] | None = None) -> Settings:
    """Settings from the environment, knowing every registered method's and backend's
    variables: a misspelt one is refused with the name it was probably meant to be."""
    env = os.environ if environ is None else environ
    renamed = [f"{old} was renamed: set {new}" for old, new in RENAMED_SETTINGS.items()
               if old in env]
    if renamed:
        raise ConfigError("; ".join(renamed))
    settings = Settings.from_env(env, method_names={**method_variables(), **backend_variables()})
    for name in settings_types():
        method_settings(settings, name)  # a bad value stops the process now, named
    check_backend_settings(settings)
    return settings


def method_settings(settings: Settings | None, name: str) -> Any:
    """Method ``name``'s settings dataclass, from ``settings.method_env`` (defaults for
    variables not given). Validation errors name the variable."""
    kind = settings_types().get(name)
    if kind is None:
        raise ConfigError(f"method {name!r} has no settings")
    return read_namespace(kind, name, settings.method_env if settings is not None else {})
