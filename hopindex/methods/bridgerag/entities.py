"""Dual-entity expansion (paper §4.3): two entities from the question and the bridge,
each searched on its own.

The model answers ``e1 | e2`` (Appendix C); one entity is used for both. The same
entity twice is searched once: the second search could only return the same hits.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hopindex.backends.llm.usage import UsageMeter
from hopindex.methods.bridgerag.parsing import parse_entity_pair
from hopindex.methods.bridgerag.pool import Source
from hopindex.methods.bridgerag.prompts import entities_request

if TYPE_CHECKING:
    # Annotations only: the runner imports the openai SDK, which loading the method
    # (every CLI command loads the registry) must not pay for.
    from hopindex.backends.llm.runner import LlmRunner


def ask_entities(llm: LlmRunner, question: str, bridge: str,
                 usage: UsageMeter) -> tuple[str, str]:
    return parse_entity_pair(llm.complete(entities_request(question, bridge), usage).content)


def entity_searches(entities: tuple[str, str]) -> list[tuple[Source, str]]:
    """(source, text) to search for; e2 is dropped when it repeats e1 (case-blind)."""
    e1, e2 = entities
    searches = [(Source.E1, e1)] if e1 else []
    if e2 and e2.casefold() != e1.casefold():
        searches.append((Source.E2, e2))
    return searches
