"""Streamed answers (``LlmClient.stream``, ``LlmRunner.stream``) against the test server
streaming as providers do: the pieces join to what ``complete`` returns in every reply
style, reasoning never reaches the callback, the cache is shared with ``complete``,
usage comes from the usage chunk or is counted, retries stop at the first piece, and
the budget hold, the limiter's reservation and the provider's connection are given
back on every way out, a cancellation included."""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from hopindex.backends.llm.budget import SqliteLlmBudget
from hopindex.backends.llm.cache import SqliteResponseCache
from hopindex.backends.llm.chat import CHARS_PER_TOKEN
from hopindex.backends.llm.client import ChatRequest, ChatResult, LlmClient, LlmSettings
from hopindex.backends.llm.query_policy import QueryDeadline
from hopindex.backends.llm.ratelimit import (
    InProcessRateLimiter,
    RateLimiter,
    RateLimits,
    Reservation,
)
from hopindex.backends.llm.reply_json import answer_text
from hopindex.backends.llm.runner import LlmRunner
from hopindex.backends.llm.usage import UsageMeter
from hopindex.core.budget import BudgetLimits, BudgetScope
from hopindex.core.errors import LlmUnavailableError, QueryCancelledError
from hopindex.testing.llm_limits import Endpoint, Outcome, StreamEvent
from hopindex.testing.llm_responses import compute_reply
from hopindex.testing.llm_server import LlmServerConfig, LlmTestServer, running_llm_server
from hopindex.testing.reply_styles import ReplyStyle, pick_style, reasoning
from tests.waiting import wait_until

MODEL = "hopindex-test-llm"
BREAK = "[[break the stream here]]"

ANSWER = ChatRequest(stage="answer", max_tokens=50, messages=(
    ("user", "Context: Marie Curie was born in Warsaw. Warsaw is in Poland.\n"
             "Question: Where was Marie Curie born?\nAnswer:"),))
# A reply of two sentences: many pieces at two words a batch.
PARAGRAPH = ChatRequest(stage="answer", max_tokens=200, messages=(
    ("user", "Describe the passage below.\n\nMarie Curie was a physicist and chemist who "
             "did pioneering research on radioactivity. She was the first woman to win a "
             "Nobel Prize. She moved to Paris in 1891."),))
# A JSON reply, asked as text: the styles that reshape JSON reshape it; cut at 20 tokens
# under TRUNCATED.
FACTS = ChatRequest(stage="answer", max_tokens=20, messages=(
    ("user", 'Extract every fact as "qa_pairs" and list "entities".\nDocument: Marie Curie '
             "was born in Warsaw. She moved to Paris in 1891 and won 2 Nobel Prizes."),))


def broken(request: ChatRequest) -> ChatRequest:
    (role, text), = request.messages
    return ChatRequest(stage=request.stage, max_tokens=request.max_tokens,
                       messages=((role, f"{text}\n{BREAK}"),))


@pytest.fixture
def server(request: pytest.FixtureRequest) -> Iterator[LlmTestServer]:
    config: LlmServerConfig = getattr(request, "param", LlmServerConfig(
        stream_batch_tokens=2, stream_break_marker=BREAK))
    with running_llm_server(config) as test_server:
        yield test_server


class RecordingLimiter:
    """The in-process limiter, with every admission, reconcile and penalty recorded."""

    def __init__(self) -> None:
        self._inner = InProcessRateLimiter(RateLimits(requests_per_minute=None))
        self.acquired = 0
        self.reconciled: list[int] = []
        self.penalized: list[float] = []

    async def acquire(self, key: str, estimated_tokens: int) -> Reservation:
        self.acquired += 1
        return await self._inner.acquire(key, estimated_tokens)

    async def reconcile(self, reservation: Reservation, actual_tokens: int) -> None:
        self.reconciled.append(actual_tokens)
        await self._inner.reconcile(reservation, actual_tokens)

    async def penalize(self, key: str, retry_after_s: float) -> None:
        self.penalized.append(retry_after_s)
        await self._inner.penalize(key, retry_after_s)

    async def close(self) -> None:
        await self._inner.close()


