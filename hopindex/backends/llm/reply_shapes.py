"""Reply shapes: each kind of structured reply declares its shape once, as a pydantic
model, and is read with item-level tolerance.

A model's reply is mostly right far more often than it is wholly right: a score given
as the string "8", a list with a ``null`` beside the real elements, a 0-1 score where
0-10 was asked. Reading is strict first; what fits only in pydantic's lax mode (numbers
as strings) is taken and counted as *coerced*; an element that fits neither is
*dropped* with its reason, never the whole reply. A reply fails only when nothing
usable remains (:class:`~hopindex.core.errors.ReplyShapeError`), which is what sends
the client's one repair call.

What was coerced, dropped or rescaled is noted on the :class:`ReplyNotes` of the call
being read (a context variable the client sets around its parse), so parse callbacks
keep their one-argument signature and the counts still reach the job record.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Annotated, Any, TypeVar

import pydantic

from hopindex.core.errors import ReplyShapeError

M = TypeVar("M", bound=pydantic.BaseModel)

# How many drop reasons a note keeps verbatim (the counts are always whole).
_MAX_REASONS = 20


# "7/10", "7 / 10", "7 out of 10": a score written the way people write one.
_OUT_OF = re.compile(r"\s*(-?\d+(?:\.\d+)?)\s*(?:/|out of)\s*10\s*", re.IGNORECASE)


def _score_text(value: Any) -> Any:
    """A boolean is no score (lax mode would read true as 1); "7/10" is the string
    "7", which lax mode then reads as a number (and counts as coerced)."""
    if isinstance(value, bool):
        raise ValueError("a boolean is not a number")
    if isinstance(value, str) and (match := _OUT_OF.fullmatch(value)) is not None:
        return match.group(1)
    return value


# A score as models give one: a number, a numeric string or "7/10"; never a boolean.
Score = Annotated[float, pydantic.BeforeValidator(_score_text),
                  pydantic.Field(allow_inf_nan=False)]


@dataclass(slots=True)
class ReplyNotes:
    """What reading one reply had to forgive: values coerced to their declared type,
    elements dropped (with why), scores rescaled, and how the JSON was found."""

    coerced: int = 0
    dropped: int = 0
    rescaled: int = 0
    reasons: Counter[str] = field(default_factory=Counter)
    read: list[str] = field(default_factory=list)

    def add(self, other: ReplyNotes) -> None:
        self.coerced += other.coerced
        self.dropped += other.dropped
        self.rescaled += other.rescaled
        self.reasons.update(other.reasons)
        self.read.extend(other.read)

    @property
    def is_clean(self) -> bool:
        return not (self.coerced or self.dropped or self.rescaled or self.read)


_CURRENT: ContextVar[ReplyNotes | None] = ContextVar("hopindex_reply_notes", default=None)


@contextmanager
def collecting_notes() -> Iterator[ReplyNotes]:
    """Notes of the reply read inside the block (the client wraps each parse)."""
    notes = ReplyNotes()
    token = _CURRENT.set(notes)
    try:
        yield notes
    finally:
        _CURRENT.reset(token)


def note_coerced(count: int = 1) -> None:
    if (notes := _CURRENT.get()) is not None:
        notes.coerced += count


def note_dropped(reason: str) -> None:
    if (notes := _CURRENT.get()) is not None:
        notes.dropped += 1
        if len(notes.reasons) < _MAX_REASONS or reason in notes.reasons:
            notes.reasons[reason] += 1


def note_rescaled() -> None:
    if (notes := _CURRENT.get()) is not None:
        notes.rescaled += 1


def read_shape(value: Any, shape: type[M], *, what: str) -> M:
    """``value`` as ``shape``: strictly, else in lax mode (counted as coerced); a
    ``ReplyShapeError`` naming ``what`` and the first field that does not fit."""
    try:
        return shape.model_validate(value, strict=True)
    except pydantic.ValidationError:
        pass
    try:
        read = shape.model_validate(value)
    except pydantic.ValidationError as exc:
        raise ReplyShapeError(f"{what}: {_first_problem(exc)}") from exc
    note_coerced()
    return read


def read_items(values: Any, item: type[M], *, what: str,
               allow_empty: bool = True) -> list[M]:
    """Each element of the list ``values`` that reads as ``item`` (strictly or coerced);
    the others dropped and noted. Raises ``ReplyShapeError`` when ``values`` is not a
    list, or when it had elements and none was usable (or it is empty and
    ``allow_empty`` is False)."""
    if not isinstance(values, list):
        raise ReplyShapeError(f"{what}: expected a list, got {json_type_name(values)}")
    kept: list[M] = []
    first_reason = ""
    for position, value in enumerate(values):
        if value is None:
            note_dropped(f"{what}: null element")
            continue
        try:
            kept.append(read_shape(value, item, what=f"{what}[{position}]"))
        except ReplyShapeError as exc:
            reason = _without_position(str(exc), what)
            first_reason = first_reason or reason
            note_dropped(f"{what}: {reason}")
    if not kept and (values or not allow_empty):
        # The repair call quotes this message: say why the elements did not fit.
        why = f" (first: {first_reason})" if first_reason else " (all null)"
        raise ReplyShapeError(f"{what}: no usable element among {len(values)}{why}"
                              if values else f"{what}: the list is empty")
    return kept


def read_names(value: list[Any] | str | None, *, what: str) -> list[str]:
    """A list of names (entities a proposition or a plan mentions): none when missing
    or null, one name given bare read as a list of one (coerced), an element that is
    not text dropped and noted."""
    if value is None:
        return []
    if isinstance(value, str):
        note_coerced()
        return [value]
    names: list[str] = []
    for name in value:
        if isinstance(name, str):
            names.append(name)
        else:
            note_dropped(f"{what}: {json_type_name(name)} element")
    return names


def scores_on_scale(scores: Sequence[float], *, top: float) -> list[float]:
    """Scores asked on 0..``top``, read per reply: when every score lies in [0, 1] and
    at least one is a fraction, the model answered on 0-1, and each is multiplied by
    ``top`` (noted as rescaled). Anything else is kept as given."""
    values = [float(score) for score in scores]
    if top > 1 and values and all(0.0 <= s <= 1.0 for s in values) \
            and any(0.0 < s < 1.0 for s in values):
        note_rescaled()
        return [s * top for s in values]
    return values


def _first_problem(exc: pydantic.ValidationError) -> str:
    errors = exc.errors(include_url=False)
    if not errors:
        return str(exc)
    first = errors[0]
    where = ".".join(str(part) for part in first.get("loc", ())) or "value"
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{where}: {first.get('msg', 'invalid')}{more}"


def _without_position(message: str, what: str) -> str:
    # "what[3]: field: msg" -> "field: msg": drop reasons group across positions.
    head, _, rest = message.partition(": ")
    return rest if head.startswith(what) else message


def json_type_name(value: Any) -> str:
    """A decoded JSON value's type as a reply's error message names it ("null" for None)."""
    return "null" if value is None else type(value).__name__
