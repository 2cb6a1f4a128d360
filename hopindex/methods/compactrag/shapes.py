"""The declared shapes of CompactRAG's JSON replies (pydantic v2): sent as a strict JSON
schema where the provider takes one, and, for the QA pairs, the item shape the reply
is read against.

The schemas are the prompts' own: JSON mode forbids a top-level array, so each list is
wrapped under the key the prompt names for that case (``qa``, ``sub_questions``).
What is read beyond the schema is marked ``SkipJsonSchema``: a null question or answer
(a blank, dropped by the rules and counted, not a misfit).
"""

from __future__ import annotations

from typing import Annotated

import pydantic
from pydantic.json_schema import SkipJsonSchema

# How the QA list is named in notes and errors: the reply kind, then its key.
QA_WHAT = "compactrag.qa qa"


# Class docstrings are sent to the model as the schema's descriptions: they say what
# each thing is; why it is read as it is goes in comments.


class QaItem(pydantic.BaseModel):
    """A short question and its answer, an exact span of the passage."""

    # An answer given as a number ("How many ...?" → 3) is read as text, counted as
    # coerced; a question must be text.
    question: str | SkipJsonSchema[None]
    answer: Annotated[str, pydantic.Field(coerce_numbers_to_str=True)] | SkipJsonSchema[None]


class QaReply(pydantic.BaseModel):
    """Question-answer pairs of the passage."""

    qa: list[QaItem]


class SubQuestionItem(pydantic.BaseModel):
    """A sub-question: its index from 1, its text, the earlier index it depends on."""

    index: int
    q: str
    ref: int | None


class DecompositionReply(pydantic.BaseModel):
    """The question's sub-questions in order."""

    # Read from text by ``parse_decomposition``, which forgives far more than this.

    sub_questions: list[SubQuestionItem]


class SynthesisReply(pydantic.BaseModel):
    """The reasoning, then the final concise answer."""

    thought: str
    answer: str
