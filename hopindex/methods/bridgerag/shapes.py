"""The declared shapes of BridgeRAG's JSON replies (pydantic v2): sent as a strict JSON
schema where the provider takes one, and the items the replies are read against.

The judge's reply keys each candidate's score by its number (``{"scores": {"1": 7}}``),
so its shape depends on the pool's size: one model per size, built once
(``judge_shape``), whose schema lists every number as a required key.
"""

from __future__ import annotations

from functools import lru_cache

import pydantic

from hopindex.backends.llm.reply_shapes import Score

QUERIES_WHAT = "bridgerag queries"
ENTITIES_WHAT = "bridgerag entities"
SCORES_WHAT = "judge scores"





class QueryText(pydantic.RootModel[str]):
    """A retrieval query in Subject-Verb-Object form."""


class ScoreValue(pydantic.RootModel[Score]):
    """A candidate's score from 0 to 10."""


class SvoReply(pydantic.BaseModel):
    """Targeted retrieval queries."""

    queries: list[str]


class ExtractReply(pydantic.BaseModel):
    """Targeted retrieval queries and the two answer-side entities."""

    queries: list[str]
    entities: list[str]


@lru_cache(maxsize=64)
def judge_shape(count: int) -> type[pydantic.BaseModel]:
    """The judge's reply over candidates ``1..count``: a score for every number."""
    scores = pydantic.create_model(  # type: ignore[call-overload]
        f"JudgeScores{count}", __doc__="A score from 0 to 10 per candidate number.",
        **{f"c{n}": (float, pydantic.Field(alias=str(n))) for n in range(1, count + 1)})
    model: type[pydantic.BaseModel] = pydantic.create_model(
        f"JudgeReply{count}", __doc__="The candidates' scores.", scores=(scores, ...))
    return model
