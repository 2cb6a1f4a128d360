"""The process's one registry of backends, and their own settings.

Built-in backends register first (``builtin.py``); third-party ones are found through
the ``hopindex.backends`` entry-point group (``plugin.py`` shows an entry), once per
process. ``registry.py`` opens the backend a URL names through ``open_backend``, so no
code above it names a concrete adapter.
"""

from __future__ import annotations

import dataclasses
import threading
from typing import Any
from urllib.parse import urlsplit

from hopindex.backends import builtin
from hopindex.backends.plugin import BackendRegistry, BackendRole, BackendSpec
from hopindex.core.errors import ConfigError
from hopindex.core.plugin_settings import load_plugins, read_namespace
from hopindex.core.settings import Settings

ENTRY_POINT_GROUP = "hopindex.backends"

_lock = threading.Lock()
_registry: BackendRegistry | None = None


def backend_registry() -> BackendRegistry:
    """The registry, filled on first use: built-in backends, then entry points."""
    global _registry  # noqa: PLW0603  # one registry per process is the point
    with _lock:
        if _registry is None:
            found = BackendRegistry()
            builtin.register(found)
            _register_entry_points(found)
            _registry = found
        return _registry


def _register_entry_points(found: BackendRegistry) -> None:
    load_plugins(ENTRY_POINT_GROUP, "backend", found)


def find_backend(role: BackendRole, url: str) -> BackendSpec:
    """The backend serving ``url``'s scheme for ``role``, or a ``ConfigError`` naming the
    role's setting and every scheme registered for it."""
    found = backend_registry()
    spec = found.find(role, urlsplit(url).scheme)
    if spec is None:
        expected = ", ".join(f"{scheme}://" for scheme in found.schemes(role))
        raise ConfigError(f"{role.variable}: unsupported scheme in {url!r} (registered: "
                          f"{expected}; a backend plugin adds others through the "
                          f"{ENTRY_POINT_GROUP!r} entry points)")
    return spec


def embedded_backend(role: BackendRole, url: str) -> bool:
    """Whether ``url`` names an embedded engine's folder (an unknown scheme: no; opening
    it is what reports it)."""
    spec = backend_registry().find(role, urlsplit(url).scheme)
    return spec is not None and spec.embedded


def open_backend(role: BackendRole, url: str, settings: Settings | None = None) -> Any:
    """The store ``url`` names for ``role``, opened with ``settings`` (the defaults when
    None). The backend's own settings are read first, so a bad value is reported
    naming its variable before the engine is touched."""
    spec = find_backend(role, url)
    given = settings if settings is not None else Settings()
    if spec.settings_type is not None:
        read_namespace(spec.settings_type, spec.name, given.method_env)
    return spec.opener(url, given)


def open_backend_event_log(url: str, settings: Settings | None = None) -> Any:
    """The event log beside the state store ``url`` names."""
    spec = find_backend(BackendRole.STATE, url)
    if spec.event_log is None:
        raise ConfigError(f"{BackendRole.STATE.variable}: the {spec.name!r} state backend "
                          f"keeps no event log ({url!r}); events need one that does")
    return spec.event_log(url, settings if settings is not None else Settings())


def backend_settings(settings: Settings | None, name: str) -> Any:
    """Backend ``name``'s settings dataclass, from ``settings.method_env`` (defaults for
    variables not given). Validation errors name the variable."""
    spec = backend_registry().backends.get(name)
    if spec is None or spec.settings_type is None:
        raise ConfigError(f"backend {name!r} has no settings")
    return read_namespace(spec.settings_type, name,
                          settings.method_env if settings is not None else {})


def backend_variables() -> dict[str, tuple[str, dataclasses.Field[Any]]]:
    """Every backend setting's variable: ``HOPINDEX_<BACKEND>_<FIELD>`` → (backend, field)."""
    return {variable: (spec.name, found)
            for spec in backend_registry().backends.values()
            for variable, found in spec.variables().items()}


def check_backend_settings(settings: Settings) -> None:
    """Read every backend's settings, so a bad value stops the process now, named."""
    for spec in backend_registry().backends.values():
        if spec.settings_type is not None:
            read_namespace(spec.settings_type, spec.name, settings.method_env)
