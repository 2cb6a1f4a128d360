"""The declared shapes of the partitioned-KG JSON replies (pydantic v2): sent as a
strict JSON schema where the provider takes one, and the shapes items are read against.

What is read beyond the schema is marked ``SkipJsonSchema`` (a null or missing type or
description, one name for a list, a numeric document id), so the schema stays the
prompt's. The entity-summaries reply maps names the prompt gives to summaries: a strict
schema cannot declare a map of free keys (it would close the object to no key at all),
so that request sends none and is read against ``SummariesReply`` alone.
"""

from __future__ import annotations

from typing import Annotated, Any

import pydantic
from pydantic.json_schema import SkipJsonSchema, WithJsonSchema

from hopindex.backends.llm.reply_shapes import Score

# How each list is named in notes and errors: the reply kind, then its key.
ENTITIES_WHAT = "kgbridge.extract entities"
RELATIONS_WHAT = "kgbridge.extract relations"
PRIMARY_WHAT = "kgbridge.plan primary"
AUXILIARY_WHAT = "kgbridge.plan auxiliary"

_NAMES_SCHEMA = {"type": "array", "items": {"type": "string"}}
# Document ids are text; some models write a numeric id as a JSON number.
_DocId = Annotated[str, pydantic.Field(coerce_numbers_to_str=True)]





class EntityItem(pydantic.BaseModel):
    """A named entity of the passage."""

    name: str
    type: str | SkipJsonSchema[None] = None
    description: str | SkipJsonSchema[None] = None


class RelationItem(pydantic.BaseModel):
    """A relation the passage states between two listed entities."""

    source: str
    relation: str
    target: str


class ExtractionReply(pydantic.BaseModel):
    """The passage's knowledge graph."""

    entities: list[EntityItem]
    relations: list[RelationItem]


class SummariesReply(pydantic.BaseModel):
    """A summary for each entity, by its name (read only; see the module's note)."""

    summaries: dict[str, Any]


class VerdictReply(pydantic.BaseModel):
    """Whether two same-name entities are one, scored 0 (different) to 10 (the same)."""

    same: bool
    score: Score
    reason: str | SkipJsonSchema[None] = None


class DocIdItem(pydantic.RootModel[_DocId]):
    """A document id."""


class AuxiliaryItem(pydantic.BaseModel):
    """A document of which only the named entities are needed."""

    doc_id: _DocId
    entities: Annotated[list[Any] | str | None, WithJsonSchema(_NAMES_SCHEMA)] = None


class PlanShape(pydantic.BaseModel):
    """The plan: primary documents, auxiliary ones with their entities, and why."""

    primary: Annotated[list[Any] | _DocId | None, WithJsonSchema(_NAMES_SCHEMA)]
    auxiliary: list[AuxiliaryItem] | SkipJsonSchema[None] = None
    reason: str | SkipJsonSchema[None] = None


class SufficiencyReply(pydantic.BaseModel):
    """Whether the context answers the question, what it establishes, what is missing."""

    sufficient: bool
    findings: str | SkipJsonSchema[None] = None
    sub_question: str | SkipJsonSchema[None] = None
