"""A query's LLM steps, degraded instead of failed.

A user waits for a query, and the retrieval it already holds is an answer of its own:
so an LLM step that fails (no reply within the query's deadline, an outage, a reply
that cannot be used, a request the provider refused) is noted as a ``Degradation``
and the method goes on without it, returning its passages with ``answer`` None when
the answer step is the one lost. A refused key or a missing setting is not among
these: the operator must hear of it, so it stays an error.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

from hopindex.core.errors import LLM_CALL_FAILURES
from hopindex.methods.base import Degradation, RankedPassage, SearchContext

if TYPE_CHECKING:
    from hopindex.backends.llm.chat import ChatRequest, ChatResult
    from hopindex.backends.llm.runner import LlmRunner
    from hopindex.backends.llm.usage import UsageMeter

T = TypeVar("T")


ANSWER_STEP = "answer"


def llm_step(degraded: list[Degradation], step: str, call: Callable[[], T]) -> T | None:
    """``call()``'s value, or None with ``step`` and the failure's message appended to
    ``degraded`` when the LLM failed."""
    try:
        return call()
    except LLM_CALL_FAILURES as exc:
        degraded.append(Degradation(step=step, reason=str(exc)))
        return None


def answer_step(context: SearchContext, degraded: list[Degradation], llm: LlmRunner,
                request: ChatRequest, usage: UsageMeter, *,
                passages: Sequence[RankedPassage]) -> ChatResult | None:
    """The answer call, degraded as ``llm_step``. A streamed query (``context.listener``)
    hears ``passages`` first, then the answer's text as the model writes it; the whole
    reply is returned either way, for the method to finish its result as usual."""
    listener = context.listener
    if listener is None:
        return llm_step(degraded, ANSWER_STEP, lambda: llm.complete(request, usage))
    announce_passages(context, passages)
    return llm_step(degraded, ANSWER_STEP, lambda: llm.stream(
        request, usage, listener.put_delta, cancelled=listener.cancelled))


def announce_passages(context: SearchContext, passages: Sequence[RankedPassage]) -> None:
    """Tell a streamed query its passages before an answer call that is not streamed
    (a reply whose answer is read out of JSON: its text is no answer until parsed)."""
    if context.listener is not None:
        context.listener.put_passages(passages)


def reasoning_step(number: int) -> str:
    """The name of an iterative method's ``number``-th reasoning call (1-based)."""
    return f"reasoning step {number}"
