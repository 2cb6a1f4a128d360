"""Readers of IndexRAG's JSON replies, used as ``parse`` callbacks of ``complete_json``.

Each reply is read item by item against its declared shape (``shapes``): an element
that does not fit, or is null, is dropped and noted, and a number given as text is
read and counted; a reply fails (``ReplyShapeError``, on which the client makes its
one repair call) only when it is not the expected object or array, or a list that had
elements kept none.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hopindex.backends.llm.reply_shapes import json_type_name, note_dropped, read_items
from hopindex.core.errors import ReplyShapeError
from hopindex.methods.indexrag.shapes import (
    ENTITIES_WHAT,
    FACTS_WHAT,
    QA_PAIRS_WHAT,
    BridgingFact,
    EntityName,
    Stage1Pair,
)

# JSON mode (``response_format=json_object``) forbids a top-level array, so a model
# asked for Fig. 6's array may wrap it in an object under one of these keys.
STAGE2_LIST_KEYS = ("bridging_facts", "facts")


@dataclass(frozen=True, slots=True)
class QaPair:
    """One atomic fact; ``entities`` only when the model listed them per pair."""

    question: str
    answer: str
    entities: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ExtractedFacts:
    """Stage 1 output of one chunk: its facts and the entities it names (raw surfaces)."""

    qa_pairs: tuple[QaPair, ...]
    entities: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class DocFacts:
    """A document's stage-1 facts, the input of stage 2 for each entity it mentions."""

    doc_id: str
    title: str
    qa_pairs: tuple[QaPair, ...]


def parse_stage1(value: Any) -> ExtractedFacts:
    """``{"qa_pairs": [{"question", "answer"}...], "entities": [...]}`` → facts.

    Pairs with an empty answer are dropped (they carry nothing to index); a missing
    or empty entity list is accepted, since a chunk may name no entity.
    """
    if not isinstance(value, dict):
        raise ReplyShapeError(f"indexrag.stage1: expected a JSON object with "
                              f'"qa_pairs", got {json_type_name(value)}')
    if "qa_pairs" not in value:
        raise ReplyShapeError(f'indexrag.stage1: the reply has no "qa_pairs" key '
                              f"(keys: {sorted(value)})")
    pairs: list[QaPair] = []
    for pair in read_items(value["qa_pairs"], Stage1Pair, what=QA_PAIRS_WHAT):
        answer = pair.answer.strip()
        if not answer:
            note_dropped(f"{QA_PAIRS_WHAT}: empty answer")
            continue
        pairs.append(QaPair(question=pair.question.strip(), answer=answer,
                            entities=_unique(pair.entities, f"{QA_PAIRS_WHAT} entities")))
    raw_entities = value.get("entities")
    entities = () if raw_entities is None else _unique(
        [name.root for name in read_items(raw_entities, EntityName, what=ENTITIES_WHAT)],
        ENTITIES_WHAT)
    return ExtractedFacts(qa_pairs=tuple(pairs), entities=entities)


def parse_stage2(value: Any) -> tuple[str, ...]:
    """A JSON array of fact strings, or an object holding it → unique non-blank facts."""
    if isinstance(value, dict):
        key = next((k for k in STAGE2_LIST_KEYS if k in value), None)
        if key is None:
            raise ReplyShapeError(f"indexrag.stage2: expected a JSON array or an object with "
                                  f"one of {STAGE2_LIST_KEYS}, got keys {sorted(value)}")
        value = value[key]
    facts = [fact.root.strip() for fact in read_items(value, BridgingFact, what=FACTS_WHAT)]
    for _ in range(facts.count("")):
        note_dropped(f"{FACTS_WHAT}: blank fact")
    return tuple(dict.fromkeys(fact for fact in facts if fact))


def _unique(names: list[Any] | None, what: str) -> tuple[str, ...]:
    """Stripped, blank ones left out, first occurrence kept; anything but a string
    (a null, a number) is dropped and noted."""
    kept: list[str] = []
    for name in names or ():
        if not isinstance(name, str):
            note_dropped(f"{what}: {json_type_name(name)} element")
        elif name.strip():
            kept.append(name.strip())
    return tuple(dict.fromkeys(kept))
