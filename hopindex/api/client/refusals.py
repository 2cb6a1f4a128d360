"""What is wrong with a request, in hopindex's words, from pydantic's errors about it.

The HTTP API answers a body that does not validate with this (api/http/params.py),
and the MCP server a tool's arguments (api/mcp/), so a field is refused alike through
every door: the first thing wrong, the field it names, a stable code.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel
from pydantic_core import ErrorDetails

from hopindex.api.client.requests import REFUSED
from hopindex.core.text import unstorable_field

# Unknown fields are named before missing ones, and those before what is wrong with
# the value of a field (in the order of the model's fields).
_FIRST = {"extra_forbidden": 0, "missing": 1}
# What a field must be, for pydantic's type errors.
_MUST_BE = {"int_type": "an integer", "int_parsing": "an integer", "float_type": "a number",
            "float_parsing": "a number", "finite_number": "a finite number",
            "bool_type": "a boolean", "dict_type": "an object", "list_type": "a list",
            "model_type": "an object"}


@dataclasses.dataclass(frozen=True, slots=True)
class Refusal:
    status: int
    code: str
    message: str
    field: str
    details: dict[str, Any] = dataclasses.field(default_factory=dict)


def refusal_of(model: type[BaseModel], errors: Sequence[ErrorDetails]) -> Refusal:
    """The refusal for pydantic's ``errors`` about input read as ``model``: the first
    error, as hopindex words it (a refusal a model states itself, ``REFUSED``, carries
    its message, status and code)."""
    error = min(errors, key=lambda e: _FIRST.get(e["type"], 2))
    kind, value, ctx = error["type"], error["input"], error.get("ctx") or {}
    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}"
                    for p in error["loc"]).removeprefix(".")
    if kind == REFUSED:
        where = ctx["field"] or where
        return Refusal(ctx["status"], ctx["code"],
                       ctx["message"] or f"field {where!r} {ctx['what']}", where,
                       dict(ctx["details"]))
    code = "invalid_input"
    unstorable = unstorable_field([(where, value)]) if kind == "string_unicode" else None
    if kind == "extra_forbidden":
        message = f"unknown field {where!r}; known: {', '.join(sorted(model.model_fields))}"
    elif kind == "missing":
        message = f"missing required field {where!r}"
    elif kind == "string_too_long":
        message = (f"field {where!r} is {len(value):,} characters, over the limit of "
                   f"{ctx['max_length']:,}")
        code = "too_long"
    elif unstorable is not None:
        message = str(unstorable)
    elif kind in ("enum", "literal_error"):
        choices = ", ".join(re.findall(r"'([^']*)'", ctx.get("expected", "")))
        message = f"{where!r} must be one of {choices}, got {value!r}"
    elif kind == "string_type":
        message = f"field {where!r} must be a string" + (", not null" if value is None else "")
    elif kind in _MUST_BE:
        message = f"field {where!r} must be {_MUST_BE[kind]}"
    else:
        message = f"field {where!r}: {error['msg'][:1].lower()}{error['msg'][1:]}"
    return Refusal(400, code, message, where)
