"""Readers of the partitioned-KG replies: a chunk's graph and what its gleaning adds,
entity summaries, a document's summary and a same-entity verdict.

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
from collections.abc import Mapping, Sequence
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
    """The model's same-entity judgement; ``score`` is S_LLM, on the 0-1 scale: 0 when
    the model says the two are not the same, whatever score it gave."""

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
    return _graph(value, "kgbridge.extract", {})


def parse_gleaning(value: Any, listed: Sequence[ExtractedEntity]) -> ChunkGraph:
    """The gleaning reply, the same shape as the extraction's, against the entities the
    chunk's extraction ``listed``: only entities of keys not listed are kept (a listed
    one repeated is dropped and noted), and a relation may join a found entity to a
    listed one."""
    known = {entity.key: entity for entity in listed}
    graph = _graph(value, "kgbridge.glean", known)
    for _ in range(sum(1 for e in graph.entities if e.key in known)):
        note_dropped(f"{ENTITIES_WHAT}: an entity the extraction had already listed")
    return ChunkGraph(entities=tuple(e for e in graph.entities if e.key not in known),
                      relations=graph.relations)


def _graph(value: Any, what: str, known: Mapping[str, ExtractedEntity]) -> ChunkGraph:
    """A chunk's graph from ``value``; relations may also end at a ``known`` entity."""
    if not isinstance(value, dict):
        raise ReplyShapeError(f'{what}: expected a JSON object with "entities" and '
                              f'"relations", got {json_type_name(value)}')
    if "entities" not in value:
        raise ReplyShapeError(f'{what}: the reply has no "entities" key '
                              f"(keys: {sorted(value)})")
    entities = _entities(read_items(value["entities"], EntityItem, what=ENTITIES_WHAT))
    ends = {**known, **entities}
    # A null relation list says what an empty one says.
    raw_relations = value.get("relations")
    triples: dict[tuple[str, str, str], ExtractedRelation] = {}
    for item in read_items([] if raw_relations is None else raw_relations, RelationItem,
                           what=RELATIONS_WHAT):
        source, target = entity_key(item.source), entity_key(item.target)
        relation = one_line(item.relation)
        if source not in ends or target not in ends:
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
    # Departure from the paper (docs/methods.md, kgbridge): the model gives a verdict and a
    # 0-10 score, not a confidence alone; "not the same" is the verdict, and a score beside
    # it (models often rate how sure they are of the "no") must not pass for confidence
    # that they are one entity: S_LLM = 0.
    s_llm = min(max(score, 0.0), SCORE_TOP) / SCORE_TOP if verdict.same else 0.0
    return Verdict(same=verdict.same, score=s_llm, reason=one_line(verdict.reason or ""))


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
