"""The client against a server that answers as real providers do: the output mode steps
down on a refusal and is remembered, a reply cut at its budget is asked again with a
larger one, a text answer loses its reasoning block and keeps its cut, and every second
request is counted as a call and as a repair."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pydantic
import pytest

from hopindex.backends.llm.chat import ChatRequest, LlmSettings
from hopindex.backends.llm.client import LlmClient
from hopindex.backends.llm.output_modes import OutputMode, ProcessOutputModes
from hopindex.backends.llm.ratelimit import InProcessRateLimiter, RateLimits
from hopindex.backends.llm.usage import UsageMeter
from hopindex.core.errors import ReplyShapeError
from hopindex.core.settings import LlmOutputMode
from hopindex.testing.llm_limits import Endpoint, Outcome
from hopindex.testing.llm_server import LlmServerConfig, LlmTestServer, running_llm_server
from hopindex.testing.reply_styles import ReplyStyle

STAGE1 = ChatRequest(stage="stage1", messages=(
    ("user", 'Extract every fact as "qa_pairs" and list "entities".\n'
             "Document: Marie Curie was born in Warsaw. She moved to Paris in 1891."),))
ANSWER = ChatRequest(stage="answer", max_tokens=50, messages=(
    ("user", "Context: Marie Curie was born in Warsaw. Warsaw is in Poland.\n"
             "Question: Where was Marie Curie born?\nAnswer:"),))


class Pair(pydantic.BaseModel):
    question: str
    answer: str


class Facts(pydantic.BaseModel):
    qa_pairs: list[Pair]
    entities: list[str]


def facts(value: Any) -> Facts:
    return Facts.model_validate(value)


@pytest.fixture
def server(request: pytest.FixtureRequest) -> Iterator[LlmTestServer]:
    with running_llm_server(getattr(request, "param", LlmServerConfig())) as test_server:
        yield test_server


def client_for(server: LlmTestServer, *, modes: ProcessOutputModes | None = None,
               output_mode: LlmOutputMode = LlmOutputMode.AUTO) -> LlmClient:
    settings = LlmSettings(base_url=server.base_url, model="hopindex-test-llm", api_key="k",
                           timeout_s=10.0, backoff_base_s=0.01, backoff_max_s=0.05,
                           output_mode=output_mode)
    return LlmClient(settings, InProcessRateLimiter(RateLimits(requests_per_minute=6000)),
                     modes=modes)


def run_json(server: LlmTestServer, request: ChatRequest, usage: UsageMeter, *,
             times: int = 1, modes: ProcessOutputModes | None = None,
             output_mode: LlmOutputMode = LlmOutputMode.AUTO) -> list[Facts]:
    async def scenario() -> list[Facts]:
        client = client_for(server, modes=modes, output_mode=output_mode)
        try:
            return [await client.complete_json(request, facts, usage) for _ in range(times)]
        finally:
            await client.close()

    return asyncio.run(scenario())


def bare_reply(request: ChatRequest) -> Facts:
    with running_llm_server(LlmServerConfig()) as bare:
        return run_json(bare, request, UsageMeter())[0]


@pytest.mark.parametrize("server", [LlmServerConfig(reply_styles=(ReplyStyle.FORMAT_REFUSED,))],
                         indirect=True)
def test_a_refused_response_format_steps_down_to_the_prompt_and_is_remembered(
        server: LlmTestServer) -> None:
    """json_schema and json_object refused: two 400s, then the prompt alone answers; the
    next call goes straight to the prompt. Refusals are not answered calls."""
    modes = ProcessOutputModes()
    usage = UsageMeter()
    shaped = ChatRequest(stage=STAGE1.stage, messages=STAGE1.messages, shape=Facts)
    replies = run_json(server, shaped, usage, times=2, modes=modes)
    assert replies[0] == replies[1] == bare_reply(shaped)
    assert asyncio.run(modes.get_mode(server.base_url, "hopindex-test-llm")) is OutputMode.PROMPT
    assert server.stats.count(Endpoint.CHAT, Outcome.OK) == 2
    assert server.stats.count(Endpoint.CHAT) == 4
    assert usage.total().calls == 2 and usage.total().repairs == 0


@pytest.mark.parametrize("server", [LlmServerConfig(reply_styles=(ReplyStyle.SCHEMA_REFUSED,))],
                         indirect=True)
def test_a_refused_json_schema_steps_down_to_json_object(server: LlmTestServer) -> None:
    """A shape is sent as a strict schema; refused, json_object answers."""
    modes = ProcessOutputModes()
    shaped = ChatRequest(stage=STAGE1.stage, messages=STAGE1.messages, shape=Facts)
    run_json(server, shaped, UsageMeter(), modes=modes)
    assert asyncio.run(modes.get_mode(server.base_url,
                                      "hopindex-test-llm")) is OutputMode.JSON_OBJECT
    assert server.stats.count(Endpoint.CHAT) == 2


@pytest.mark.parametrize("server", [LlmServerConfig(reply_styles=(ReplyStyle.FORMAT_REFUSED,))],
                         indirect=True)
def test_a_pinned_mode_is_never_stepped_down(server: LlmTestServer) -> None:
    """HOPINDEX_LLM_OUTPUT_MODE fixes the mode: its refusal is the item's failure, sent
    once, so the operator sees the setting is wrong."""
    usage = UsageMeter()
    with pytest.raises(Exception, match="rejected the request"):
        run_json(server, STAGE1, usage, output_mode=LlmOutputMode.JSON_OBJECT)
    assert server.stats.count(Endpoint.CHAT) == 1


@pytest.mark.parametrize("server", [LlmServerConfig(reply_styles=(ReplyStyle.TRUNCATED,))],
                         indirect=True)
def test_a_structured_reply_cut_at_its_budget_is_asked_again_with_a_larger_one(
        server: LlmTestServer) -> None:
    """The cut reply is never taken (even though a lenient reader could close it): the
    retry with a larger budget gives the whole value; two calls, one repair, one cut."""
    usage = UsageMeter()
    # A budget smaller than the reply; the larger-budget retry clears it.
    small = ChatRequest(stage=STAGE1.stage, messages=STAGE1.messages, max_tokens=16)
    assert run_json(server, small, usage) == [bare_reply(STAGE1)]
    total = usage.total()
    assert (total.calls, total.repairs, total.truncated) == (2, 1, 1)


@pytest.mark.parametrize("server", [LlmServerConfig(reply_styles=(ReplyStyle.TRUNCATED,))],
                         indirect=True)
def test_a_text_answer_cut_at_its_budget_is_kept_and_marked(server: LlmTestServer) -> None:
    """An answer is kept as given (a query marks it truncated): one call, not cached."""
    cut = ChatRequest(stage="answer", max_tokens=1, messages=ANSWER.messages)

    async def scenario() -> tuple[str, bool]:
        client = client_for(server)
        try:
            result = await client.complete(cut, UsageMeter())
            return result.content, result.truncated
        finally:
            await client.close()

    content, truncated = asyncio.run(scenario())
    assert truncated and content
    assert server.stats.count(Endpoint.CHAT) == 1


@pytest.mark.parametrize("server", [LlmServerConfig(reply_styles=(ReplyStyle.THINK,))],
                         indirect=True)
def test_a_text_answer_loses_its_reasoning_block(server: LlmTestServer) -> None:
    async def scenario() -> str:
        client = client_for(server)
        try:
            return (await client.complete(ANSWER, UsageMeter())).content
        finally:
            await client.close()

    content = asyncio.run(scenario())
    assert "<think>" not in content and "</think>" not in content
    with running_llm_server(LlmServerConfig()) as bare:
        async def plain() -> str:
            client = client_for(bare)
            try:
                return (await client.complete(ANSWER, UsageMeter())).content
            finally:
                await client.close()

        assert content == asyncio.run(plain())


@pytest.mark.parametrize("server", [LlmServerConfig(invalid_json_marker="Warsaw")],
                         indirect=True)
def test_an_unusable_reply_gets_one_repair_call_counted_as_such(server: LlmTestServer) -> None:
    """A reply with no JSON, twice: the item fails naming its call kind and what was
    wrong; both requests are calls, the second a repair."""
    usage = UsageMeter()
    with pytest.raises(ReplyShapeError, match=r"stage1: .*no JSON.*after one repair call"):
        run_json(server, STAGE1, usage)
    total = usage.total()
    assert (total.calls, total.repairs) == (2, 1)
