"""The ``/rerank`` wire shapes: what is sent, and how the scores are read back.

``cohere`` (Cohere v1/v2, Jina, vLLM)::

    POST {"model", "query", "documents": [str], "top_n", "return_documents": false}
    200  {"results": [{"index": i, "relevance_score": s}, ...], "meta"/"usage": ...}

``tei`` (Hugging Face text-embeddings-inference)::

    POST {"query", "texts": [str], "raw_scores": false}
    200  [{"index": i, "score": s}, ...]

Replies are read leniently, whichever wire asked: a ``results`` object or a bare list,
each entry's score under ``relevance_score`` or ``score``, in any order (services sort
by score). What cannot be trusted is refused, naming it: an entry without a usable
index or a numeric score, an index out of range or given twice, a text left without
a score.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from hopindex.core.settings import RerankApi

# How much of an error body a message quotes.
_QUOTED_CHARS = 300
_SCORE_FIELDS = ("relevance_score", "score")


class UnreadableScoresError(Exception):
    """A reply whose scores cannot be read; the message says what was wrong."""


def request_body(api: RerankApi, model: str, query: str, texts: Sequence[str]) -> dict[str, Any]:
    if api is RerankApi.TEI:
        # TEI serves the one model it was started with: no model field. raw_scores off:
        # the scores normalised as the model's activation gives them.
        return {"query": query, "texts": list(texts), "raw_scores": False}
    # top_n: every text, so every one comes back with its score.
    return {"model": model, "query": query, "documents": list(texts), "top_n": len(texts),
            "return_documents": False}


def _entries(payload: object) -> list[object]:
    if isinstance(payload, dict):
        for name in ("results", "data"):
            if isinstance(payload.get(name), list):
                return list(payload[name])
        raise UnreadableScoresError(f"the reply has no results list (keys: "
                               f"{', '.join(sorted(map(str, payload))) or 'none'})")
    if isinstance(payload, list):
        return payload
    raise UnreadableScoresError(f"the reply is a JSON {type(payload).__name__}, not results")


def _score(entry: dict[str, Any], position: int) -> float:
    for name in _SCORE_FIELDS:
        if name in entry:
            value = entry[name]
            if (isinstance(value, bool) or not isinstance(value, int | float)
                    or not math.isfinite(value)):
                raise UnreadableScoresError(f"result {position} has a non-numeric {name}: "
                                       f"{value!r}")
            return float(value)
    raise UnreadableScoresError(f"result {position} has no relevance_score or score")


def read_scores(payload: object, count: int) -> list[float]:
    """One score per text, in the order the texts were sent."""
    scores: list[float | None] = [None] * count
    for position, entry in enumerate(_entries(payload)):
        if not isinstance(entry, dict):
            shown = repr(entry)[:_QUOTED_CHARS]
            raise UnreadableScoresError(f"result {position} is not an object: {shown}")
        index = entry.get("index")
        if isinstance(index, bool) or not isinstance(index, int):
            raise UnreadableScoresError(f"result {position} has no integer index: {index!r}")
        if not 0 <= index < count:
            raise UnreadableScoresError(f"result {position} has index {index}, out of range for "
                                   f"{count} texts")
        if scores[index] is not None:
            raise UnreadableScoresError(f"index {index} is scored twice")
        scores[index] = _score(entry, position)
    missing = [i for i, score in enumerate(scores) if score is None]
    if missing:
        shown = ", ".join(map(str, missing[:10])) + (", ..." if len(missing) > 10 else "")
        raise UnreadableScoresError(f"no score for {len(missing)} of {count} texts (index {shown})")
    return [score for score in scores if score is not None]


def error_message(payload: object, text: str) -> str:
    """The provider's own words in an error reply: Cohere's ``message``, OpenAI's and
    vLLM's ``error.message``, TEI's ``error``, Jina's ``detail``; else the body's start."""
    if isinstance(payload, dict):
        error = payload.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])[:_QUOTED_CHARS]
        for name in ("message", "error", "detail"):
            value = payload.get(name)
            if isinstance(value, str) and value:
                return value[:_QUOTED_CHARS]
            if name == "detail" and value:  # FastAPI's validation errors: a list
                return str(value)[:_QUOTED_CHARS]
    return text.strip()[:_QUOTED_CHARS] or "(empty body)"
