"""The LLM client's observer that records Prometheus metrics.

``backends/registry.py`` hands it to every ``LlmClient`` when metrics are on. The
client reports each cache lookup (and each failed cache read or write), each
rate-limiter admission and each request, so ``hopindex_llm_requests_total{outcome="ok"}``
and the token and cost counters add up to the calls, tokens and cost a job record or
a query response reports.
"""

from __future__ import annotations

from hopindex.backends.llm.observer import CacheOperation, LlmOutcome, ReplyFix
from hopindex.core.tracing.spans import trace_exemplar
from hopindex.monitoring import metrics as m
from hopindex.monitoring.labels import CacheResult, TokenKind


class PrometheusLlmObserver:
    def observe_cache(self, stage: str, *, hit: bool) -> None:
        result = CacheResult.HIT if hit else CacheResult.MISS
        m.LLM_CACHE_REQUESTS.labels(stage=stage, result=result.value).inc()

    def observe_cache_error(self, stage: str, operation: CacheOperation) -> None:
        m.LLM_CACHE_ERRORS.labels(stage=stage, operation=operation.value).inc()

    def observe_wait(self, stage: str, model: str, waited_s: float) -> None:
        m.RATELIMIT_WAIT.labels(stage=stage, model=model).observe(waited_s)

    def observe_request(self, stage: str, model: str, outcome: LlmOutcome, duration_s: float,
                        *, prompt_tokens: int = 0, completion_tokens: int = 0,
                        cost: float | None = None) -> None:
        m.LLM_REQUESTS.labels(stage=stage, model=model, outcome=outcome.value).inc()
        m.LLM_REQUEST_DURATION.labels(stage=stage, model=model).observe(
            duration_s, exemplar=trace_exemplar())
        if prompt_tokens:
            m.LLM_TOKENS.labels(stage=stage, model=model,
                                kind=TokenKind.PROMPT.value).inc(prompt_tokens)
        if completion_tokens:
            m.LLM_TOKENS.labels(stage=stage, model=model,
                                kind=TokenKind.COMPLETION.value).inc(completion_tokens)
        if cost:  # unpriced calls leave the counter alone: no series, not a false zero
            m.LLM_COST.labels(stage=stage, model=model).inc(cost)

    def observe_reply_fix(self, stage: str, model: str, fix: ReplyFix, count: int = 1) -> None:
        m.LLM_REPLY_FIXES.labels(stage=stage, model=model, fix=fix.value).inc(count)


class PrometheusEmbeddingObserver:
    """Embedding figures in the LLM families, under ``stage="embed"`` and the embedding
    model: tokens as ``kind="prompt"`` (an embedding request's tokens are its input),
    cost when priced. Not counted as LLM requests, which add up to the chat calls a
    job record reports."""

    def observe_embeddings(self, stage: str, model: str, *, requests: int, tokens: int,
                           cost: float | None) -> None:
        if tokens:
            m.LLM_TOKENS.labels(stage=stage, model=model,
                                kind=TokenKind.PROMPT.value).inc(tokens)
        if cost:  # unpriced embeddings leave the counter alone, as unpriced calls do
            m.LLM_COST.labels(stage=stage, model=model).inc(cost)
