"""The declared shapes of IndexRAG's JSON replies (pydantic v2), sent as a strict JSON
schema where the provider takes one and read item by item by ``parsing``.

What the schema says is what the prompts ask for; what the models read beyond it is
marked ``SkipJsonSchema`` (null where a string is asked, a per-pair entity list some
models add), so the schema stays the prompt's while a reply slightly off it still reads.
"""

from __future__ import annotations

from typing import Any

import pydantic
from pydantic.json_schema import SkipJsonSchema

# How each list is named in notes and errors: the reply kind, then its key.
QA_PAIRS_WHAT = "indexrag.stage1 qa_pairs"
ENTITIES_WHAT = "indexrag.stage1 entities"
FACTS_WHAT = "indexrag.stage2 bridging_facts"


# Class docstrings are sent to the model as the schema's descriptions: they say what
# each thing is; why it is read as it is goes in comments.


class Stage1Pair(pydantic.BaseModel):
    """One atomic question-answer pair."""

    # Numbers are read as text (counted as coerced): models answer "how many" and
    # "what year" with bare numbers, which are still facts.
    model_config = pydantic.ConfigDict(coerce_numbers_to_str=True)

    question: str
    answer: str
    # Not asked for; read when a model adds it, each name checked by the parser, so a
    # stray null or number in it costs that name, not the pair.
    entities: SkipJsonSchema[list[Any] | None] = None


class EntityName(pydantic.RootModel[str]):
    """A named entity the document mentions."""

    # A bare number does not fit: read as a name, a year would bridge every document
    # that mentions it.


class Stage1Reply(pydantic.BaseModel):
    """The document's question-answer pairs and the named entities it mentions."""

    qa_pairs: list[Stage1Pair]
    entities: list[str]


class BridgingFact(pydantic.RootModel[str]):
    """A self-contained fact combining information from two or more documents."""

    # A bare number is no fact: it does not fit, and is dropped.


class Stage2Reply(pydantic.BaseModel):
    """Bridging facts connecting the documents."""

    # The object JSON mode requires; the prompt also allows the bare array, read too.

    bridging_facts: list[str]
