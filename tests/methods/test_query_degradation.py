"""Query methods degrade on LLM failures instead of failing: which errors degrade a step
and which stay errors, the ``degraded`` list in a result's answer and trace, the CLI's
note, a method that goes on after a failed step, and an answer cut at its budget.

The methods run with a scripted LLM runner (each call's reply or error given in order)
over the bridgerag test module's small IndexRAG index; the end-to-end runs against an
LLM that never answers are in tests/api/test_query_degraded.py.
"""

from __future__ import annotations

from typing import Any, cast

import pytest

from hopindex.api.render import degraded_note
from hopindex.backends.llm.client import ChatRequest, ChatResult
from hopindex.backends.llm.runner import LlmRunner
from hopindex.backends.llm.usage import UsageMeter
from hopindex.core.errors import (
    ConfigError,
    LlmAuthenticationError,
    LlmOutputError,
    LlmUnavailableError,
    PermanentStageError,
    ReplyShapeError,
)
from hopindex.methods.base import Degradation, QueryOptions, QueryResult, degraded_lines
from hopindex.methods.ircot import IrcotMethod
from hopindex.methods.llm_steps import llm_step
from hopindex.methods.registry import create_query
from tests.methods.bridgerag.conftest import FACTS, Env, env  # noqa: F401  # the fixture

QUESTION = "Where was the wife of Pierre Curie born?"
LATE = "answer: the query's LLM deadline of 2s passed"


class ScriptedLlm:
    """Stands for an ``LlmRunner``: each ``complete`` call takes the next scripted reply,
    or raises the next scripted error; the stages asked are kept in order."""

    def __init__(self, *script: ChatResult | Exception) -> None:
        self.script = list(script)
        self.stages: list[str] = []

    def complete(self, request: ChatRequest, usage: UsageMeter) -> ChatResult:
        assert usage.deadline is not None, "a query's calls carry its deadline"
        self.stages.append(request.stage)
        step = self.script.pop(0)
        if isinstance(step, Exception):
            raise step
        return step


def reply(content: str, finish_reason: str = "stop") -> ChatResult:
    return ChatResult(content=content, prompt_tokens=10, completion_tokens=5, cached=False,
                      finish_reason=finish_reason)


def run(env: Env, method: str, llm: ScriptedLlm) -> QueryResult:  # noqa: F811
    context = env.context(llm=cast(LlmRunner, llm))
    return create_query(method, context).run_query(FACTS, QUESTION, QueryOptions(k=3))


@pytest.mark.parametrize("error", [
    LlmUnavailableError(LATE), LlmOutputError("plan: unusable reply"),
    ReplyShapeError("judge: the reply holds no JSON object"),
    PermanentStageError("answer: the LLM provider rejected the request (400)")])
def test_llm_failures_degrade_the_step(error: Exception) -> None:
    """An unavailable LLM, an unusable reply and a refused request each become a
    degradation naming the step and carrying the error's message."""
    degraded: list[Degradation] = []

    def fail() -> str:
        raise error

    assert llm_step(degraded, "answer", fail) is None
    assert degraded == [Degradation(step="answer", reason=str(error))]


@pytest.mark.parametrize("error", [LlmAuthenticationError("the provider refused the key"),
                                   ConfigError("no LLM configured")])
def test_configuration_errors_are_not_degradations(error: Exception) -> None:
    """A refused key or a missing setting is the operator's to fix: it still raises."""
    degraded: list[Degradation] = []

    def fail() -> str:
        raise error

    with pytest.raises(type(error)):
        llm_step(degraded, "answer", fail)
    assert degraded == []


