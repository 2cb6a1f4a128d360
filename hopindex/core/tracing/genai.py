"""An LLM request's span, with OpenTelemetry's generative-AI attributes (``gen_ai.*``)
that LLM observability tools read, and hopindex's own beside them.

One span per request sent to the provider (each retry is a span of its own, its
``hopindex.llm.attempt`` counting from 1), named as the conventions name a chat call
(``chat {model}``); a reply the response cache answered is one span too, with
``hopindex.llm.cache_hit`` true and no request.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from hopindex.core.tracing.provider import tracer
from hopindex.core.tracing.spans import NO_SPAN, SpanLike, set_error, without_nones

# The semantic conventions' names (gen-ai spans). gen_ai.system is the older name of
# gen_ai.provider.name; both are set, for tools that read either.
OPERATION = "gen_ai.operation.name"
SYSTEM = "gen_ai.system"
PROVIDER = "gen_ai.provider.name"
REQUEST_MODEL = "gen_ai.request.model"
RESPONSE_MODEL = "gen_ai.response.model"
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
FINISH_REASONS = "gen_ai.response.finish_reasons"
REQUEST_MAX_TOKENS = "gen_ai.request.max_tokens"
REQUEST_TEMPERATURE = "gen_ai.request.temperature"
SERVER_ADDRESS = "server.address"
# hopindex's own.
STAGE = "hopindex.stage"
CACHE_HIT = "hopindex.llm.cache_hit"
ATTEMPT = "hopindex.llm.attempt"
WAITED_S = "hopindex.llm.rate_limit_wait_s"
BUDGET_HELD_TOKENS = "hopindex.llm.budget_held_tokens"
BUDGET_HELD_COST = "hopindex.llm.budget_held_cost"
OUTPUT_MODE = "hopindex.llm.output_mode"
# An OpenAI-compatible endpoint: which provider is behind it is not known here.
SYSTEM_VALUE = "openai"


@contextlib.contextmanager
def llm_span(stage: str, model: str, *, server: str | None = None,
             attributes: dict[str, Any] | None = None) -> Iterator[SpanLike]:
    """One chat request's span (or a cache hit's), current inside the block."""
    active = tracer()
    if active is None:
        yield NO_SPAN
        return
    from opentelemetry.trace import SpanKind

    with active.start_as_current_span(
            f"chat {model}", kind=SpanKind.CLIENT,
            attributes={OPERATION: "chat", SYSTEM: SYSTEM_VALUE, PROVIDER: SYSTEM_VALUE,
                        REQUEST_MODEL: model, STAGE: stage,
                        **({SERVER_ADDRESS: server} if server else {}),
                        **(without_nones(attributes) or {})},
    ) as span:
        yield span


def record_reply(span: SpanLike, *, response_model: str | None, input_tokens: int,
                 output_tokens: int, finish_reason: str | None) -> None:
    """What the provider answered: its model, tokens and why it stopped."""
    if not span.is_recording():
        return
    if response_model:
        span.set_attribute(RESPONSE_MODEL, response_model)
    span.set_attribute(INPUT_TOKENS, input_tokens)
    span.set_attribute(OUTPUT_TOKENS, output_tokens)
    if finish_reason:
        span.set_attribute(FINISH_REASONS, [finish_reason])


def record_failure(span: SpanLike, error: BaseException | str) -> None:
    """A request that failed (retried or not): ``error.type``, the exception's class."""
    set_error(span, error if isinstance(error, str) else type(error).__name__)


def set_budget(span: SpanLike, tokens: int | None, cost: float | None) -> None:
    """What the job's budget held for the request (None: the job has no budget)."""
    if tokens is not None and span.is_recording():
        span.set_attribute(BUDGET_HELD_TOKENS, tokens)
        if cost is not None:
            span.set_attribute(BUDGET_HELD_COST, cost)
