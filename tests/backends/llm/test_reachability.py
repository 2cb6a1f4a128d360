"""A provider that cannot be reached at all (nothing listens, no such host) fails fast,
naming its URL, while one that answers badly keeps the patient retry policy; what one
call learns, the client's other calls share."""

from __future__ import annotations

import asyncio
import errno
import itertools
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from hopindex.backends.llm.client import ChatRequest, LlmClient, LlmSettings
from hopindex.backends.llm.observer import LlmOutcome, NullLlmObserver
from hopindex.backends.llm.ratelimit import InProcessRateLimiter, RateLimits
from hopindex.backends.llm.reachability import (
    CONNECT_BACKOFF_MAX_S,
    CONNECT_GIVE_UP_S,
    Reachability,
    unreachable_reason,
)
from hopindex.backends.llm.usage import UsageMeter
from hopindex.backends.registry import build_llm_client
from hopindex.core.errors import ConfigError, LlmUnavailableError
from hopindex.core.settings import Settings
from tests.clocks import ManualClock

STAGE1 = ChatRequest(stage="stage1", messages=(("user", "Extract the facts."),))
# The patient policy's defaults (core/settings.py): what an unreachable provider cost.
PATIENT = LlmSettings(base_url="http://x/v1", model="m", api_key="", max_attempts=8,
                      backoff_base_s=0.5, backoff_max_s=30.0)
# Slack over a bound for a busy 2-core machine: a few refused connects and wake-ups.
SLACK_S = 2.0


def patient_expected_s(settings: LlmSettings) -> float:
    """The patient policy's mean total backoff over its attempts (full jitter: half of
    each ceiling), about 31 s with the defaults."""
    return sum(min(settings.backoff_max_s, settings.backoff_base_s * 2 ** (n - 1)) / 2
               for n in range(1, settings.max_attempts))


class CountingObserver(NullLlmObserver):
    """Counts the requests the client sent (each attempt is reported with its outcome)."""

    def __init__(self) -> None:
        self.sent = 0
        self._changed = asyncio.Event()

    def observe_request(self, stage: str, model: str, outcome: LlmOutcome, duration_s: float,
                        *, prompt_tokens: int = 0, completion_tokens: int = 0,
                        cost: float | None = None) -> None:
        self.sent += 1
        self._changed.set()

    async def reached(self, sent: int) -> None:
        """Return once ``sent`` requests have been sent."""
        while self.sent < sent:
            self._changed.clear()
            await self._changed.wait()


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A loopback port nothing listens on: bound (so the system picked it), then closed."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port: int = sock.getsockname()[1]
    sock.close()
    yield port


def unreachable_client(base_url: str, give_up_s: float,
                       observer: CountingObserver) -> LlmClient:
    """A client with the patient policy's defaults and a short connect give-up."""
    settings = LlmSettings(base_url=base_url, model="m", api_key="", timeout_s=10.0,
                           max_attempts=PATIENT.max_attempts,
                           backoff_base_s=PATIENT.backoff_base_s,
                           backoff_max_s=PATIENT.backoff_max_s, connect_give_up_s=give_up_s)
    return LlmClient(settings, InProcessRateLimiter(RateLimits(requests_per_minute=None)),
                     observer=observer)


async def timed_failure(client: LlmClient) -> tuple[float, str]:
    started = time.monotonic()
    with pytest.raises(LlmUnavailableError) as raised:
        await client.complete(STAGE1, UsageMeter())
    return time.monotonic() - started, str(raised.value)