def test_a_result_carries_degraded_in_its_answer_and_its_trace() -> None:
    """``degraded`` is always in the answer (empty when nothing degraded) and the trace
    holds the same list, as ``degrade`` adds to it; a cut answer is flagged in both."""
    result = QueryResult(question="q", method="m", index="i", passages=[],
                         trace={"pool": 3})
    assert result.as_dict()["degraded"] == [] and result.trace["degraded"] == []
    assert result.as_dict()["answer_truncated"] is False
    result.degrade("answer", LATE)
    result.answer_truncated = True
    data = result.as_dict()
    assert data["degraded"] == [{"step": "answer", "reason": LATE}]
    assert data["trace"] == {"pool": 3, "degraded": data["degraded"], "answer_truncated": True}
    assert result.trace["degraded"] == data["degraded"]
    assert degraded_lines(data["trace"]) == [f"degraded at answer: {LATE}"]


def test_the_cli_note_names_the_first_step_that_degraded() -> None:
    """One line: the answer unavailable and why (the first step, the cause of the rest),
    or the step a retrieval degraded at, or a cut answer; none for a clean result."""
    clean = QueryResult(question="q", method="m", index="i", passages=[], answer="Warsaw")
    assert degraded_note(clean) is None
    lost = QueryResult(question="q", method="m", index="i", passages=[])
    lost.degrade("decompose", "decompose: the query's LLM deadline of 2s passed")
    lost.degrade("answer", "answer: not called, an earlier LLM step of this query failed")
    assert degraded_note(lost) == ("note: answer unavailable (decompose: the query's LLM "
                                   "deadline of 2s passed; 1 more step degraded); showing "
                                   "retrieved passages")
    walk = QueryResult(question="q", method="m", index="i", passages=[])
    walk.degrade("walk", "no bridge units next to the seed documents")
    assert degraded_note(walk) == "note: degraded (walk: no bridge units next to the seed " \
                                  "documents)"
    cut = QueryResult(question="q", method="m", index="i", passages=[], answer="Wars",
                      answer_truncated=True)
    assert degraded_note(cut) == "note: the answer was cut at its token budget"


def test_a_failed_answer_call_keeps_the_passages(env: Env) -> None:  # noqa: F811
    """indexrag: the answer call fails, the passages are those of the same retrieval,
    the answer is None and the step named."""
    answered = run(env, "indexrag", ScriptedLlm(reply("Warsaw")))
    lost = run(env, "indexrag", ScriptedLlm(LlmUnavailableError(LATE)))
    assert lost.answer is None and lost.degraded == [Degradation("answer", LATE)]
    assert lost.passages and lost.passages == answered.passages
    assert answered.degraded == []


def test_a_refused_key_still_fails_the_query(env: Env) -> None:  # noqa: F811
    """A refused API key is an error, not a degraded answer."""
    with pytest.raises(LlmAuthenticationError):
        run(env, "indexrag", ScriptedLlm(LlmAuthenticationError("key refused")))


def test_an_answer_cut_at_its_budget_is_kept_and_flagged(env: Env) -> None:  # noqa: F811
    """A reply with finish_reason length is the answer all the same, marked truncated in
    the answer and the trace; it is not a degradation."""
    result = run(env, "indexrag", ScriptedLlm(reply("Warsaw, the capital of", "length")))
    data: dict[str, Any] = result.as_dict()
    assert data["answer"] == "Warsaw, the capital of" and data["answer_truncated"] is True
    assert data["trace"]["answer_truncated"] is True and data["degraded"] == []


def test_ircot_goes_on_with_its_retrieval_after_a_failed_step(env: Env) -> None:  # noqa: F811
    """IRCoT: reasoning step 2 fails; the loop ends with what it gathered, the answer
    call still runs over it, and only that step is named."""
    llm = ScriptedLlm(reply("Marie Curie married Pierre Curie in 1895."),
                      ReplyShapeError("reason: unusable reply"), reply("Warsaw"))
    result = run(env, IrcotMethod.name, llm)
    assert llm.stages == ["reason", "reason", "answer"]
    assert result.answer == "Warsaw" and result.passages
    assert result.degraded == [Degradation("reasoning step 2", "reason: unusable reply")]
    assert result.trace["steps"] == ["Marie Curie married Pierre Curie in 1895."]
