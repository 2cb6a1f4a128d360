"""Hop-2 SVO queries (paper §4.2): asked of the model from the question and the bridge.

Either alone (the paper's call, Appendix B) or together with the two entities in one
call (``extraction=merged``), since both read the same inputs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hopindex.backends.llm.usage import UsageMeter
from hopindex.methods.bridgerag.parsing import Extracted, parse_extracted, parse_queries
from hopindex.methods.bridgerag.prompts import extract_request, svo_request

if TYPE_CHECKING:
    # Annotations only: the runner imports the openai SDK, which loading the method
    # (every CLI command loads the registry) must not pay for.
    from hopindex.backends.llm.runner import LlmRunner


def ask_svo_queries(llm: LlmRunner, question: str, bridge: str,
                    usage: UsageMeter) -> tuple[str, ...]:
    """Up to three distinct SVO queries (one call; a bad reply is not repaired at query
    time: the query falls back to the question itself)."""
    return llm.complete_json(svo_request(question, bridge), parse_queries, usage)


def ask_svo_and_entities(llm: LlmRunner, question: str, bridge: str,
                         usage: UsageMeter) -> Extracted:
    """The SVO queries and the two entities from one call."""
    return llm.complete_json(extract_request(question, bridge), parse_extracted, usage)