def settings_for(server: LlmTestServer, *, timeout_s: float = 10.0,
                 max_attempts: int = 6) -> LlmSettings:
    return LlmSettings(base_url=server.base_url, model=MODEL, api_key="k", timeout_s=timeout_s,
                       max_attempts=max_attempts, backoff_base_s=0.01, backoff_max_s=0.05)


def make_client(server: LlmTestServer, tmp_path: Path | None = None, *,
                limiter: RateLimiter | None = None, budget: SqliteLlmBudget | None = None,
                max_attempts: int = 6) -> LlmClient:
    cache = SqliteResponseCache(tmp_path / "cache.sqlite3") if tmp_path else None
    return LlmClient(settings_for(server, max_attempts=max_attempts),
                     limiter or InProcessRateLimiter(RateLimits(requests_per_minute=None)),
                     cache, budget=budget)


async def streamed(client: LlmClient, request: ChatRequest,
                   usage: UsageMeter | None = None) -> tuple[list[str], ChatResult]:
    pieces: list[str] = []
    result = await client.stream(request, usage or UsageMeter(), pieces.append)
    return pieces, result


def run(body: Callable[[LlmClient], Any], client: LlmClient) -> Any:
    async def scenario() -> Any:
        try:
            return await body(client)
        finally:
            await client.close()
    return asyncio.run(scenario())


# --- what reaches the callback ---------------------------------------------------------


@pytest.mark.parametrize("style", list(ReplyStyle), ids=[s.value for s in ReplyStyle])
def test_pieces_join_to_the_unstreamed_answer_in_every_reply_style(style: ReplyStyle) -> None:
    """For each reply style and a short, a long and a JSON reply: the pieces join to the
    stream's content, which is what ``complete`` returns for the same request; no piece
    holds a reasoning block or the start of one."""
    config = LlmServerConfig(reply_styles=(style,), stream_batch_tokens=2)
    with running_llm_server(config) as server:
        async def body(client: LlmClient) -> list[tuple[list[str], str, str]]:
            outcomes = []
            for request in (ANSWER, PARAGRAPH, FACTS):
                pieces, result = await streamed(client, request)
                whole = await client.complete(request, UsageMeter())
                outcomes.append((pieces, result.content, whole.content))
            return outcomes

        outcomes = run(body, make_client(server))
        assert server.stats.count(Endpoint.CHAT, Outcome.OK) == 6
    for pieces, content, whole in outcomes:
        assert "".join(pieces) == content == whole != ""
        assert all(piece and "<think" not in piece and "</think" not in piece
                   for piece in pieces)
    paragraph_pieces = outcomes[1][0]
    assert len(paragraph_pieces) > 3  # the answer streamed, not handed over at the end


@pytest.mark.parametrize("style", [ReplyStyle.THINK, ReplyStyle.REASONING_CONTENT],
                         ids=["think", "reasoning_content"])
def test_reasoning_never_reaches_the_callback(style: ReplyStyle) -> None:
    """A ``<think>`` block streamed as content, and ``reasoning_content`` deltas, are held
    back: the first piece is the answer's first words, with no whitespace before it."""
    with running_llm_server(LlmServerConfig(reply_styles=(style,),
                                            stream_batch_tokens=2)) as server:
        pieces, result = run(lambda client: streamed(client, PARAGRAPH), make_client(server))
        assert server.stats.by_style == {style.value: 1}
    reply = compute_reply([PARAGRAPH.messages[0][1]], max_tokens=PARAGRAPH.max_tokens)
    thoughts = {reasoning(reply, variant) for variant in (0, 1)}
    joined = "".join(pieces)
    assert joined == reply.content == result.content
    assert pieces[0].startswith("Marie")  # the answer's first word, nothing before it
    assert not any(line in joined for thought in thoughts for line in thought.splitlines())


# --- cache and usage -------------------------------------------------------------------


