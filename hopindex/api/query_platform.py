"""What the service adds around every query method, whichever method answers: the
options every method takes (``rerank``), the query's reranker stage, and the rules of
a streamed query's events (passages first, then the answer's text, whatever the
method did on its own)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from hopindex.backends.protocols import Reranker
from hopindex.core.settings import Settings
from hopindex.methods.base import (
    AnswerListener,
    ParamValue,
    QueryOptions,
    QueryResult,
    RankedPassage,
)
from hopindex.methods.retrieval.rerank import (
    RERANK,
    RERANK_OPTION,
    RerankMode,
    RerankStage,
    rerank_mode_of,
)

# Options every query method takes, read by the service: a method never sees them.
PLATFORM_OPTIONS: Mapping[str, dict[str, Any]] = {RERANK: RERANK_OPTION}


def platform_options(settings: Settings | None = None) -> dict[str, dict[str, Any]]:
    """The platform's options as a server with ``settings`` takes them: without a
    reranker configured, ``rerank`` can only be ``off``."""
    if settings is None or settings.rerank_enabled:
        return dict(PLATFORM_OPTIONS)
    return {RERANK: {**RERANK_OPTION, "enum": [RerankMode.OFF.value],
                     "description": "off only: no reranker is configured on this server "
                                    "(HOPINDEX_RERANK_URL or HOPINDEX_RERANK_MODEL_PATH)"}}


def rerank_stage_for(settings: Settings, params: Mapping[str, ParamValue],
                     open_reranker: Callable[[], Reranker | None]) -> RerankStage | None:
    """The query's reranker stage, or None when it is not reranked (``rerank=off``, or
    no reranker configured). ``rerank=on`` without one is refused, naming the option."""
    if rerank_mode_of(params, configured=settings.rerank_enabled) is RerankMode.OFF:
        return None
    reranker = open_reranker()
    if reranker is None:  # configured, so opened: a settings reader would have refused
        return None
    return RerankStage(reranker, settings.rerank_top_n)


def method_options(options: QueryOptions) -> QueryOptions:
    """``options`` without the platform's options: what the method is given."""
    if not any(name in PLATFORM_OPTIONS for name in options.params):
        return options
    return replace(options, params={name: value for name, value in options.params.items()
                                    if name not in PLATFORM_OPTIONS})


class HeardQuery:
    """The listener a streamed query's method is given: it hands each event on, times
    the answer's first text, and at the end says what the method did not (passages it
    never announced, an answer it gave in one piece), so every method's stream has the
    same shape."""

    def __init__(self, listener: AnswerListener,
                 first_text: Callable[[float], None]) -> None:
        self._listener = listener
        self._first_text = first_text
        self._started = time.perf_counter()
        self._passages_told = False
        self._text_told = False
        self._lock = threading.Lock()

    @property
    def cancelled(self) -> threading.Event:
        return self._listener.cancelled

    def start(self) -> None:
        self._started = time.perf_counter()

    def put_passages(self, passages: Sequence[RankedPassage]) -> None:
        self._passages_told = True
        self._listener.put_passages(passages)

    def put_delta(self, text: str) -> None:
        if not text:
            return
        with self._lock:
            first, self._text_told = not self._text_told, True
        if first:
            self._first_text(time.perf_counter() - self._started)
        self._listener.put_delta(text)

    def finish(self, result: QueryResult) -> None:
        """What the stream still lacks of ``result``: its passages, and its answer when
        no text of it was streamed (a method that answers without an LLM call, or reads
        its answer out of a structured reply)."""
        if not self._passages_told:
            self.put_passages(result.passages)
        if not self._text_told and result.answer:
            self.put_delta(result.answer)
