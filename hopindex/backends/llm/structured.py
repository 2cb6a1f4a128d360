"""Turning a structured reply into its call kind's value: the steps between the
lenient reader (``reply_json``) and the call kind's parse callback, and the follow-up
requests a reply that cannot be used earns (a larger budget, a repair).

A parse callback takes a JSON value and returns the call kind's value, raising
``ValueError`` (``ReplyShapeError``, pydantic's ``ValidationError``), ``KeyError`` or
``TypeError`` for a value of the wrong shape. Each JSON value the reply holds is
offered in turn; the first the callback accepts is the reply's value.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from typing import Any, Generic, TypeVar

from hopindex.backends.llm.chat import ChatRequest, ChatResult
from hopindex.backends.llm.reply_json import JsonCandidate, json_candidates, no_json_reason
from hopindex.backends.llm.reply_shapes import ReplyNotes, collecting_notes
from hopindex.core.errors import ReplyShapeError

T = TypeVar("T")

# What a parse callback raises for a value of the wrong shape.
PARSE_ERRORS = (ValueError, KeyError, TypeError)
# A reply cut at its budget is asked again with a budget of at least this many tokens,
# at least four times what the cut reply used and twice what was asked (a provider's
# own default cut it when none was asked, and that default may exceed our minimum),
# and at most the largest completion current models allow.
MIN_LARGER_BUDGET = 4096
MAX_LARGER_BUDGET = 16_384


class Parsed(Generic[T]):
    """A reply's value and what reading it forgave."""

    __slots__ = ("notes", "value")

    def __init__(self, value: T, notes: ReplyNotes) -> None:
        self.value = value
        self.notes = notes


def parse_reply(stage: str, content: str, parse: Callable[[Any], T]) -> Parsed[T]:
    """The first JSON value in ``content`` that ``parse`` accepts; ``ReplyShapeError``
    naming ``stage`` and what was wrong when none does."""
    first_error: BaseException | None = None
    for candidate in _with_unwrapped(json_candidates(content)):
        with collecting_notes() as notes:
            try:
                value = parse(candidate.value)
            except PARSE_ERRORS as exc:
                first_error = first_error or exc
                continue
        notes.read.extend(candidate.notes)
        return Parsed(value, notes)
    if first_error is None:
        raise ReplyShapeError(f"{stage}: {no_json_reason(content)}")
    raise ReplyShapeError(f"{stage}: the reply is not of the requested shape: "
                          f"{_reason(first_error)}") from first_error


def _with_unwrapped(candidates: Iterable[JsonCandidate]) -> Iterator[JsonCandidate]:
    """Each candidate; then the same with its keys in lower case, when some were not
    (``{"QA_pairs": …, "Entities": …}``); then, when it is an object of one key holding
    an object or a list, what it wraps: models put the answer under a key of their own
    choosing (``{"response": {...}}``, ``{"result": [...]}``) often enough to try."""
    for found in candidates:
        yield found
        latest = found
        lowered = _lower_keys(found.value)
        if lowered != found.value:
            latest = JsonCandidate(lowered, (*found.notes, "keys lower-cased"))
            yield latest
        value = latest.value
        if isinstance(value, dict) and len(value) == 1:
            [(key, inner)] = value.items()
            if isinstance(inner, dict | list) and inner:
                yield JsonCandidate(inner, (*latest.notes, f"unwrapped from {key!r}"))


def _lower_keys(value: Any) -> Any:
    """``value`` with every object key in lower case (values untouched)."""
    if isinstance(value, dict):
        return {str(key).lower(): _lower_keys(inner) for key, inner in value.items()}
    if isinstance(value, list):
        return [_lower_keys(inner) for inner in value]
    return value


def parse_cached(stage: str, content: str | None, parse: Callable[[Any], T]) -> Parsed[T] | None:
    """A cached reply parsed, or None when there is none or it no longer parses (written
    by older code, or by a provider answer this version reads differently: ask again)."""
    if content is None:
        return None
    try:
        return parse_reply(stage, content, parse)
    except ReplyShapeError:
        return None


def larger_budget(max_tokens: int | None, used_tokens: int) -> int:
    """The completion budget of the retry of a reply cut at ``max_tokens`` (None: at
    the provider's default) after ``used_tokens`` completion tokens."""
    return min(MAX_LARGER_BUDGET,
               max(MIN_LARGER_BUDGET, 2 * (max_tokens or 0), 4 * used_tokens))


def repair_messages(messages: tuple[tuple[str, str], ...], content: str,
                    problem: str) -> tuple[tuple[str, str], ...]:
    """The conversation of the one repair call: the reply, and what was wrong with it."""
    return (*messages, ("assistant", content),
            ("user", f"That reply could not be used ({problem}). Reply with the corrected "
                     "JSON only, no other text."))


def _reason(error: BaseException) -> str:
    text = str(error)
    # A ReplyShapeError already names its stage; the caller adds it once.
    return text if len(text) <= 300 else f"{text[:300]}…"


def read_result(stage: str, result: ChatResult, parse: Callable[[Any], T]) -> Parsed[T]:
    """The reply's value; a reply cut at its budget is never taken, even when a lenient
    reading could close its brackets (the last elements would be lost)."""
    if result.truncated:
        raise ReplyShapeError(f"{stage}: the reply was cut at its token budget "
                              f"({result.completion_tokens} completion tokens)")
    return parse_reply(stage, result.content, parse)


def second_request(request: ChatRequest, result: ChatResult,
                   problem: ReplyShapeError) -> ChatRequest:
    """After a reply cut at its budget, the same request with a larger budget; after an
    unusable one, the conversation with the reply and what was wrong."""
    if result.truncated:
        return replace(request, max_tokens=larger_budget(request.max_tokens,
                                                          result.completion_tokens))
    return replace(request, messages=repair_messages(request.messages, result.content,
                                                     str(problem)))
