"""A query's LLM calls under one deadline: against a provider that accepts connections
and never answers, a call ends at the deadline, the step after it is not sent at all,
and no repair call is made for an unusable reply."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from hopindex.backends.llm.client import ChatRequest, LlmClient, LlmSettings
from hopindex.backends.llm.query_policy import QueryDeadline
from hopindex.backends.llm.ratelimit import InProcessRateLimiter, RateLimits
from hopindex.backends.llm.usage import UsageMeter
from hopindex.core.errors import ConfigError, LlmUnavailableError, ReplyShapeError
from hopindex.testing.llm_server import LlmServerConfig, running_llm_server

ANSWER = ChatRequest(stage="answer", max_tokens=50, messages=(
    ("user", "Context: Marie Curie was born in Warsaw.\nQuestion: Where was she born?\n"
             "Answer:"),))


class SilentServer:
    """Accepts every connection and never answers: the provider that hangs a query."""

    def __init__(self) -> None:
        self._socket = socket.create_server(("127.0.0.1", 0))
        self.port = self._socket.getsockname()[1]
        self.accepted = 0
        self._held: list[socket.socket] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        self._socket.settimeout(0.05)
        while not self._stop.is_set():
            try:
                connection, _ = self._socket.accept()
            except TimeoutError:
                continue
            self.accepted += 1
            self._held.append(connection)

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        for connection in self._held:
            connection.close()
        self._socket.close()


@pytest.fixture
def silent() -> Iterator[SilentServer]:
    server = SilentServer()
    try:
        yield server
    finally:
        server.close()


def client_for(base_url: str) -> LlmClient:
    # The indexing policy: a minute per call, eight attempts. The deadline must win.
    settings = LlmSettings(base_url=base_url, model="m", api_key="k", timeout_s=60.0,
                           max_attempts=8, backoff_base_s=0.01, backoff_max_s=0.05)
    return LlmClient(settings, InProcessRateLimiter(RateLimits(requests_per_minute=6000)))


def test_a_hung_provider_ends_at_the_deadline_and_later_steps_are_not_sent(
        silent: SilentServer) -> None:
    """The first step fails at the 1 s deadline (per-call timeout 0.4 s: the client
    retries inside it), the second step raises at once without a connection."""
    usage = UsageMeter(deadline=QueryDeadline(total_s=1.0, call_timeout_s=0.4))

    async def scenario() -> tuple[float, str, str, int, int]:
        client = client_for(f"http://127.0.0.1:{silent.port}/v1")
        try:
            started = time.monotonic()
            with pytest.raises(LlmUnavailableError) as first:
                await client.complete(ANSWER, usage)
            elapsed = time.monotonic() - started
            connections = silent.accepted
            with pytest.raises(LlmUnavailableError) as second:
                await client.complete(ANSWER, usage)
            return elapsed, str(first.value), str(second.value), connections, silent.accepted
        finally:
            await client.close()

    elapsed, first, second, before, after = asyncio.run(scenario())
    # The per-call timeout (0.4 s) inside the deadline (1 s): two or three attempts,
    # never the indexing policy's eight minutes; 5 s is the bound a hang would break.
    assert elapsed < 5.0
    assert "answer" in first
    assert "not called, an earlier LLM step of this query failed" in second
    assert before >= 1 and after == before
    assert usage.deadline is not None and usage.deadline.failed is not None


def test_a_query_makes_no_repair_call() -> None:
    """An unusable reply to a query's structured call fails at once (the method
    degrades): one request, not two."""
    def never(value: object) -> object:
        raise ValueError("never the right shape")

    with running_llm_server(LlmServerConfig()) as server:
        usage = UsageMeter(deadline=QueryDeadline(total_s=10.0, call_timeout_s=5.0))

        async def scenario() -> None:
            client = client_for(server.base_url)
            try:
                await client.complete_json(ANSWER, never, usage)
            finally:
                await client.close()

        with pytest.raises(ReplyShapeError):
            asyncio.run(scenario())
        assert sum(server.stats.by_kind.values()) == 1
    assert usage.total().calls == 1 and usage.total().repairs == 0


def test_the_deadline_must_be_positive() -> None:
    with pytest.raises(ConfigError):
        QueryDeadline(total_s=0.0)
