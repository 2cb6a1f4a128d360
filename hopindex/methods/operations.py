"""Operations an index method offers on its indexes besides ingest and query: the
admin work only that method's data allows (a ``kgbridge`` index's SAME_AS links,
listed and rejected by hand).

A method registers them with the registry as it registers its query methods
(``registry.add_operation``). The client runs them by name on an index of that
method, and every front door reaches them from there (the CLI as
``hopindex <group> <verb>``, the HTTP API under
``/v1/indexes/{name}/operations/{operation}``), so no layer above ``methods/``
names a method.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from hopindex.backends.protocols import StateStore
from hopindex.core.errors import ConfigError, InvalidInputError
from hopindex.core.text import unstorable_field


class OperationAccess(enum.StrEnum):
    """What an operation needs: a read key may run READ ones; WRITE ones change data."""

    READ = "read"
    WRITE = "write"


@dataclass(frozen=True, slots=True)
class OperationParam:
    """One named text parameter. ``default`` is computed where the caller is (the CLI
    fills in the OS user as ``by``); without one, an optional parameter is absent."""

    name: str
    help: str
    required: bool = False
    max_chars: int = 1024
    metavar: str = "TEXT"
    # The CLI option, when it is not ``--<name>`` (``--link`` for ``link_id``).
    flag: str = ""
    default: Callable[[], str] | None = None

    @property
    def option(self) -> str:
        return self.flag or f"--{self.name.replace('_', '-')}"


# An operation's work: the state store, the index name and the checked parameters
# in; a JSON value out.
OperationRun = Callable[[StateStore, str, Mapping[str, str]], Any]


@dataclass(frozen=True, slots=True)
class MethodOperation:
    """``name`` is ``group.verb`` (``links.list``): the CLI's command group and command."""

    method: str
    name: str
    summary: str
    access: OperationAccess
    run: OperationRun
    params: tuple[OperationParam, ...] = field(default=())
    # A person's reading of the answer (the CLI without --json); None: indented JSON.
    render_text: Callable[[Any, Mapping[str, str]], str] | None = None

    @property
    def group(self) -> str:
        return self.name.split(".", 1)[0]

    @property
    def verb(self) -> str:
        return self.name.split(".", 1)[1]

    def describe(self) -> dict[str, Any]:
        """The operation as a client lists it."""
        return {"name": self.name, "method": self.method, "summary": self.summary,
                "writes": self.access is OperationAccess.WRITE,
                "params": {p.name: {"help": p.help, "required": p.required,
                                    "max_chars": p.max_chars} for p in self.params}}

    def check_params(self, given: Mapping[str, str]) -> dict[str, str]:
        """The parameters as the operation takes them: unknown, missing, non-text, too
        long or unstorable ones are refused naming the parameter."""
        known = {p.name: p for p in self.params}
        for name in given:
            if name not in known:
                raise InvalidInputError(f"operation {self.name!r} takes no parameter "
                                        f"{name!r}; it takes {sorted(known) or 'none'}",
                                        where=name)
        checked: dict[str, str] = {}
        for param in self.params:
            value = given.get(param.name)
            if value is None:
                if param.required:
                    raise InvalidInputError(f"operation {self.name!r} needs it", where=param.name)
                continue
            if not isinstance(value, str):
                raise InvalidInputError(f"must be a string, not {type(value).__name__}",
                                        where=param.name)
            if len(value) > param.max_chars:
                raise InvalidInputError(f"is {len(value):,} characters, over the limit of "
                                        f"{param.max_chars}", where=param.name)
            if (bad := unstorable_field([(param.name, value)])) is not None:
                raise InvalidInputError(bad.reason, where=bad.field)
            checked[param.name] = value
        return checked


def check_operation(operation: MethodOperation) -> None:
    """A registration error names the operation."""
    group, dot, verb = operation.name.partition(".")
    if not dot or not group or not verb or not all(
            c.islower() or c == "_" for c in group + verb):
        raise ConfigError(f"operation name {operation.name!r} of method {operation.method!r} "
                          "must be 'group.verb' in lowercase letters and '_'")