def test_a_streamed_answer_is_cached_for_complete_and_for_later_streams(
        server: LlmTestServer, tmp_path: Path) -> None:
    """The first stream reaches the server; ``complete`` and a second stream of the same
    request are cache hits, the stream's in one piece."""
    async def body(client: LlmClient) -> tuple[list[str], ChatResult, ChatResult,
                                               list[str], ChatResult, UsageMeter]:
        usage = UsageMeter()
        first_pieces, first = await streamed(client, PARAGRAPH, usage)
        whole = await client.complete(PARAGRAPH, usage)
        again_pieces, again = await streamed(client, PARAGRAPH, usage)
        return first_pieces, first, whole, again_pieces, again, usage

    first_pieces, first, whole, again_pieces, again, usage = run(body,
                                                                 make_client(server, tmp_path))
    assert server.stats.count(Endpoint.CHAT) == 1
    assert len(first_pieces) > 1 and not first.cached
    assert whole.cached and whole.content == first.content
    assert again.cached and again_pieces == [first.content]
    assert usage.total().calls == 1 and usage.total().cache_hits == 2


def test_usage_is_read_from_the_usage_chunk(server: LlmTestServer) -> None:
    """``stream_options.include_usage`` asked, the usage chunk's figures recorded: the
    same the server counted."""
    usage = UsageMeter()
    _pieces, result = run(lambda client: streamed(client, PARAGRAPH, usage),
                          make_client(server))
    stats = server.stats
    assert (result.prompt_tokens, result.completion_tokens) == (stats.prompt_tokens,
                                                                stats.completion_tokens)
    assert usage.total().calls == 1
    assert usage.total().prompt_tokens == stats.prompt_tokens


@pytest.mark.parametrize("server", [LlmServerConfig(
    reply_styles=(ReplyStyle.STREAM_OPTIONS_REFUSED, ReplyStyle.REASONING_CONTENT))],
    indirect=True)
def test_a_refused_stream_options_is_dropped_remembered_and_usage_counted(
        server: LlmTestServer) -> None:
    """The first stream is refused for its ``stream_options`` and sent again at once
    without (not an attempt); the client sends none after. With no usage chunk, usage
    is counted: the prompt's estimate, the reply's characters (reasoning included)."""
    async def body(client: LlmClient) -> tuple[ChatResult, ChatResult, UsageMeter]:
        usage = UsageMeter()
        _pieces, first = await streamed(client, PARAGRAPH, usage)
        _pieces, second = await streamed(client, ANSWER, usage)
        return first, second, usage

    first, second, usage = run(body, make_client(server))
    stats = server.stats
    assert stats.by_style[ReplyStyle.STREAM_OPTIONS_REFUSED.value] == 1
    assert stats.count(Endpoint.CHAT, Outcome.BAD_REQUEST) == 1
    assert stats.count(Endpoint.CHAT, Outcome.OK) == 2
    assert first.attempts == 1 and usage.total().retries == 0
    reply = compute_reply([PARAGRAPH.messages[0][1]], max_tokens=PARAGRAPH.max_tokens)
    pick = pick_style(server.config.reply_styles, server.config.seed, PARAGRAPH.messages)
    thought = reasoning(reply, pick.variant)
    assert first.prompt_tokens == PARAGRAPH.estimated_prompt_tokens()
    assert first.completion_tokens == math.ceil((len(reply.content) + len(thought))
                                                / CHARS_PER_TOKEN)
    assert second.prompt_tokens == ANSWER.estimated_prompt_tokens()


# --- retries, breaks, budget and limiter ----------------------------------------------


@pytest.mark.parametrize("server", [LlmServerConfig(fail_429=0.3, fail_500=0.2, seed=7,
                                                    stream_batch_tokens=2)], indirect=True)
def test_429s_and_500s_before_the_first_byte_are_retried_to_the_same_answer(
        server: LlmTestServer) -> None:
    """Faults answered before the stream starts are retried like ``complete``'s; every
    stream ends with the answer ``complete`` gives, and each 429 held the limiter back."""
    limiter = RecordingLimiter()

    async def body(client: LlmClient) -> tuple[list[tuple[str, str]], UsageMeter]:
        usage = UsageMeter()
        pairs = []
        for n in range(8):
            request = ChatRequest(stage="answer", max_tokens=60, messages=(
                ("user", f"{PARAGRAPH.messages[0][1]} Item {n} was counted."),))
            pieces, result = await streamed(client, request, usage)
            assert "".join(pieces) == result.content
            pairs.append((result.content, (await client.complete(request, UsageMeter())).content))
        return pairs, usage

    pairs, usage = run(body, make_client(server, limiter=limiter, max_attempts=12))
    stats = server.stats
    assert all(streamed_answer == whole for streamed_answer, whole in pairs)
    rate_limited = stats.count(Endpoint.CHAT, Outcome.RATE_LIMITED)
    assert rate_limited > 0 and stats.count(Endpoint.CHAT, Outcome.SERVER_ERROR) > 0
    assert stats.stream_count(StreamEvent.COMPLETED) == 8
    assert len(limiter.penalized) == rate_limited
    assert limiter.acquired == len(limiter.reconciled)  # every reservation settled
    assert usage.total().calls == 8 and usage.total().retries > 0


