"""Readers of SiReRAG's replies: the propositions of a passage and a cluster's summary.

``parse_propositions`` is the ``parse`` callback of ``complete_json``. Propositions are
read one by one against ``shapes.PropositionItem``: a null or misfit one is dropped
and noted, as is an entity name that is not text; the reply fails (``ReplyShapeError``,
which the client's one repair attempt shows the model) only when it is not the array
or its wrapper, or none of its propositions fits. Blank propositions and names are
left out, repeated ones kept once.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from hopindex.backends.llm.reply_shapes import json_type_name, note_dropped, read_items, read_names
from hopindex.core.errors import ReplyShapeError
from hopindex.methods.sirerag.shapes import PROPOSITIONS_WHAT, PropositionItem

# JSON mode (``response_format=json_object``) forbids a top-level array, so the prompt
# asks for the array wrapped under this key there.
PROPOSITIONS_KEY = "propositions"
TEXT_KEY = "proposition"
ENTITIES_KEY = "entities"


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
    for item in read_items(_items(value), PropositionItem, what=PROPOSITIONS_WHAT):
        # Aggregates join propositions one per line: a newline inside one would split it.
        text = _one_line(item.proposition)
        if text:
            entities_of.setdefault(text, []).extend(
                read_names(item.entities, what=f"{PROPOSITIONS_WHAT} {ENTITIES_KEY}"))
        else:
            note_dropped(f"{PROPOSITIONS_WHAT}: blank proposition")
    return [Proposition(text=text, entities=_unique_names(names))
            for text, names in entities_of.items()]


def parse_summary(content: str) -> str:
    """A cluster's summary: the reply stripped, which must not be empty."""
    summary = content.strip()
    if not summary:
        raise ReplyShapeError("the model's summary is empty")
    return summary


def _items(value: Any) -> Any:
    if isinstance(value, dict):
        if PROPOSITIONS_KEY not in value:
            raise ReplyShapeError(f"sirerag.propositions: expected a JSON array, or an object "
                                  f'with the array under "{PROPOSITIONS_KEY}"; got an object '
                                  f"with keys {sorted(value)}")
        value = value[PROPOSITIONS_KEY]
    if not isinstance(value, list):
        raise ReplyShapeError(f"sirerag.propositions: expected a JSON array of propositions, "
                              f"got {json_type_name(value)}")
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
