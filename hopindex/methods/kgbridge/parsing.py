"""Validators of the partitioned-KG replies: a chunk's graph, entity summaries, a
document's summary and a same-entity verdict.

The JSON parsers are the ``parse`` callbacks of ``complete_json``: strict about the
shape, naming what is wrong so that the client's one repair attempt can tell the
model, and lenient only where the meaning does not change (a blank name dropped, a
relation to an entity the chunk does not list dropped, a missing type).
"""

from __future__ import annotations

import math
import unicodedata
from dataclasses import dataclass
from typing import Any

from hopindex.core.errors import LlmOutputError

DEFAULT_TYPE = "entity"


class ReplyShapeError(LlmOutputError, ValueError):
    """A reply of the wrong shape: an ``LlmOutputError`` (the item's permanent failure)
    that is also a ``ValueError``, on which the client makes its repair attempt and
    treats a cached reply as a miss."""


def entity_key(name: str) -> str:
    """The key entities are compared, merged and linked by: NFKC, case-folded, spaces
    folded. Two documents' entities of one key are SAME_AS candidates."""
    return " ".join(unicodedata.normalize("NFKC", name).casefold().split())


@dataclass(frozen=True, slots=True)
class ExtractedEntity:
    name: str
    type: str
    description: str

    @property
    def key(self) -> str:
        return entity_key(self.name)


@dataclass(frozen=True, slots=True)
class ExtractedRelation:
    """A triple between two entities of the same chunk, by their keys."""

    source: str
    relation: str
    target: str


@dataclass(frozen=True, slots=True)
class ChunkGraph:
    entities: tuple[ExtractedEntity, ...]
    relations: tuple[ExtractedRelation, ...]


@dataclass(frozen=True, slots=True)
class Verdict:
    """The model's same-entity judgement; ``score`` is S_LLM, on the 0-1 scale."""

    same: bool
    score: float
    reason: str


def parse_extraction(value: Any) -> ChunkGraph:
    """``{"entities": [{"name", "type", "description"}], "relations": [{"source",
    "relation", "target"}]}`` → the chunk's graph.

    An entity repeated under one key is kept once (first type, descriptions joined);
    a relation whose source or target is not a listed entity, or whose relation is
    blank, is dropped, as is a repeated triple. ``relations`` may be missing.
    """
    if not isinstance(value, dict):
        raise ReplyShapeError(f'expected a JSON object with "entities" and "relations", '
                              f"got {_kind(value)}")
    if "entities" not in value:
        raise ReplyShapeError(f'the reply has no "entities" key (keys: {sorted(value)})')
    entities = _entities(_list(value["entities"], "entities"))
    triples: dict[tuple[str, str, str], ExtractedRelation] = {}
    for position, item in enumerate(_list(value.get("relations", []), "relations")):
        where = f"relations[{position}]"
        if not isinstance(item, dict):
            raise ReplyShapeError(f'{where} must be an object with "source", "relation" and '
                                  f'"target", got {_kind(item)}')
        parts = [_string(item, field, where, required=True)
                 for field in ("source", "relation", "target")]
        source, target = entity_key(parts[0]), entity_key(parts[2])
        relation = one_line(parts[1])
        if source in entities and target in entities and relation:
            triples.setdefault((source, relation, target),
                               ExtractedRelation(source, relation, target))
    return ChunkGraph(entities=tuple(entities.values()), relations=tuple(triples.values()))


def parse_summaries(value: Any) -> dict[str, str]:
    """``{"summaries": {"<entity name>": "<summary>"}}`` → summary by entity key; blank
    summaries are left out (the entity falls back to its description)."""
    if not isinstance(value, dict) or "summaries" not in value:
        keys = sorted(value) if isinstance(value, dict) else None
        raise ReplyShapeError('expected a JSON object {"summaries": {"<entity name>": '
                              f'"<summary>"}}, got {_kind(value) if keys is None else keys}')
    summaries = value["summaries"]
    if not isinstance(summaries, dict):
        raise ReplyShapeError(f"summaries must be an object of entity name to summary, got "
                              f"{_kind(summaries)}")
    found: dict[str, str] = {}
    for name, summary in summaries.items():
        if not isinstance(summary, str):
            raise ReplyShapeError(f"summaries[{name!r}] must be a string, got {_kind(summary)}")
        key, text = entity_key(str(name)), one_line(summary)
        if key and text:
            found.setdefault(key, text)
    return found


def parse_doc_summary(content: str) -> str:
    """A document's summary: the reply on one line, which must not be empty."""
    summary = one_line(content)
    if not summary:
        raise ReplyShapeError("the model's document summary is empty")
    return summary


def parse_verdict(value: Any) -> Verdict:
    """``{"same": bool, "score": 0-10, "reason": str}`` → a verdict with the score
    divided by 10 (clamped to 0-10 first); ``reason`` may be missing."""
    if not isinstance(value, dict):
        raise ReplyShapeError(f'expected a JSON object with "same", "score" and "reason", '
                              f"got {_kind(value)}")
    same = value.get("same")
    if not isinstance(same, bool):
        raise ReplyShapeError(f'"same" must be true or false, got {_kind(same)}')
    score = value.get("score")
    if isinstance(score, bool) or not isinstance(score, int | float) or math.isnan(score):
        raise ReplyShapeError(f'"score" must be a number from 0 to 10, got {_kind(score)}')
    reason = value.get("reason", "")
    if not isinstance(reason, str):
        raise ReplyShapeError(f'"reason" must be a string, got {_kind(reason)}')
    return Verdict(same=same, score=min(max(float(score), 0.0), 10.0) / 10.0,
                   reason=one_line(reason))


def _entities(items: list[Any]) -> dict[str, ExtractedEntity]:
    found: dict[str, ExtractedEntity] = {}
    for position, item in enumerate(items):
        where = f"entities[{position}]"
        if not isinstance(item, dict):
            raise ReplyShapeError(f'{where} must be an object with "name", "type" and '
                                  f'"description", got {_kind(item)}')
        name = one_line(_string(item, "name", where, required=True))
        kind = one_line(_string(item, "type", where)) or DEFAULT_TYPE
        description = one_line(_string(item, "description", where))
        key = entity_key(name)
        if not key:
            continue
        earlier = found.get(key)
        if earlier is None:
            found[key] = ExtractedEntity(name=name, type=kind, description=description)
        elif description and description not in earlier.description:
            found[key] = ExtractedEntity(earlier.name, earlier.type,
                                         join_descriptions(earlier.description, description))
    return found


def join_descriptions(first: str, second: str) -> str:
    """Two descriptions of one entity as one text (each ends as a sentence)."""
    parts = [p.strip() for p in (first, second) if p.strip()]
    return " ".join(p if p.endswith((".", "!", "?")) else f"{p}." for p in parts)


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise ReplyShapeError(f"{where} must be a JSON array, got {_kind(value)}")
    return value


def _string(item: dict[str, Any], field: str, where: str, *, required: bool = False) -> str:
    if field not in item or item[field] is None:
        if required:
            raise ReplyShapeError(f'{where} has no "{field}" (keys: {sorted(item)})')
        return ""
    value = item[field]
    if not isinstance(value, str):
        raise ReplyShapeError(f"{where}.{field} must be a string, got {_kind(value)}")
    return value


def one_line(text: str) -> str:
    return " ".join(text.split())


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__
