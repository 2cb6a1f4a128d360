"""The batched tripartite judge (paper §4.4, Appendix A): one call scores the whole pool.

The request carries the prompt's inputs, already cut to ``passage_chars``, so it
can travel as a task message: with a broker it runs on the ``judge`` queue (the
query-time task ``bridgerag.judge``, ``judge_task``), without one in this process. Either way the
outcome says whether the scores can be used; when they cannot, the query ranks by
SVO similarity (condition A) and its trace says why:

- ``unparseable``: no valid JSON of the expected shape (a query makes no repair
  call; a reply that scores some candidates is used, the others score below every
  scored one);
- ``failed``: the provider kept failing (retries spent) or refused the request;
- ``unavailable``: no judge worker answered within ``HOPINDEX_BRIDGERAG_JUDGE_TIMEOUT_S``.
"""

from __future__ import annotations

import enum
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hopindex.backends.llm.chat import ChatRequest
from hopindex.backends.llm.query_policy import QueryDeadline
from hopindex.backends.llm.usage import UsageMeter
from hopindex.core.errors import (
    BackendError,
    ConfigError,
    HopindexError,
    InvalidInputError,
    LlmOutputError,
)
from hopindex.core.logging import get_logger
from hopindex.core.models import LlmUsage
from hopindex.methods.base import SearchContext
from hopindex.methods.bridgerag.parsing import judge_parser
from hopindex.methods.bridgerag.prompts import judge_request

if TYPE_CHECKING:
    # Annotations only: the runner imports the openai SDK, which loading the method
    # (every CLI command loads the registry) must not pay for.
    from hopindex.backends.llm.runner import LlmRunner

# The query-time task that scores a pool on a worker of the judge queue.
JUDGE_TASK = "bridgerag.judge"

log = get_logger(__name__)


class JudgeStatus(enum.StrEnum):
    SCORED = "scored"
    SKIPPED = "skipped"  # condition A asks no judge
    UNPARSEABLE = "unparseable"
    FAILED = "failed"
    UNAVAILABLE = "unavailable"


class JudgeSite(enum.StrEnum):
    """Where the judge call ran."""

    NONE = "none"
    IN_PROCESS = "in_process"
    WORKER = "worker"  # a task on the judge queue


@dataclass(frozen=True, slots=True)
class JudgeRequest:
    """The judge prompt's inputs; no bridges and no entities is condition B."""

    question: str
    bridges: tuple[str, ...]
    entities: tuple[str, ...]
    candidates: tuple[str, ...]

    def to_chat(self) -> ChatRequest:
        return judge_request(self.question, self.bridges, self.entities, self.candidates)

    def as_payload(self) -> dict[str, Any]:
        return {"question": self.question, "bridges": list(self.bridges),
                "entities": list(self.entities), "candidates": list(self.candidates)}

    @classmethod
    def from_payload(cls, payload: dict[str, Any]) -> JudgeRequest:
        question = payload.get("question")
        if not isinstance(question, str) or not question.strip():
            raise InvalidInputError("must be a non-empty string", where="judge.question")
        return cls(question=question, bridges=_strings(payload, "bridges"),
                   entities=_strings(payload, "entities"),
                   candidates=_strings(payload, "candidates", required=True))


@dataclass(frozen=True, slots=True)
class JudgeOutcome:
    status: JudgeStatus
    scores: tuple[float | None, ...] = ()
    usage: LlmUsage = field(default_factory=LlmUsage)
    error: str = ""

    @property
    def usable(self) -> bool:
        return self.status is JudgeStatus.SCORED

    def as_payload(self) -> dict[str, Any]:
        return {"status": self.status.value, "scores": list(self.scores),
                "usage": self.usage.as_dict(), "error": self.error}

    @classmethod
    def from_payload(cls, payload: dict[str, Any]) -> JudgeOutcome:
        try:
            status = JudgeStatus(payload["status"])
            scores = tuple(None if s is None else float(s) for s in payload.get("scores", []))
            usage = LlmUsage.from_dict(payload.get("usage") or {})
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidInputError(f"malformed judge result: {exc}",
                                    where="judge.result") from exc
        return cls(status=status, scores=scores, usage=usage, error=str(payload.get("error", "")))


