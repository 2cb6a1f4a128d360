"""Validators of IndexRAG's JSON replies, used as ``parse`` callbacks of ``complete_json``.

They raise ``ValueError``/``KeyError``/``TypeError`` on a wrong shape so that the
client makes its one repair attempt; they are lenient about what does not change
the meaning (missing entity list, scalar answers, blank items).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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
        raise TypeError(f"expected a JSON object, got {type(value).__name__}")
    raw_pairs = value["qa_pairs"]
    if not isinstance(raw_pairs, list):
        raise TypeError("qa_pairs must be a list")
    pairs: list[QaPair] = []
    for item in raw_pairs:
        if not isinstance(item, dict):
            raise TypeError("each qa pair must be an object with question and answer")
        question = _scalar_text(item["question"], "question")
        answer = _scalar_text(item["answer"], "answer")
        if answer:
            pairs.append(QaPair(question=question, answer=answer,
                                entities=_string_list(item.get("entities"), "pair entities")))
    return ExtractedFacts(qa_pairs=tuple(pairs),
                          entities=_string_list(value.get("entities"), "entities"))


def parse_stage2(value: Any) -> tuple[str, ...]:
    """A JSON array of fact strings, or an object holding it → unique non-blank facts."""
    if isinstance(value, dict):
        key = next((k for k in STAGE2_LIST_KEYS if k in value), None)
        if key is None:
            raise KeyError(f"expected a JSON array or an object with one of {STAGE2_LIST_KEYS}")
        value = value[key]
    if not isinstance(value, list):
        raise TypeError(f"expected a JSON array of strings, got {type(value).__name__}")
    if not all(isinstance(item, str) for item in value):
        raise TypeError("every bridging fact must be a string")
    return tuple(dict.fromkeys(item.strip() for item in value if item.strip()))


def _scalar_text(value: Any, name: str) -> str:
    # Models answer "how many" questions with bare numbers; those are still facts.
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise TypeError(f"{name} must be a string")
    return str(value).strip()


def _string_list(value: Any, name: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise TypeError(f"{name} must be a list of strings")
    if not all(isinstance(item, str) for item in value):
        raise TypeError(f"{name} must be a list of strings")
    return tuple(dict.fromkeys(item.strip() for item in value if item.strip()))
