"""Readers of BridgeRAG's replies.

The JSON ones are ``parse`` callbacks of ``complete_json``, read item by item against
the declared shapes (``shapes``): a null or misfit query, entity or score is dropped
and noted, a score given as a numeric string (or ``"7/10"``) is read and counted, and
the reply fails (``ReplyShapeError``; a query makes no repair call, so the step falls
back, docs/methods.md) only when nothing usable remains. Judge scores asked on 0-10 and given on
0-1 are rescaled per reply; scores a little outside 0-10 are clamped.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from hopindex.backends.llm.reply_shapes import (
    json_type_name,
    note_dropped,
    read_items,
    read_shape,
    scores_on_scale,
)
from hopindex.core.errors import ReplyShapeError
from hopindex.methods.bridgerag.prompts import QUERY_COUNT
from hopindex.methods.bridgerag.shapes import (
    ENTITIES_WHAT,
    QUERIES_WHAT,
    SCORES_WHAT,
    QueryText,
    ScoreValue,
)

MAX_QUERY_CHARS = 500
MAX_ENTITY_CHARS = 200
SCORE_MIN = 0.0
SCORE_MAX = 10.0
_QUOTES = "\"'`\u201c\u201d\u2018\u2019"
# What models wrap an entity in: quotes, markdown emphasis (``**``, ``_``) and code
# marks, and spaces. Stripped from both ends only, so "Guns N' Roses" keeps its own.
_WRAPPERS = _QUOTES + "*_ "
_EM_DASH = " \u2014 "
# A list marker: a bullet, or a number of one or two digits with "." or ")" (or in
# parentheses). Not a number before a capitalised abbreviation, as in "1. FC Köln".
_LIST_MARKER = re.compile(r"^\s*(?:[-*\u2022]\s+|\(?\d{1,2}[.)]\s+(?![A-Z]{1,4}\s))")
# A label before the entity: "Entities:", "Entity 1:", "e2:", "Answer:", "Bridge
# entity 1:" and the like, bold or not. Only these words: a colon inside a name
# ("Star Wars: Episode IV") must stay.
_LABEL = re.compile(r"^[*_`\s]*(?:(?:bridge|intermediate|target|answer[- ]side)\s+)?"
                    r"(?:entities|entity(?:\s*\d)?|e\d|answer|output|reply|response|result)"
                    r"[*_`\s]*:[*_`\s]*", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Extracted:
    """What the merged call returns: the SVO queries and the two entities."""

    queries: tuple[str, ...]
    entities: tuple[str, str]


def parse_queries(value: Any) -> tuple[str, ...]:
    """``{"queries": [...]}`` (or the bare list) → up to three distinct non-blank
    queries, in order."""
    raw = value if isinstance(value, list) else _field(value, "queries")
    queries = _distinct(" ".join(q.root.split())[:MAX_QUERY_CHARS]
                        for q in read_items(raw, QueryText, what=QUERIES_WHAT))
    if not queries:
        raise ReplyShapeError(f"{QUERIES_WHAT}: no query that is not blank")
    return queries[:QUERY_COUNT]


def parse_entity_pair(reply: str) -> tuple[str, str]:
    """``e1 | e2`` → both; one entity is used twice (Appendix C). Never fails: a reply
    without ``|`` is one entity, an empty reply gives two empty strings (no search).

    Appendix C's prompt asks for ``" | "`` while its text says the reply is split on
    ``" — "``: a line without ``|`` is split on an em dash between spaces. A reply
    without either that lists the entities on lines of their own (``- A`` / ``1. A``)
    gives its first two. Labels and markdown around each entity go (``_clean_entity``).
    """
    lines = [ln for ln in reply.splitlines() if ln.strip()]
    line = next((ln for ln in lines if "|" in ln), None)
    if line is not None:
        parts = line.split("|")
    elif (dashed := next((ln for ln in lines if _EM_DASH in ln), None)) is not None:
        parts = dashed.split(_EM_DASH)
    elif len(listed := [ln for ln in lines if _LIST_MARKER.match(ln)]) >= 2:
        parts = listed
    else:
        parts = [reply]
    named = [cleaned for p in parts if (cleaned := _clean_entity(p))]
    if not named:
        return "", ""
    return named[0], named[1] if len(named) > 1 else named[0]


def parse_extracted(value: Any) -> Extracted:
    """``{"queries": [...], "entities": [e1, e2]}`` (entities may also be ``"e1 | e2"``)."""
    queries = parse_queries(_field(value, "queries"))
    raw = _field(value, "entities")
    if isinstance(raw, str):
        return Extracted(queries, parse_entity_pair(raw))
    if not isinstance(raw, list):
        raise ReplyShapeError(f"{ENTITIES_WHAT}: expected a list, got {json_type_name(raw)}")
    named: list[str] = []
    for entity in raw:
        if not isinstance(entity, str):
            note_dropped(f"{ENTITIES_WHAT}: {json_type_name(entity)} element")
        elif cleaned := _clean_entity(entity):
            named.append(cleaned)
    if not named:
        raise ReplyShapeError(f"{ENTITIES_WHAT}: no entity among {len(raw)}")
    return Extracted(queries, (named[0], named[1] if len(named) > 1 else named[0]))


def judge_parser(count: int) -> Callable[[Any], tuple[float | None, ...]]:
    """The parser of a judge reply over candidates ``1..count``.

    Accepts ``{"scores": {"1": 7, ...}}``, ``{"scores": [7, ...]}`` (in candidate
    order) or ``{"scores": [{"id": 1, "score": 7}, ...]}``. A candidate the reply
    leaves out, or scores with what is not a number, scores None (it ranks below every
    scored one; noted); a reply that scores no candidate at all is invalid. A reply
    whose scores all lie in 0-1 is read on that scale (``scores_on_scale``); scores
    are then clamped to 0-10; unknown ids are dropped and noted.
    """

    def parse(value: Any) -> tuple[float | None, ...]:
        raw = _field(value, "scores")
        if isinstance(raw, dict):
            pairs = list(raw.items())
        elif isinstance(raw, list) and raw and all(isinstance(x, dict) for x in raw):
            pairs = [(x.get("id", x.get("candidate")), x.get("score")) for x in raw]
        elif isinstance(raw, list):
            pairs = [(i, s) for i, s in enumerate(raw, start=1)]
        else:
            raise ReplyShapeError(f"{SCORES_WHAT}: expected an object or a list, "
                                  f"got {json_type_name(raw)}")
        read: dict[int, float] = {}
        for key, score in pairs:
            position = _position(key, count)
            if position is None:
                note_dropped(f"{SCORES_WHAT}: not a candidate number")
            elif (number := _score(score)) is not None:
                read[position] = number
        if not read:
            raise ReplyShapeError(f"{SCORES_WHAT}: no score for any of the {count} candidates")
        # Per reply: a 0-1 answer to a 0-10 question is rescaled as a whole.
        scaled = dict(zip(read, scores_on_scale(list(read.values()), top=SCORE_MAX),
                          strict=True))
        return tuple(None if n not in scaled else min(SCORE_MAX, max(SCORE_MIN, scaled[n]))
                     for n in range(count))

    return parse


def _position(key: object, count: int) -> int | None:
    text = str(key).strip().strip("[]") if not isinstance(key, bool) else ""
    if not text.isdigit():
        return None
    number = int(text)
    return number - 1 if 1 <= number <= count else None


def _score(value: object) -> float | None:
    """The score as a number, or None (dropped and noted) when it is none; "7/10" is
    read as 7, counted as coerced like a numeric string (``reply_shapes.Score``)."""
    try:
        return read_shape(value, ScoreValue, what=SCORES_WHAT).root
    except ReplyShapeError as exc:
        note_dropped(f"{SCORES_WHAT}: {str(exc).partition(': ')[2] or 'not a number'}")
        return None


def _field(value: Any, key: str) -> Any:
    if not isinstance(value, dict):
        raise ReplyShapeError(f'bridgerag: expected a JSON object with "{key}", '
                              f"got {json_type_name(value)}")
    if key not in value:
        raise ReplyShapeError(f'bridgerag: the reply has no "{key}" key (keys: {sorted(value)})')
    return value[key]


def _clean_entity(text: str) -> str:
    """An entity as the model wrote it, less what models wrap it in: a list marker
    (``-``, ``*``, ``•``, ``1.``, ``(2)``), a label (``Entities:``, ``e1:``, ``**Entity
    2**:``), markdown emphasis and code marks, and quotes; repeated until none is left,
    since they nest (``- **e1:** `Westminster```). Spaces are folded."""
    cleaned = " ".join(text.split())
    while True:
        before = cleaned
        cleaned = _LIST_MARKER.sub("", cleaned, count=1)
        cleaned = _LABEL.sub("", cleaned, count=1)
        cleaned = cleaned.strip(_WRAPPERS).strip()
        if cleaned == before:
            return cleaned[:MAX_ENTITY_CHARS]


def _distinct(items: Iterable[str]) -> tuple[str, ...]:
    seen: dict[str, str] = {}
    for item in items:
        if item and item.casefold() not in seen:
            seen[item.casefold()] = item
    return tuple(seen.values())
