"""The command line's view of the method registry: the ``--method`` option type, help
texts listing the registered methods, and the methods' settings for ``hopindex config``.

The registry is read when a command line is parsed or help is shown, not when the
CLI is imported: a plugin that fails to load is then an error message naming it,
not a traceback from every command.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Any

import click

from hopindex.api.method_options import option_schemas
from hopindex.core.errors import HopindexError
from hopindex.core.redact import REDACTED, redact_text
from hopindex.core.settings import Settings
from hopindex.methods.plugin import LlmUse
from hopindex.methods.registry import (
    default_index_method,
    get_index_method,
    get_query_method,
    index_method_names,
    method_settings,
    method_variables,
    query_method_names,
)


class MethodName(click.ParamType[str, str]):
    """One of the names ``names()`` gives (index or query methods), checked on parsing."""

    name = "method"

    def __init__(self, names: Callable[[], list[str]]) -> None:
        self._names = names

    def get_metavar(self, param: click.Parameter, ctx: click.Context) -> str | None:
        try:
            return "[" + "|".join(self._names()) + "]"
        except HopindexError:
            return None  # the command itself reports the registry's error

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> str:
        try:
            known = self._names()
        except HopindexError as exc:
            self.fail(str(exc), param, ctx)
        if value not in known:
            self.fail(f"{value!r} is not one of {', '.join(known)}", param, ctx)
        return str(value)


class RegistryHelpOption(click.Option):
    """An option whose help text ``describe()`` makes from the registry when help is shown."""

    def __init__(self, *args: Any, describe: Callable[[], str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._describe = describe

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        try:
            self.help = self._describe()
        except HopindexError as exc:
            self.help = f"(the methods cannot be listed: {exc})"
        return super().get_help_record(ctx)


def index_method_help() -> str:
    """``ingest --method``: each index method, whether it calls an LLM, which is the default."""
    defaults = {default_index_method(True): "the default when HOPINDEX_LLM_MODEL is set",
                default_index_method(False): "the default when it is not"}
    if len(set(defaults)) == 1:
        defaults = {default_index_method(False): "the default"}
    described = []
    for name in index_method_names():
        notes = ["LLM" if get_index_method(name).llm_use is LlmUse.REQUIRED else "no LLM"]
        if name in defaults:
            notes.append(defaults[name])
        described.append(f"{name} ({'; '.join(notes)})")
    return (f"How a new index is built: {', '.join(described)}. An existing index keeps its "
            "method.")


def query_method_help() -> str:
    """``query --method``: each query method with its summary."""
    methods = "; ".join(f"{name}: {get_query_method(name).summary}"
                        for name in query_method_names())
    return ("The query method (default: the first default query method of the index's "
            "method); one that cannot read the index's units is refused, naming those that "
            f"can. {methods}.")


def param_help() -> str:
    """``query --param``: the options each query method takes."""
    taking = [f"{name} takes {', '.join(schema.get('properties', {}))}"
              for name, schema in option_schemas().items()]
    listed = "; ".join(taking) if taking else "no method takes any"
    return f"A method parameter, repeatable: {listed}."


def shown_method_settings(settings: Settings) -> dict[str, str]:
    """Every method setting's variable with its effective value (given or default), as
    ``Settings.shown`` shows the core ones: secrets masked, URL credentials redacted."""
    shown: dict[str, str] = {}
    for variable, (method, found) in sorted(method_variables().items()):
        value = getattr(method_settings(settings, method), found.name)
        secret = not found.repr
        shown[variable] = (REDACTED if value else "") if secret else redact_text(_text(value))
    return shown


def _text(value: object) -> str:
    """A value as its environment variable would spell it."""
    if isinstance(value, enum.Enum):
        return str(value.value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
