"""A query's LLM steps, degraded instead of failed.

A user waits for a query, and the retrieval it already holds is an answer of its own:
so an LLM step that fails (no reply within the query's deadline, an outage, a reply
that cannot be used, a request the provider refused) is noted as a ``Degradation``
and the method goes on without it, returning its passages with ``answer`` None when
the answer step is the one lost. A refused key or a missing setting is not among
these: the operator must hear of it, so it stays an error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from hopindex.core.errors import LLM_CALL_FAILURES
from hopindex.methods.base import Degradation

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


def reasoning_step(number: int) -> str:
    """The name of an iterative method's ``number``-th reasoning call (1-based)."""
    return f"reasoning step {number}"
