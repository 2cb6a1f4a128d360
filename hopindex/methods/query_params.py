"""Reading a query method's parameters (``QueryOptions.params``) into a frozen dataclass.

Parameters arrive as strings from a command line (``--param KEY=VALUE``,
``hopindex eval --method NAME:KEY=VALUE``) and as numbers and strings from JSON (the
HTTP API's ``params``). Each method declares its numeric bounds and its choices
(``enum.StrEnum`` fields); a bad value is an ``InvalidInputError`` naming
``params.KEY``.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import fields
from typing import Any, TypeVar

from hopindex.core.errors import InvalidInputError
from hopindex.methods.base import ParamValue

P = TypeVar("P")


def read_params(cls: type[P], params: Mapping[str, ParamValue], *, method: str,
                enums: Mapping[str, type[enum.StrEnum]]) -> P:
    """``cls(**converted params)``; unknown names are refused with the known ones listed."""
    known = {f.name: f for f in fields(cls)}  # type: ignore[arg-type]  # cls is a dataclass
    values: dict[str, Any] = {}
    for name, raw in params.items():
        if name not in known:
            raise InvalidInputError(f"unknown {method} parameter; known: "
                                    f"{', '.join(known)}", where=f"params.{name}")
        values[name] = convert_param(name, raw, known[name].default, enums)
    return cls(**values)


def params_schema(cls: type[Any], *, bounds: Mapping[str, tuple[float, float]],
                  enums: Mapping[str, type[enum.StrEnum]]) -> dict[str, Any]:
    """The parameters as a JSON Schema object: each number with its bounds, each choice
    with its values (either case)."""
    properties: dict[str, Any] = {}
    for f in fields(cls):
        if f.name in enums:
            values = [m.value for m in enums[f.name]]
            properties[f.name] = {"type": "string", "enum": sorted(
                {*values, *(v.lower() for v in values), *(v.upper() for v in values)})}
        else:
            low, high = bounds[f.name]
            kind = "integer" if isinstance(f.default, int) else "number"
            properties[f.name] = {"type": kind, "minimum": low, "maximum": high}
    return {"type": "object", "properties": properties, "additionalProperties": False}


def params_as_dict(params: object) -> dict[str, Any]:
    """The parameters as JSON values (enums by value), for traces."""
    values: dict[str, Any] = {}
    for f in fields(params):  # type: ignore[arg-type]  # params is a dataclass instance
        value = getattr(params, f.name)
        values[f.name] = value.value if isinstance(value, enum.Enum) else value
    return values


def check_bounds(params: object, bounds: Mapping[str, tuple[float, float]]) -> None:
    for name, (low, high) in bounds.items():
        value = getattr(params, name)
        require_param(low <= value <= high, name,
                      f"must be between {low:g} and {high:g}, got {value}")


def require_param(ok: bool, name: str, message: str) -> None:
    if not ok:
        raise InvalidInputError(message, where=f"params.{name}")


def convert_param(name: str, raw: ParamValue, default: object,
                  enums: Mapping[str, type[enum.StrEnum]]) -> object:
    where = f"params.{name}"
    if name in enums:
        choices = enums[name]
        text = str(raw).strip()
        for member in choices:
            if text.casefold() == member.value.casefold():
                return member
        raise InvalidInputError(f"must be one of {', '.join(m.value for m in choices)}, "
                                f"got {raw!r}", where=where)
    if isinstance(raw, bool):
        raise InvalidInputError(f"must be a number, got {raw!r}", where=where)
    if isinstance(default, int):
        if isinstance(raw, float) and not raw.is_integer():
            raise InvalidInputError(f"must be an integer, got {raw!r}", where=where)
        try:
            return int(raw)
        except ValueError:
            raise InvalidInputError(f"must be an integer, got {raw!r}", where=where) from None
    try:
        return float(raw)
    except ValueError:
        raise InvalidInputError(f"must be a number, got {raw!r}", where=where) from None