def test_a_stream_broken_after_its_first_piece_is_not_retried(server: LlmTestServer) -> None:
    """The connection closed mid-stream after text was handed on: one stream at the
    server, ``LlmUnavailableError`` naming how much was shown, the reservation settled
    with what the reply used so far."""
    limiter = RecordingLimiter()
    pieces: list[str] = []

    async def body(client: LlmClient) -> None:
        await client.stream(broken(PARAGRAPH), UsageMeter(), pieces.append)

    with pytest.raises(LlmUnavailableError, match=r"answer stream broke after \d+ characters"):
        run(body, make_client(server, limiter=limiter))
    assert pieces and "".join(pieces).startswith("Marie Curie")
    stats = server.stats
    assert stats.stream_count(StreamEvent.STARTED) == stats.stream_count(StreamEvent.BROKEN) == 1
    assert limiter.acquired == len(limiter.reconciled) == 1
    assert limiter.reconciled[0] > 0


@pytest.mark.parametrize("server", [LlmServerConfig(
    reply_styles=(ReplyStyle.THINK,), stream_batch_tokens=2, stream_break_marker=BREAK)],
    indirect=True)
def test_a_stream_broken_inside_its_reasoning_is_retried(server: LlmTestServer) -> None:
    """Broken while its think block was held back, nothing was shown: the attempt is
    retried as ``complete``'s would be, here until the attempts run out."""
    pieces: list[str] = []

    async def body(client: LlmClient) -> None:
        await client.stream(broken(PARAGRAPH), UsageMeter(), pieces.append)

    with pytest.raises(LlmUnavailableError, match="failed 3 times"):
        run(body, make_client(server, max_attempts=3))
    assert pieces == []
    assert server.stats.stream_count(StreamEvent.BROKEN) == 3


def test_the_budget_hold_is_settled_after_a_stream_and_after_a_break(
        server: LlmTestServer, tmp_path: Path) -> None:
    """A budgeted job's stream holds its estimate while it runs and swaps it for the
    usage after; a broken one gives the hold back too."""
    budget = SqliteLlmBudget(tmp_path / "budget.sqlite3")
    scope = BudgetScope("job-1", BudgetLimits(max_llm_tokens=100_000))

    async def body(client: LlmClient) -> tuple[ChatResult, Any, Any]:
        usage = UsageMeter(budget=scope)
        _pieces, result = await streamed(client, PARAGRAPH, usage)
        after_stream = await client.budget_status(scope.job_id, scope.limits)
        with pytest.raises(LlmUnavailableError):
            await streamed(client, broken(PARAGRAPH), usage)
        after_break = await client.budget_status(scope.job_id, scope.limits)
        return result, after_stream, after_break

    result, after_stream, after_break = run(body, make_client(server, budget=budget))
    assert after_stream.held.tokens == 0
    assert after_stream.spent.tokens == result.prompt_tokens + result.completion_tokens
    assert after_break.held.tokens == 0


# --- time and cancellation ------------------------------------------------------------


@pytest.mark.parametrize("server", [LlmServerConfig(stream_batch_tokens=8,
                                                    stream_batch_latency_s=0.5)], indirect=True)
def test_the_query_deadline_bounds_the_time_to_the_first_piece_only(
        server: LlmTestServer) -> None:
    """A 1.2 s deadline, the first of three batches after 0.5 s: the answer runs past the
    deadline whole (the call timeout, 10 s, bounds the gaps between chunks)."""
    usage = UsageMeter(deadline=QueryDeadline(total_s=1.2, call_timeout_s=10.0))
    started = time.monotonic()
    pieces, result = run(lambda client: streamed(client, PARAGRAPH, usage), make_client(server))
    assert time.monotonic() - started > 1.2  # three batches, each 0.5 s after the last
    assert len(pieces) == 3
    assert "".join(pieces) == result.content == answer_text(result.content) != ""
    assert usage.deadline is not None and usage.deadline.failed is None