def test_a_closed_port_fails_after_the_give_up_and_the_next_call_at_once(
        closed_port: int) -> None:
    """Connection refused: the call retries for the give-up (1 s here), no longer, then
    fails naming the URL and the reason, far sooner than the patient policy's ~31 s;
    a second call right after fails at once with the same message, sending nothing."""
    give_up_s = 1.0
    url = f"http://127.0.0.1:{closed_port}/v1"
    assert give_up_s + SLACK_S < patient_expected_s(PATIENT) / 5  # the premise

    async def scenario() -> None:
        observer = CountingObserver()
        client = unreachable_client(url, give_up_s, observer)
        elapsed_s, message = await timed_failure(client)
        assert give_up_s - 0.05 <= elapsed_s < give_up_s + SLACK_S, elapsed_s
        assert message == f"stage1: cannot reach the LLM provider at {url} " \
                          "(connection refused) after 1s"
        # Retried quickly (backoff from 0.25 s, capped at CONNECT_BACKOFF_MAX_S), not
        # bounded by the patient policy's attempts.
        assert 2 <= observer.sent <= 2 + give_up_s / (PATIENT.backoff_base_s / 2)
        sent = observer.sent
        again_s, again = await timed_failure(client)
        assert again == message and observer.sent == sent  # nothing sent
        assert again_s < give_up_s
        await client.close()

    asyncio.run(scenario())


def test_a_host_that_does_not_resolve_fails_naming_it() -> None:
    """A ``.invalid`` host never resolves (RFC 2606): the call fails after the give-up
    with "host does not resolve" and the URL, its credentials redacted."""
    async def scenario() -> None:
        observer = CountingObserver()
        client = unreachable_client("http://user:secret@hopindex-test.invalid/v1", 0.5,
                                    observer)
        elapsed_s, message = await timed_failure(client)
        assert elapsed_s < 0.5 + SLACK_S
        assert message == ("stage1: cannot reach the LLM provider at "
                           "http://***@hopindex-test.invalid/v1 (host does not resolve) "
                           "after 0.5s")
        assert "secret" not in message
        await client.close()

    asyncio.run(scenario())


def test_calls_in_flight_give_up_together(closed_port: int) -> None:
    """A call that starts while another is already retrying an unreachable provider
    gives up with it, at the stretch's end, not a whole give-up after its own start;
    a batch started after that verdict fails at once, sending nothing, each call with
    the same message."""
    give_up_s = 2.0

    async def scenario() -> None:
        observer = CountingObserver()
        client = unreachable_client(f"http://127.0.0.1:{closed_port}/v1", give_up_s,
                                    observer)
        first = asyncio.create_task(timed_failure(client))
        # The first call's first two pauses last at least 0.25 s and 0.5 s (the lower
        # half of its backoff): after its third attempt, the stretch is 0.75 s old.
        await observer.reached(3)
        late_s, _ = await timed_failure(client)
        first_s, _ = await first
        lag_s = PATIENT.backoff_base_s / 2 + PATIENT.backoff_base_s
        assert late_s < give_up_s - lag_s / 2, (late_s, first_s)
        sent = observer.sent
        batch = await asyncio.gather(*(timed_failure(client) for _ in range(8)))
        assert all(message == batch[0][1] and took_s < lag_s for took_s, message in batch)
        assert observer.sent == sent
        await client.close()

    asyncio.run(scenario())


def test_the_give_up_is_a_setting(tmp_path: Path) -> None:
    """HOPINDEX_LLM_CONNECT_GIVE_UP_S reaches the client built for a process; 30 s when
    unset."""
    settings = Settings.from_env({"HOPINDEX_DATA_DIR": str(tmp_path),
                                  "HOPINDEX_LLM_MODEL": "m",
                                  "HOPINDEX_LLM_BASE_URL": "http://127.0.0.1:9/v1",
                                  "HOPINDEX_LLM_CONNECT_GIVE_UP_S": "1.5",
                                  "HOPINDEX_LLM_CACHE": "off"})
    assert settings.llm_connect_give_up_s == 1.5
    assert Settings(data_dir=tmp_path).llm_connect_give_up_s == CONNECT_GIVE_UP_S
    assert PATIENT.connect_give_up_s == CONNECT_GIVE_UP_S

    async def built() -> float:
        client = build_llm_client(settings)
        await client.close()
        return client.settings.connect_give_up_s

    assert asyncio.run(built()) == 1.5


