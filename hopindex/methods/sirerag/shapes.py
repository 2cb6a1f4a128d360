"""The declared shape of SiReRAG's propositions reply (pydantic v2): sent as a strict
JSON schema where the provider takes one, and the item shape the reply is read against.

JSON mode forbids a top-level array, so the schema is the prompt's wrapper
(``{"propositions": [...]}``). A proposition's entity list is declared as strings but
read as any list (or one name given bare): the parser keeps its names one by one, so
a stray null or number costs that name, not the proposition.
"""

from __future__ import annotations

from typing import Annotated, Any

import pydantic
from pydantic.json_schema import WithJsonSchema

# How the list is named in notes and errors: the reply kind, then its key.
PROPOSITIONS_WHAT = "sirerag.propositions propositions"

_NAMES_SCHEMA = {"type": "array", "items": {"type": "string"}}


class PropositionItem(pydantic.BaseModel):
    """One proposition and the named entities it mentions."""

    proposition: str
    entities: Annotated[list[Any] | str | None, WithJsonSchema(_NAMES_SCHEMA)] = None


class PropositionsReply(pydantic.BaseModel):
    """The propositions reply, under the key JSON mode asks for."""

    propositions: list[PropositionItem]


# The paper's three-step extraction (``paper_prompts``): Figs. 7 and 8 reply with
# objects keyed n1, n2, ... and f1, f2, ...; each value is read against these shapes
# one by one, so one misfit costs that entity or fact, not the reply.
ENTITIES_WHAT = "sirerag.entities entities"
FACTS_WHAT = "sirerag.facts facts"


class EntityItem(pydantic.BaseModel):
    """One named entity of Fig. 7's reply; its type is asked for but not used."""

    name: str
    type: Any = None


class FactItem(pydantic.BaseModel):
    """One fact of Fig. 8's reply and its semantic triplets, read one by one."""

    fact: str
    triplets: Annotated[list[Any] | None, WithJsonSchema(
        {"type": "array", "items": {"type": "array", "items": {"type": "string"}}})] = None
