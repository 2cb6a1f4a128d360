"""Validators of SiReRAG's replies: the propositions of a passage and a cluster's summary.

``parse_propositions`` is the ``parse`` callback of ``complete_json``. It is strict
about the shape and names what is wrong, so that the client's one repair attempt can
tell the model; it is lenient only where the meaning does not change (blank
propositions, repeated or blank entities, a missing entity list).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from hopindex.core.errors import LlmOutputError

# JSON mode (``response_format=json_object``) forbids a top-level array, so the prompt
# asks for the array wrapped under this key there.
PROPOSITIONS_KEY = "propositions"
TEXT_KEY = "proposition"
ENTITIES_KEY = "entities"


class ReplyShapeError(LlmOutputError, ValueError):
    """A reply of the wrong shape.

    An ``LlmOutputError`` (the document's or cluster's permanent failure) that is also
    a ``ValueError``: the client makes its repair attempt, and treats a cached reply as
    a miss, on ``ValueError``/``KeyError``/``TypeError`` only.
    """


@dataclass(frozen=True, slots=True)
class Proposition:
    """One factual statement of a passage and the named entities it mentions.

    ``entities`` may be empty: the paper keeps such propositions out of the
    relatedness tree rather than letting the model name common nouns.
    """

    text: str
    entities: tuple[str, ...]


def parse_propositions(value: Any) -> list[Proposition]:
    """``[{"proposition": str, "entities": [str, ...]}, ...]``, or that array under
    ``"propositions"`` in an object → propositions in reply order.

    Blank propositions are dropped; a proposition repeated in the reply is kept once,
    with the entities of every repeat.
    """
    entities_of: dict[str, list[str]] = {}
    for position, item in enumerate(_items(value)):
        where = f"{PROPOSITIONS_KEY}[{position}]"
        if not isinstance(item, dict):
            raise ReplyShapeError(f'{where} must be an object with "{TEXT_KEY}" and '
                                  f'"{ENTITIES_KEY}", got {_kind(item)}')
        if TEXT_KEY not in item:
            raise ReplyShapeError(f'{where} has no "{TEXT_KEY}" key (keys: {sorted(item)})')
        text = item[TEXT_KEY]
        if not isinstance(text, str):
            raise ReplyShapeError(f'{where}.{TEXT_KEY} must be a string, got {_kind(text)}')
        entities = _entities(item.get(ENTITIES_KEY), f"{where}.{ENTITIES_KEY}")
        # Aggregates join propositions one per line: a newline inside one would split it.
        text = _one_line(text)
        if text:
            entities_of.setdefault(text, []).extend(entities)
    return [Proposition(text=text, entities=_unique_names(names))
            for text, names in entities_of.items()]


def parse_summary(content: str) -> str:
    """A cluster's summary: the reply stripped, which must not be empty."""
    summary = content.strip()
    if not summary:
        raise ReplyShapeError("the model's summary is empty")
    return summary


def _items(value: Any) -> list[Any]:
    if isinstance(value, dict):
        if PROPOSITIONS_KEY not in value:
            raise ReplyShapeError(f'expected a JSON array, or an object with the array under '
                                  f'"{PROPOSITIONS_KEY}"; got an object with keys {sorted(value)}')
        value = value[PROPOSITIONS_KEY]
    if not isinstance(value, list):
        raise ReplyShapeError(f"expected a JSON array of propositions, got {_kind(value)}")
    return value


def _entities(value: Any, where: str) -> list[str]:
    # A model that finds no entity may leave the list out: that means the empty list.
    if value is None:
        return []
    if not isinstance(value, list):
        raise ReplyShapeError(f"{where} must be a list of strings, got {_kind(value)}")
    for position, name in enumerate(value):
        if not isinstance(name, str):
            raise ReplyShapeError(f"{where}[{position}] must be a string, got {_kind(name)}")
    return value


def _unique_names(names: Iterable[str]) -> tuple[str, ...]:
    """Stripped, blank ones dropped, first spelling kept: the aggregates group entities
    case-insensitively, so two spellings would list the proposition twice in one."""
    seen: dict[str, str] = {}
    for name in names:
        cleaned = _one_line(name)
        if cleaned:
            seen.setdefault(cleaned.casefold(), cleaned)
    return tuple(seen.values())


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__