def judge_in_process(llm: LlmRunner, request: JudgeRequest,
                     deadline: QueryDeadline | None = None) -> JudgeOutcome:
    """One call for the whole pool; a failure becomes an outcome, except a refused key.
    ``deadline``: the asking query's, when the judge runs in its process (its usage
    stays the judge's own, its time the query's)."""
    usage = UsageMeter(deadline=deadline)
    try:
        scores = llm.complete_json(request.to_chat(), judge_parser(len(request.candidates)),
                                   usage)
    except ConfigError:
        raise
    except LlmOutputError as exc:
        return JudgeOutcome(JudgeStatus.UNPARSEABLE, usage=usage.total(), error=str(exc))
    except HopindexError as exc:
        return JudgeOutcome(JudgeStatus.FAILED, usage=usage.total(),
                            error=f"{type(exc).__name__}: {exc}")
    if len(scores) != len(request.candidates):  # the parser's contract; guards the zip later
        raise ValueError("judge scores must cover every candidate")
    return JudgeOutcome(JudgeStatus.SCORED, scores=scores, usage=usage.total())


def judge_task(llm: LlmRunner | None, payload: dict[str, Any]) -> dict[str, Any]:
    """The judge on a worker: its inputs come in the payload, not as ids, because they
    exist nowhere else (the question, the entities the model named a moment ago) and are
    bounded (at most 20 candidates cut to ``passage_chars``). Every failure comes back
    as an outcome the waiting query falls back from; a query has its own deadline, so
    nothing is retried."""
    started = time.perf_counter()
    request = JudgeRequest.from_payload(payload)
    if llm is None:
        outcome = JudgeOutcome(JudgeStatus.FAILED,
                               error="no LLM is configured on this judge worker: set "
                                     "HOPINDEX_LLM_MODEL (and HOPINDEX_LLM_BASE_URL)")
    else:
        try:
            outcome = judge_in_process(llm, request)
        except ConfigError as exc:  # a refused key: the query must hear why
            outcome = JudgeOutcome(JudgeStatus.FAILED, error=f"{type(exc).__name__}: {exc}")
    log.info("judge_finished", candidates=len(request.candidates), status=outcome.status.value,
             llm_calls=outcome.usage.calls, duration_s=round(time.perf_counter() - started, 3))
    return outcome.as_payload()


def run_judge(context: SearchContext, request: JudgeRequest,
              timeout_s: float) -> tuple[JudgeOutcome, JudgeSite]:
    """On the judge queue when the context sends tasks to workers, else in-process."""
    if context.tasks is None:
        return judge_in_process(context.require_llm("bridgerag"), request), JudgeSite.IN_PROCESS
    try:
        reply = context.tasks.run_task(JUDGE_TASK, request.as_payload(), timeout_s)
        outcome = JudgeOutcome.from_payload(reply)
    except (BackendError, InvalidInputError) as exc:
        return (JudgeOutcome(JudgeStatus.UNAVAILABLE, error=f"{type(exc).__name__}: {exc}"),
                JudgeSite.WORKER)
    if outcome.usable and len(outcome.scores) != len(request.candidates):
        return (JudgeOutcome(JudgeStatus.UNPARSEABLE, usage=outcome.usage,
                             error="the judge worker scored a different number of candidates"),
                JudgeSite.WORKER)
    return outcome, JudgeSite.WORKER


def _strings(payload: dict[str, Any], name: str, *, required: bool = False) -> tuple[str, ...]:
    value = payload.get(name, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InvalidInputError("must be a list of strings", where=f"judge.{name}")
    if required and not value:
        raise InvalidInputError("must not be empty", where=f"judge.{name}")
    return tuple(value)