@pytest.mark.parametrize("server", [LlmServerConfig(stream_batch_latency_s=1.0)],
                         indirect=True)
def test_no_first_piece_within_the_deadline_fails_the_query_step(
        server: LlmTestServer) -> None:
    """A deadline shorter than the wait for the first piece: ``LlmUnavailableError``,
    recorded on the deadline so the query's later LLM steps are skipped."""
    usage = UsageMeter(deadline=QueryDeadline(total_s=0.3, call_timeout_s=10.0))
    with pytest.raises(LlmUnavailableError, match="before its answer began"):
        run(lambda client: streamed(client, PARAGRAPH, usage), make_client(server))
    assert usage.deadline is not None and usage.deadline.failed is not None
    wait_until(lambda: server.stats.stream_count(StreamEvent.DISCONNECTED) == 1,
               what="the server to see the cut stream's connection end")


@pytest.mark.parametrize("server", [LlmServerConfig(stream_batch_tokens=2,
                                                    stream_batch_latency_s=1.0)], indirect=True)
def test_a_cancelled_runner_stream_closes_the_providers_stream_at_once(
        server: LlmTestServer, tmp_path: Path) -> None:
    """Cancelled after its first piece: ``QueryCancelledError`` well within a second
    (the event is polled every 20 ms; the next batch is a second away), the server sees
    the connection end, the reservation and the budget hold are settled and the slot is
    free again."""
    limiter = RecordingLimiter()
    budget = SqliteLlmBudget(tmp_path / "budget.sqlite3")
    scope = BudgetScope("job-1", BudgetLimits(max_llm_tokens=100_000))
    runner = LlmRunner(lambda: LlmClient(settings_for(server), limiter, budget=budget),
                       concurrency=1)
    first_piece, cancelled = threading.Event(), threading.Event()
    outcome: dict[str, Any] = {}

    def call() -> None:
        try:
            runner.stream(PARAGRAPH, UsageMeter(budget=scope), lambda _piece: first_piece.set(),
                          cancelled=cancelled)
        except QueryCancelledError as exc:
            outcome["error"], outcome["at"] = exc, time.monotonic()

    caller = threading.Thread(target=call)
    try:
        caller.start()
        wait_until(first_piece.is_set, what="the stream's first piece")
        asked = time.monotonic()
        cancelled.set()
        caller.join(timeout=30)
        assert isinstance(outcome.get("error"), QueryCancelledError)
        # The poll (20 ms) plus closing a local connection: well under the second to the
        # next batch, and the ten more the stream still had to send.
        assert outcome["at"] - asked < 0.9
        wait_until(lambda: server.stats.stream_count(StreamEvent.DISCONNECTED) == 1,
                   what="the server to see the cancelled stream's connection end")
        # Settled before the error was raised: the runner waits for the call's clean-up.
        assert limiter.acquired == len(limiter.reconciled) == 1
        status = runner.budget_status(scope.job_id, scope.limits)
        assert status is not None and status.held.tokens == 0
        assert runner.complete(ANSWER, UsageMeter()).content  # the one slot is free
    finally:
        cancelled.set()
        caller.join(timeout=30)
        runner.close()
    assert server.stats.stream_count(StreamEvent.COMPLETED) == 0


def test_a_runner_stream_cancelled_before_it_starts_sends_nothing(
        server: LlmTestServer) -> None:
    runner = LlmRunner(lambda: LlmClient(settings_for(server), RecordingLimiter()),
                       concurrency=1)
    cancelled = threading.Event()
    cancelled.set()
    try:
        with pytest.raises(QueryCancelledError):
            runner.stream(PARAGRAPH, UsageMeter(), lambda _piece: None, cancelled=cancelled)
        pieces: list[str] = []
        result = runner.stream(ANSWER, UsageMeter(), pieces.append,
                               cancelled=threading.Event())
    finally:
        runner.close()
    assert "".join(pieces) == result.content == "Warsaw"
    assert server.stats.count(Endpoint.CHAT) == 1
