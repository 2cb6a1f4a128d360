"""The test server's ``/rerank`` (and ``/v1/rerank``): the de-facto rerank API, scored
deterministically.

Both wire shapes are answered, told apart by the request: ``documents`` (Cohere, Jina,
vLLM) gets ``{"id", "results": [{"index", "relevance_score"}...], "meta"}``, sorted by
score and cut to ``top_n``; ``texts`` (Hugging Face TEI) gets a bare list of
``{"index", "score"}`` sorted by score. A malformed request is a 400 in the shape its
wire's service answers with (Cohere's ``message``, TEI's ``error``).

Relevance is the lexical overlap of the query's and the text's lowercased word tokens,
as sets: ``|q ∩ t| / sqrt(|q| * |t|)`` (the cosine of their indicator vectors), in
[0, 1], 0 when either has no word. A text sharing more of the query's words ranks
higher, so a test can predict the order without a model.

The rest is the chat endpoint's (``llm_api``): the API-key check (401), the
per-minute limits and seeded faults (429 + Retry-After, 500, a hang past the client's
timeout, latency), and an ``invalid_json`` fault sends the body cut in half. Every
outcome is counted under ``Endpoint.RERANK``.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from hopindex.testing.llm_limits import Endpoint, Fault, Outcome, ServerCounters
from hopindex.testing.llm_responses import estimate_tokens

Authorise = Callable[[web.Request, Endpoint], "web.Response | None"]
Admit = Callable[[Endpoint, int], Awaitable[tuple[Fault, "web.Response | None"]]]

_WORD = re.compile(r"\w+")


def word_set(text: str) -> frozenset[str]:
    return frozenset(_WORD.findall(text.lower()))


def relevance(query: str, text: str) -> float:
    """The overlap of the two texts' word sets, in [0, 1] (module docstring)."""
    query_words, text_words = word_set(query), word_set(text)
    if not query_words or not text_words:
        return 0.0
    return len(query_words & text_words) / math.sqrt(len(query_words) * len(text_words))


class _RefusalError(Exception):
    """A malformed request: a 400 in its wire's error shape."""


def _text_list(value: object, field: str) -> list[str]:
    """Strings, or Cohere v1's ``{"text": ...}`` objects; at least one."""
    if not isinstance(value, list) or not value:
        raise _RefusalError(f"{field} must be a non-empty list of strings")
    texts: list[str] = []
    for item in value:
        text = item.get("text") if isinstance(item, dict) else item
        if not isinstance(text, str):
            raise _RefusalError(f"{field} must be a non-empty list of strings")
        texts.append(text)
    return texts


def _top_n(value: object, count: int) -> int:
    if value is None:
        return count
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise _RefusalError("top_n must be a positive integer")
    return min(value, count)


class RerankTestApi:
    """The rerank handler over the server's shared pieces: the key check and admission
    (``OpenAiTestApi._unauthorised`` and ``_admit``) and its counters."""

    def __init__(self, counters: ServerCounters, authorise: Authorise, admit: Admit) -> None:
        self._counters = counters
        self._authorise = authorise
        self._admit = admit
        self._ids = itertools.count(1)

    async def rerank(self, request: web.Request) -> web.Response:
        endpoint = Endpoint.RERANK
        if (denied := self._authorise(request, endpoint)) is not None:
            return denied
        try:
            body = await request.json()
        except ValueError:
            body = None
        tei = isinstance(body, dict) and "texts" in body
        try:
            query, texts, top_n, with_text = self._read(body)
        except _RefusalError as exc:
            self._counters.record(endpoint, Outcome.BAD_REQUEST)
            error = ({"error": str(exc), "error_type": "Validation"} if tei
                     else {"message": str(exc)})
            return web.json_response(error, status=400)
        fault, rejected = await self._admit(
            endpoint, estimate_tokens(query) + sum(estimate_tokens(t) for t in texts))
        if rejected is not None:
            return rejected
        scores = [relevance(query, text) for text in texts]
        order = sorted(range(len(texts)), key=lambda i: (-scores[i], i))
        payload: Any
        if tei:
            payload = [{"index": i, "score": scores[i], **({"text": texts[i]} if with_text
                                                           else {})} for i in order]
        else:
            payload = {"id": f"rerank-hopindex-{next(self._ids):010d}",
                       "results": [{"index": i, "relevance_score": scores[i],
                                    **({"document": {"text": texts[i]}} if with_text else {})}
                                   for i in order[:top_n]],
                       "meta": {"api_version": {"version": "2"},
                                "billed_units": {"search_units": 1}}}
        text = json.dumps(payload)
        if fault is Fault.INVALID_JSON:
            self._counters.record(endpoint, Outcome.INVALID_JSON)
            text = text[:len(text) // 2]
        else:
            self._counters.record(endpoint, Outcome.OK)
        return web.Response(text=text, content_type="application/json")

    @staticmethod
    def _read(body: object) -> tuple[str, list[str], int, bool]:
        """Query, texts, how many results to send, and whether with their texts."""
        if not isinstance(body, dict):
            raise _RefusalError("request body must be a JSON object")
        query = body.get("query")
        if not isinstance(query, str) or not query.strip():
            raise _RefusalError("query must be a non-empty string")
        if "texts" in body:
            texts = _text_list(body["texts"], "texts")
            return query, texts, len(texts), bool(body.get("return_text"))
        if "documents" not in body:
            raise _RefusalError("send documents (Cohere, Jina, vLLM) or texts (TEI)")
        texts = _text_list(body["documents"], "documents")
        return (query, texts, _top_n(body.get("top_n"), len(texts)),
                bool(body.get("return_documents")))
