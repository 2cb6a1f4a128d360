"""Validators of BridgeRAG's replies.

The JSON ones are ``parse`` callbacks of ``complete_json``: they raise
``ValueError``/``KeyError``/``TypeError`` on a wrong shape so the client makes its
one repair attempt. They are lenient where the meaning survives (extra or blank
queries, a score given as a numeric string, a score a little outside 0-10).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from hopindex.methods.bridgerag.prompts import QUERY_COUNT

MAX_QUERY_CHARS = 500
MAX_ENTITY_CHARS = 200
SCORE_MIN = 0.0
SCORE_MAX = 10.0
_QUOTES = "\"'`\u201c\u201d\u2018\u2019"


@dataclass(frozen=True, slots=True)
class Extracted:
    """What the merged call returns: the SVO queries and the two entities."""

    queries: tuple[str, ...]
    entities: tuple[str, str]


def parse_queries(value: Any) -> tuple[str, ...]:
    """``{"queries": [...]}`` → up to three distinct non-blank queries, in order."""
    if not isinstance(value, dict):
        raise TypeError(f"expected a JSON object, got {type(value).__name__}")
    raw = value["queries"]
    if not isinstance(raw, list) or not all(isinstance(q, str) for q in raw):
        raise TypeError("queries must be a list of strings")
    queries = _distinct(" ".join(q.split())[:MAX_QUERY_CHARS] for q in raw)
    if not queries:
        raise ValueError("queries is empty")
    return queries[:QUERY_COUNT]


def parse_entity_pair(reply: str) -> tuple[str, str]:
    """``e1 | e2`` → both; one entity is used twice (Appendix C). Never fails: a reply
    without ``|`` is one entity, an empty reply gives two empty strings (no search)."""
    line = next((ln for ln in reply.splitlines() if "|" in ln), reply.strip())
    parts = [_clean_entity(p) for p in line.split("|")]
    named = [p for p in parts if p]
    if not named:
        return "", ""
    return named[0], named[1] if len(named) > 1 else named[0]


def parse_extracted(value: Any) -> Extracted:
    """``{"queries": [...], "entities": [e1, e2]}`` (entities may also be ``"e1 | e2"``)."""
    queries = parse_queries(value)
    raw = value["entities"]
    if isinstance(raw, str):
        return Extracted(queries, parse_entity_pair(raw))
    if not isinstance(raw, list) or not all(isinstance(e, str) for e in raw):
        raise TypeError("entities must be a list of strings")
    named = [e for e in (_clean_entity(x) for x in raw) if e]
    if not named:
        raise ValueError("entities is empty")
    return Extracted(queries, (named[0], named[1] if len(named) > 1 else named[0]))


def judge_parser(count: int) -> Callable[[Any], tuple[float | None, ...]]:
    """The parser of a judge reply over candidates ``1..count``.

    Accepts ``{"scores": {"1": 7, ...}}``, ``{"scores": [7, ...]}`` (in candidate
    order) or ``{"scores": [{"id": 1, "score": 7}, ...]}``. A candidate the reply
    leaves out scores None (it ranks below every scored one); a reply that scores no
    candidate at all is invalid. Scores are clamped to 0-10; unknown ids are ignored.
    """

    def parse(value: Any) -> tuple[float | None, ...]:
        if not isinstance(value, dict):
            raise TypeError(f"expected a JSON object, got {type(value).__name__}")
        raw = value["scores"]
        scores: list[float | None] = [None] * count
        if isinstance(raw, dict):
            pairs = list(raw.items())
        elif isinstance(raw, list) and all(isinstance(x, dict) for x in raw):
            pairs = [(x.get("id", x.get("candidate")), x.get("score")) for x in raw]
        elif isinstance(raw, list):
            pairs = [(i, s) for i, s in enumerate(raw, start=1)]
        else:
            raise TypeError("scores must be an object or a list")
        for key, score in pairs:
            position = _position(key, count)
            if position is not None:
                scores[position] = _score(score)
        if all(s is None for s in scores):
            raise ValueError(f"no score for any of the {count} candidates")
        return tuple(scores)

    return parse


def _position(key: object, count: int) -> int | None:
    text = str(key).strip().strip("[]") if not isinstance(key, bool) else ""
    if not text.isdigit():
        return None
    number = int(text)
    return number - 1 if 1 <= number <= count else None


def _score(value: object) -> float:
    if isinstance(value, bool):
        raise TypeError(f"a score must be a number, got {value!r}")
    if isinstance(value, str):
        match = re.fullmatch(r"\s*(-?\d+(?:\.\d+)?)\s*(?:/\s*10)?\s*", value)
        if match is None:
            raise ValueError(f"a score must be a number, got {value!r}")
        value = float(match.group(1))
    if not isinstance(value, int | float) or not math.isfinite(value):
        raise TypeError(f"a score must be a number, got {value!r}")
    return min(SCORE_MAX, max(SCORE_MIN, float(value)))


def _clean_entity(text: str) -> str:
    return " ".join(text.strip().strip(_QUOTES).split())[:MAX_ENTITY_CHARS]


def _distinct(items: Iterable[str]) -> tuple[str, ...]:
    seen: dict[str, str] = {}
    for item in items:
        if item and item.casefold() not in seen:
            seen[item.casefold()] = item
    return tuple(seen.values())
