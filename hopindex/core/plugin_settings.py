"""A plug-in's own settings: ``HOPINDEX_<NAMESPACE>_<FIELD>`` variables read into the
frozen dataclass the plug-in declares; and how plug-ins are loaded from their
entry-point group (``load_plugins``), for methods and backends alike.

Methods (``hopindex/methods/registry.py``) and backends (``hopindex/backends/plugins.py``)
both read theirs here, so a variable is parsed, refused and named the same way
whichever kind of plug-in owns it. The values come from ``Settings.method_env``, which
holds every plug-in variable the process was started with (``Settings.from_env`` is
told their names by whoever loads the settings).
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Mapping
from importlib.metadata import entry_points
from typing import Any, TypeVar

from hopindex.core.errors import ConfigError
from hopindex.core.logging import get_logger
from hopindex.core.settings import parse_setting

log = get_logger(__name__)

T = TypeVar("T")

PREFIX = "HOPINDEX_"

# Parsed settings by (namespace, dataclass, its variables as given): a plug-in reads
# its settings on every use, and parsing them each time would repeat the validation.
_parsed: dict[tuple[str, type[Any], tuple[tuple[str, str], ...]], Any] = {}


def load_plugins(group: str, what: str, registry: object) -> None:
    """Call every ``group`` entry point's ``register(registry)``. A plug-in that fails to
    load stops the process, named (``what``: ``method``, ``backend``), rather than
    leaving a registry without it."""
    for entry in entry_points(group=group):
        try:
            register = entry.load()
            register(registry)
        except ConfigError:
            raise
        except Exception as exc:
            raise ConfigError(f"{what} plugin {entry.name!r} ({entry.value}) failed to load: "
                              f"{type(exc).__name__}: {exc}") from exc
        log.info(f"{what}_plugin_loaded", plugin=entry.name, value=entry.value)


def check_namespace(name: str, what: str) -> None:
    """A name that prefixes ``HOPINDEX_<NAME>_*`` variables: lowercase letters, digits
    and '_', starting with a letter (upper-cased, it is a valid variable name)."""
    if not name or not all(c.islower() or c.isdigit() or c == "_" for c in name) \
            or not name[0].isalpha():
        raise ConfigError(f"{what} name {name!r} must be lowercase letters, digits and '_', "
                          "starting with a letter (it prefixes HOPINDEX_<NAME>_* settings)")


def namespace_prefix(name: str) -> str:
    return f"{PREFIX}{name.upper()}_"


def namespace_variables(name: str, kind: type[Any]) -> dict[str, dataclasses.Field[Any]]:
    """``HOPINDEX_<NAME>_<FIELD>`` → its field, for every field of ``kind``."""
    prefix = namespace_prefix(name)
    return {f"{prefix}{f.name.upper()}": f for f in dataclasses.fields(kind)}


def read_namespace(kind: type[T], name: str, env: Mapping[str, str]) -> T:
    """``kind`` filled from the ``HOPINDEX_<NAME>_*`` variables of ``env`` (defaults for
    those not given). An unknown variable of the namespace, a value not of its field's
    type, or one the dataclass refuses is a ``ConfigError`` naming the variable."""
    prefix = namespace_prefix(name)
    own = tuple(sorted((k, v) for k, v in env.items() if k.startswith(prefix)))
    key = (name, kind, own)
    if key in _parsed:
        parsed: T = _parsed[key]
        return parsed
    known = namespace_variables(name, kind)
    values: dict[str, Any] = {}
    for variable, raw in own:
        if variable not in known:
            close = difflib.get_close_matches(variable, known, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise ConfigError(f"unknown setting {variable}{hint}")
        f = known[variable]
        values[f.name] = parse_setting(variable, raw, f.default)
    try:
        parsed = kind(**values)
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"{prefix}*: {exc}") from exc
    _parsed[key] = parsed
    return parsed