def test_a_non_positive_give_up_is_refused(tmp_path: Path) -> None:
    """A give-up of 0 would fail every call at its first refused connection."""
    with pytest.raises(ConfigError, match="CONNECT_GIVE_UP_S"):
        Settings(data_dir=tmp_path, llm_model="m", llm_connect_give_up_s=0).resolved()
    with pytest.raises(ConfigError, match="connect give-up"):
        LlmSettings(base_url="http://x/v1", model="m", api_key="", connect_give_up_s=0)


def chained(*errors: BaseException) -> BaseException:
    """``errors[0]`` raised from ``errors[1]`` raised from ..., as the SDK chains them."""
    for outer, inner in itertools.pairwise(errors):
        outer.__cause__ = inner
    return errors[0]


@pytest.mark.parametrize(("error", "reason"), [
    (chained(RuntimeError("Connection error."), OSError("All connection attempts failed"),
             ConnectionRefusedError(errno.ECONNREFUSED, "refused")), "connection refused"),
    (chained(RuntimeError("Connection error."), socket.gaierror(-2, "Name not known")),
     "host does not resolve"),
    (chained(RuntimeError("x"), OSError(errno.EHOSTUNREACH, "no route")), "no route to host"),
    (chained(RuntimeError("x"), OSError(errno.ENETUNREACH, "down")), "network unreachable"),
    # A provider that is there but slow or crashing is not unreachable.
    (chained(RuntimeError("x"), TimeoutError(errno.ETIMEDOUT, "timed out")), None),
    (chained(RuntimeError("x"), ConnectionResetError(errno.ECONNRESET, "reset")), None),
    (RuntimeError("Internal Server Error"), None),
])
def test_the_cause_is_read_down_the_chain(error: BaseException, reason: str | None) -> None:
    """Refused, unresolved and unroutable connections are told apart from timeouts,
    resets and server errors by the socket error at the bottom of the chain."""
    assert unreachable_reason(error) == reason


def test_a_chain_that_loops_is_read_once() -> None:
    """An exception chain with a cycle ends the walk instead of looping."""
    first, second = RuntimeError("a"), RuntimeError("b")
    first.__cause__, second.__context__ = second, first
    assert unreachable_reason(first) is None


def test_a_verdict_holds_then_calls_try_again_and_a_success_ends_it() -> None:
    """On a clock the test moves: failures count from the stretch's first, whichever
    call met it; past the give-up the provider is declared unreachable and checks fail
    for as long again; then calls are let through, and the first refused renews the
    verdict at once; a call that gets through clears everything."""
    clock = ManualClock()
    reach = Reachability("http://h/v1", 10.0, backoff_base_s=0.5, clock=clock)
    assert reach.failed("a", "connection refused", 1) <= 0.5
    clock.advance(9.0)
    # A second call's first failure: its pause never reaches past the stretch's end.
    assert reach.failed("b", "connection refused", 1) <= 1.0
    clock.advance(1.0)
    with pytest.raises(LlmUnavailableError, match=r"^a: .* at http://h/v1 .* after 10s$"):
        reach.failed("a", "connection refused", 5)
    clock.advance(9.9)
    with pytest.raises(LlmUnavailableError, match=r"^c: cannot reach"):
        reach.check("c")
    clock.advance(0.2)
    reach.check("c")  # the hold is over: the call goes out
    with pytest.raises(LlmUnavailableError):
        reach.failed("c", "connection refused", 1)
    reach.connected()
    reach.check("d")
    assert reach.failed("d", "connection refused", 1) <= 0.5


def test_a_failure_long_after_the_last_starts_a_new_stretch() -> None:
    """A refused connection an hour after the last one (nothing tried meanwhile) gets
    its own retries, not the old stretch's verdict."""
    clock = ManualClock()
    reach = Reachability("http://h/v1", 10.0, clock=clock)
    reach.failed("a", "connection refused", 1)
    clock.advance(3600)
    assert 0 < reach.failed("a", "connection refused", 1) <= CONNECT_BACKOFF_MAX_S
