"""What a backend plug-in is: the role it plays, the URL schemes it serves, how it is
opened, and its own settings.

A backend serves one role (the vector store, the keyword index or the state store) for
the URLs whose scheme it names: ``HOPINDEX_VECTOR_URL=memvec://scratch`` opens the
backend that registered the ``memvec`` scheme for the vectors role. Built-in backends
register in ``hopindex/backends/builtin.py``; third-party ones through the
``hopindex.backends`` entry-point group, whose every entry names a callable that
takes the registry::

    [project.entry-points."hopindex.backends"]
    memvec = "my_package.memvec:register"

    def register(registry: BackendRegistry) -> None:
        registry.add(BackendSpec(name="memvec", role=BackendRole.VECTORS,
                                 schemes=("memvec",), opener=open_memvec,
                                 settings_type=MemvecSettings))

The opener is called with the URL and the process's ``Settings`` when the role is
first used, so it imports its engine's client there, not at registration. A backend
with a ``settings_type`` (a frozen dataclass whose every field has a default) reads it
from ``HOPINDEX_<NAME>_<FIELD>`` variables: ``plugins.backend_settings(settings, name)``.
``docs/backends.md`` walks through writing one.
"""

from __future__ import annotations

import dataclasses
import enum
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hopindex.core.errors import ConfigError
from hopindex.core.plugin_settings import PREFIX, check_namespace, namespace_variables
from hopindex.core.settings import Settings


class BackendRole(enum.StrEnum):
    """What a backend is to the runtime; the value is the role's name in ``Backends``."""

    VECTORS = "vectors"
    KEYWORDS = "keywords"
    STATE = "state"

    @property
    def variable(self) -> str:
        """The setting whose URL picks this role's backend."""
        return ROLE_VARIABLES[self]


ROLE_VARIABLES = {BackendRole.VECTORS: "HOPINDEX_VECTOR_URL",
                  BackendRole.KEYWORDS: "HOPINDEX_KEYWORD_URL",
                  BackendRole.STATE: "HOPINDEX_STATE_URL"}

# (URL, the process's settings) → the opened store or log.
Opener = Callable[[str, Settings], Any]

# RFC 3986 scheme syntax, lower case (urlsplit lower-cases the scheme it reads).
_SCHEME = re.compile(r"[a-z][a-z0-9+.-]*")
# The core settings' variables: a namespace variable spelled the same would never
# reach its backend (Settings.from_env reads it as the core setting).
_CORE_VARIABLES = frozenset(f"{PREFIX}{f.name.upper()}" for f in dataclasses.fields(Settings))


@dataclass(frozen=True, slots=True)
class BackendSpec:
    """One backend: its ``name`` (which is also its settings namespace), the ``role`` it
    serves and the URL ``schemes`` it serves it for.

    ``embedded``: the URL names a folder one process at a time may open (a vectors or
    keywords engine, docs/engine-ownership.md); the runtime routes the other processes'
    engine calls to the owner, and the adapter claims the folder
    (``hopindex.backends.engine_lock``). ``event_log`` (state backends only) opens the
    event log that lives beside this state, from the same URL; a state backend without
    one can serve a process that reads no events.
    """

    name: str
    role: BackendRole
    schemes: tuple[str, ...]
    opener: Opener
    settings_type: type[Any] | None = None
    embedded: bool = False
    event_log: Opener | None = None

    def __post_init__(self) -> None:
        check_namespace(self.name, "backend")
        if not self.schemes or any(not _SCHEME.fullmatch(s) for s in self.schemes):
            raise ConfigError(f"backend {self.name!r} must serve lower-case URL schemes "
                              f"(letters, digits, '+', '-', '.'), got {list(self.schemes)}")
        # Frozen: one parsed instance is cached and handed to every caller. (What
        # @dataclass was given is only in its untyped __dataclass_params__.)
        params = getattr(self.settings_type, "__dataclass_params__", None)
        if self.settings_type is not None and not (params is not None and params.frozen):
            raise ConfigError(f"backend {self.name!r}: settings_type must be a frozen "
                              f"dataclass, got {self.settings_type!r}")
        if self.event_log is not None and self.role is not BackendRole.STATE:
            raise ConfigError(f"backend {self.name!r}: only a state backend has an event log")
        if self.embedded and self.role is BackendRole.STATE:
            raise ConfigError(f"backend {self.name!r}: a state backend is never an embedded "
                              "engine (only vectors and keywords engines are routed)")

    def variables(self) -> dict[str, dataclasses.Field[Any]]:
        """``HOPINDEX_<NAME>_<FIELD>`` → field, for each of its settings (none without)."""
        if self.settings_type is None:
            return {}
        return namespace_variables(self.name, self.settings_type)


class BackendRegistry:
    """Backends by name, and the one serving each (role, scheme)."""

    def __init__(self) -> None:
        self.backends: dict[str, BackendSpec] = {}
        self._by_scheme: dict[tuple[BackendRole, str], BackendSpec] = {}
        self._variables: dict[str, str] = {}

    def add(self, spec: BackendSpec) -> None:
        """Register ``spec``; a name, a (role, scheme) or a settings variable already
        taken is refused, so a plug-in never silently replaces a built-in backend."""
        if spec.name in self.backends:
            raise ConfigError(f"backend {spec.name!r} is registered twice")
        for scheme in spec.schemes:
            taken = self._by_scheme.get((spec.role, scheme))
            if taken is not None:
                raise ConfigError(f"backend {spec.name!r}: {spec.role.variable} scheme "
                                  f"{scheme}:// is already served by backend {taken.name!r}")
        for variable in spec.variables():
            owner = "a core setting" if variable in _CORE_VARIABLES else (
                f"backend {self._variables[variable]!r}" if variable in self._variables
                else None)
            if owner is not None:
                raise ConfigError(f"backend {spec.name!r}: its setting {variable} is taken by "
                                  f"{owner}; choose another backend name")
        self.backends[spec.name] = spec
        self._by_scheme.update({(spec.role, scheme): spec for scheme in spec.schemes})
        self._variables.update(dict.fromkeys(spec.variables(), spec.name))

    def find(self, role: BackendRole, scheme: str) -> BackendSpec | None:
        return self._by_scheme.get((role, scheme))

    def schemes(self, role: BackendRole) -> list[str]:
        return sorted(scheme for served, scheme in self._by_scheme if served is role)
