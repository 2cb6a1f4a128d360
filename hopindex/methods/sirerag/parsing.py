"""Readers of SiReRAG's replies: the propositions of a passage, the paper's three
extraction steps (a rewritten chunk, its entities, its facts), and a cluster's summary.

``parse_propositions`` is the ``parse`` callback of ``complete_json``. Propositions are
read one by one against ``shapes.PropositionItem``: a null or misfit one is dropped
and noted, as is an entity name that is not text; the reply fails (``ReplyShapeError``,
which the client's one repair attempt shows the model) only when it is not the array
or its wrapper, or none of its propositions fits. Blank propositions and names are
left out, repeated ones kept once.

The paper's steps are read the same way: ``parse_entities`` and ``facts_parser`` take
Figs. 7 and 8's keyed objects (or a plain array of the same items) item by item against
``shapes.EntityItem`` and ``shapes.FactItem``, and fail only when no item fits;
``parse_rewrite`` takes Fig. 6's text reply, which fails only when empty.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from hopindex.backends.llm.reply_shapes import (
    json_type_name,
    note_coerced,
    note_dropped,
    read_items,
    read_names,
)
from hopindex.core.errors import ReplyShapeError
from hopindex.methods.sirerag.shapes import (
    ENTITIES_WHAT,
    FACTS_WHAT,
    PROPOSITIONS_WHAT,
    EntityItem,
    FactItem,
    PropositionItem,
)

# JSON mode (``response_format=json_object``) forbids a top-level array, so the prompt
# asks for the array wrapped under this key there.
PROPOSITIONS_KEY = "propositions"
TEXT_KEY = "proposition"
ENTITIES_KEY = "entities"
# A reply that repeats the label the prompt ends with, as models often do.
_ECHOED_LABEL = re.compile(r"^[#*\s]*output\s*:[*\s]*", re.IGNORECASE)


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
    items = read_items(_items(value), PropositionItem, what=PROPOSITIONS_WHAT)
    return _merged([(item.proposition,
                     read_names(item.entities, what=f"{PROPOSITIONS_WHAT} {ENTITIES_KEY}"))
                    for item in items], what=PROPOSITIONS_WHAT)


def parse_rewrite(content: str) -> str:
    """Fig. 6's reply: the rewritten chunk, without an echoed ``Output:`` label (the
    prompt's examples end with one); an empty reply is an error."""
    text = _ECHOED_LABEL.sub("", content.strip(), count=1).strip()
    if not text:
        raise ReplyShapeError("sirerag.coreference: the model's rewritten paragraph is empty")
    return text


def parse_entities(value: Any) -> tuple[str, ...]:
    """Fig. 7's ``{"n1": {"name", "type"}, ...}`` (or an array of those items) → the
    names in reply order, each once (case aside). ``{}`` is a chunk naming nobody."""
    return _unique_names(item.name for item in read_items(
        _keyed_items(value, "name", ENTITIES_WHAT), EntityItem, what=ENTITIES_WHAT))


def facts_parser(entities: Iterable[str]) -> Callable[[Any], list[Proposition]]:
    """The reader of one chunk's Fig. 8 reply, given the entities Fig. 7 found in it.

    Each fact is a proposition; its entities are the heads and tails of its triplets
    that are on that list (under the list's spelling). The other heads and tails are
    values ("$2.2 billion") or common nouns ("FDA approval"), which the paper keeps
    out of the relatedness tree; a fact without a listed one names no entity.
    """
    listed = {_one_line(name).casefold(): _one_line(name) for name in entities}

    def parse(value: Any) -> list[Proposition]:
        facts = read_items(_keyed_items(value, "fact", FACTS_WHAT), FactItem, what=FACTS_WHAT)
        return _merged([(item.fact, [listed[key] for key in _ends(item.triplets)
                                     if key in listed]) for item in facts], what=FACTS_WHAT)

    return parse


def _merged(items: Iterable[tuple[str, list[str]]], *, what: str) -> list[Proposition]:
    """Propositions in order, blank ones dropped and noted, a repeated one kept once
    with the entities of every repeat."""
    entities_of: dict[str, list[str]] = {}
    for raw_text, names in items:
        # Aggregates join propositions one per line: a newline inside one would split it.
        text = _one_line(raw_text)
        if text:
            entities_of.setdefault(text, []).extend(names)
        else:
            note_dropped(f"{what}: blank proposition")
    return [Proposition(text=text, entities=_unique_names(names))
            for text, names in entities_of.items()]


def _keyed_items(value: Any, field: str, what: str) -> list[Any]:
    """The items of a keyed object (``n1``, ``f1``, ...) in reply order; an array of
    items as it is; one item given bare (an object with its ``field``) as a list of one."""
    if isinstance(value, list):
        return value
    if not isinstance(value, dict):
        raise ReplyShapeError(f"{what}: expected a JSON object of items, "
                              f"got {json_type_name(value)}")
    if isinstance(value.get(field), str):
        note_coerced()
        return [value]
    return list(value.values())


def _ends(triplets: list[Any] | None) -> list[str]:
    """The heads and tails of well-formed triplets, case-folded; a triplet that is not
    ``[head, predicate, tail]`` of text is dropped and noted."""
    ends: list[str] = []
    for triplet in triplets or []:
        if (isinstance(triplet, list) and len(triplet) >= 3
                and isinstance(triplet[0], str) and isinstance(triplet[-1], str)):
            ends.extend(_one_line(end).casefold() for end in (triplet[0], triplet[-1]))
        else:
            note_dropped(f"{FACTS_WHAT} triplets: not [head, predicate, tail]")
    return ends


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
