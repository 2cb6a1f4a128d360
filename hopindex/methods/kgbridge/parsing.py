"""Readers of the partitioned-KG replies: a chunk's graph, entity summaries, a
document's summary and a same-entity verdict.

The JSON readers are the ``parse`` callbacks of ``complete_json``. Lists are read item
by item against the declared shapes (``shapes``): a null or misfit element is dropped
and noted, a number given as text is read and counted, and the reply fails
(``ReplyShapeError``, which the client's one repair attempt shows the model) only when
it is not the object asked for, or a list that had elements kept none. The graph's
own rules drop and note what does not change the meaning (a blank name, a relation to
an entity the chunk does not list); a missing type is the default one.
"""

from __future__ import annotations

import unicodedata
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
from hopindex.methods.kgbridge.shapes import (
    ENTITIES_WHAT,
    RELATIONS_WHAT,
    EntityItem,
    RelationItem,
    VerdictReply,
)

DEFAULT_TYPE = "entity"
SCORE_TOP = 10.0  # the verdict's score is asked on 0-10


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
        raise ReplyShapeError(f'kgbridge.extract: expected a JSON object with "entities" and '
                              f'"relations", got {json_type_name(value)}')
    if "entities" not in value:
        raise ReplyShapeError(f'kgbridge.extract: the reply has no "entities" key '
                              f"(keys: {sorted(value)})")
    entities = _entities(read_items(value["entities"], EntityItem, what=ENTITIES_WHAT))
    # A null relation list says what an empty one says.
    raw_relations = value.get("relations")
    triples: dict[tuple[str, str, str], ExtractedRelation] = {}
    for item in read_items([] if raw_relations is None else raw_relations, RelationItem,
                           what=RELATIONS_WHAT):
        source, target = entity_key(item.source), entity_key(item.target)
        relation = one_line(item.relation)
        if source not in entities or target not in entities:
            note_dropped(f"{RELATIONS_WHAT}: source or target is not a listed entity")
        elif not relation:
            note_dropped(f"{RELATIONS_WHAT}: blank relation")
        else:
            triples.setdefault((source, relation, target),
                               ExtractedRelation(source, relation, target))
    return ChunkGraph(entities=tuple(entities.values()), relations=tuple(triples.values()))


def parse_summaries(value: Any) -> dict[str, str]:
    """``{"summaries": {"<entity name>": "<summary>"}}`` → summary by entity key; blank
    summaries are left out (the entity falls back to its description), as are ones
    that are not text (noted); a map that had entries and kept none fails."""
    if not isinstance(value, dict) or "summaries" not in value:
        keys = sorted(value) if isinstance(value, dict) else None
        raise ReplyShapeError('kgbridge.entity_summaries: expected a JSON object '
                              '{"summaries": {"<entity name>": "<summary>"}}, got '
                              f"{json_type_name(value) if keys is None else keys}")
    summaries = value["summaries"]
    if not isinstance(summaries, dict):
        raise ReplyShapeError(f"kgbridge.entity_summaries: summaries must be an object of "
                              f"entity name to summary, got {json_type_name(summaries)}")
    found: dict[str, str] = {}
    texts = 0
    for name, summary in summaries.items():
        if not isinstance(summary, str):
            note_dropped(f"kgbridge.entity_summaries summaries: {json_type_name(summary)} summary")
            continue
        texts += 1
        key, text = entity_key(str(name)), one_line(summary)
        if key and text:
            found.setdefault(key, text)
        else:
            note_dropped("kgbridge.entity_summaries summaries: blank name or summary")
    if summaries and not texts:
        raise ReplyShapeError(f"kgbridge.entity_summaries summaries: no summary is text "
                              f"among {len(summaries)}")
    return found


def parse_doc_summary(content: str) -> str:
    """A document's summary: the reply on one line, which must not be empty."""
    summary = one_line(content)
    if not summary:
        raise ReplyShapeError("the model's document summary is empty")
    return summary


def parse_verdict(value: Any) -> Verdict:
    """``{"same": bool, "score": 0-10, "reason": str}`` → a verdict with the score
    divided by 10 (clamped to 0-10 first); ``reason`` may be missing. A score given on
    0-1 (a fraction where 0-10 was asked) is read as such, and noted as rescaled."""
    if not isinstance(value, dict):
        raise ReplyShapeError(f'kgbridge.adjudicate: expected a JSON object with "same", '
                              f'"score" and "reason", got {json_type_name(value)}')
    verdict = read_shape(value, VerdictReply, what="kgbridge.adjudicate")
    score = scores_on_scale([verdict.score], top=SCORE_TOP)[0]
    return Verdict(same=verdict.same, score=min(max(score, 0.0), SCORE_TOP) / SCORE_TOP,
                   reason=one_line(verdict.reason or ""))


def _entities(items: list[EntityItem]) -> dict[str, ExtractedEntity]:
    found: dict[str, ExtractedEntity] = {}
    for item in items:
        name = one_line(item.name)
        kind = one_line(item.type or "") or DEFAULT_TYPE
        description = one_line(item.description or "")
        key = entity_key(name)
        if not key:
            note_dropped(f"{ENTITIES_WHAT}: blank name")
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


def one_line(text: str) -> str:
    return " ".join(text.split())
