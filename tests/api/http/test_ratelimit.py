"""Failed authentications are paced per client: a token bucket per address (IPv6 per
/64), a 429 with Retry-After in the JSON error shape once it is empty, valid keys never
limited, bounded memory, and settings that refuse nonsense."""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests

from hopindex.api.http.keys import (
    HashScheme,
    KeyRing,
    key_file_entry,
    key_id,
    load_keys_file,
    new_key,
)
from hopindex.api.http.ratelimit import (
    MAX_PAUSE_S,
    FailureLimiter,
    FailurePause,
    client_of,
    retry_after_header,
)
from hopindex.api.http.server import BackgroundServer
from hopindex.api.service import Hopindex
from hopindex.core.errors import ConfigError
from hopindex.core.settings import Settings
from tests.api.http.conftest import KEYS, Api, ApiFactory


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_bucket_allows_a_burst_then_the_rate() -> None:
    """``burst`` failures pass at once; the next waits 60/per_minute seconds; time
    refills the bucket, never above the burst; a token given back is usable again."""
    clock = Clock()
    limiter = FailureLimiter(burst=3, per_minute=6, clock=clock)
    assert [limiter.take("a") for _ in range(3)] == [None, None, None]
    wait = limiter.take("a")
    assert wait == pytest.approx(10.0) and retry_after_header(wait) == "10"
    assert limiter.take("b") is None  # another client has its own bucket
    clock.now += 10.0
    assert limiter.take("a") is None and limiter.take("a") is not None
    limiter.give_back("a")
    assert limiter.take("a") is None
    clock.now += 3600.0
    assert [limiter.take("a") for _ in range(4)][-1] is not None  # refilled to 3, not more


def test_zero_rate_never_limits_and_memory_is_bounded() -> None:
    """per_minute 0 turns the limit off; at most max_clients buckets are kept, the
    least recently seen dropped first."""
    off = FailureLimiter(burst=1, per_minute=0)
    assert all(off.take("a") is None for _ in range(100)) and off.tracked_clients() == 0
    limiter = FailureLimiter(burst=1, per_minute=1, max_clients=100)
    for n in range(1000):
        limiter.take(f"10.0.{n // 250}.{n % 250}")
    assert limiter.tracked_clients() == 100


@pytest.mark.parametrize(("remote", "client"), [
    ("192.0.2.7", "192.0.2.7"),
    ("2001:db8:1:2:aaaa::1", "2001:db8:1:2::/64"),
    ("2001:db8:1:2:bbbb::9", "2001:db8:1:2::/64"),
    ("::ffff:192.0.2.7", "192.0.2.7"),
    (None, "unknown"),
])
def test_clients_are_addresses_or_ipv6_networks(remote: str | None, client: str) -> None:
    """One IPv6 host holds a whole /64, so its addresses share a bucket; a mapped IPv4
    address is its IPv4 client."""
    assert client_of(remote) == client


@pytest.mark.parametrize(("overrides", "variable"), [
    ({"api_auth_failure_burst": 0}, "HOPINDEX_API_AUTH_FAILURE_BURST"),
    ({"api_auth_failures_per_minute": -1}, "HOPINDEX_API_AUTH_FAILURES_PER_MINUTE"),
])
def test_settings_refuse_nonsense(overrides: dict[str, int], variable: str) -> None:
    """A burst under 1 or a negative rate stops the start, naming the variable."""
    with pytest.raises(ConfigError, match=variable):
        Settings(**overrides).validate()  # type: ignore[arg-type]  # typed per field


@pytest.fixture(scope="module")
def strict(make_api: ApiFactory) -> Api:
    return make_api(api_auth_failure_burst=3, api_auth_failures_per_minute=1)


@pytest.mark.integration
def test_failures_past_the_burst_are_429_and_valid_keys_still_pass(strict: Api) -> None:
    """Three wrong or missing keys are 401s; the fourth request without a valid key is a
    429 in the JSON error shape with Retry-After; a valid key from the same address is
    still answered."""
    wrong = "wrong-key-0123456789abcdef"
    statuses = [strict.call("GET", "/v1/indexes", key=k).status_code
                for k in (wrong, None, wrong)]
    assert statuses == [401, 401, 401]
    for key in (wrong, None):
        started = time.monotonic()
        limited = strict.call("GET", "/v1/indexes", key=key)
        assert limited.status_code == 429, limited.text
        assert time.monotonic() - started >= MAX_PAUSE_S * 0.9  # held back, not spun
        assert limited.headers["Content-Type"].startswith("application/json")
        assert int(limited.headers["Retry-After"]) >= 1
        error = limited.json()["error"]
        assert error["code"] == "too_many_failures" and error["request_id"]
    assert strict.call("GET", "/v1/indexes", key="read").status_code == 200
    assert strict.call("GET", "/healthz", key=wrong).status_code == 200  # public route
    assert KEYS["read"] not in limited.text


@pytest.mark.integration
def test_a_scrypt_key_verified_before_a_flood_keeps_working(tmp_path: Path) -> None:
    """With a scrypt keys file, a flood of wrong secrets under the key's own id (each a
    scrypt check) from the key's own address uses up the budget, then gets 429s with no
    scrypt work; the key, checked once before, is still answered."""
    key = new_key()
    path = tmp_path / "keys.toml"
    path.write_text(key_file_entry(key, HashScheme.SCRYPT, name="svc", access="read",
                                   indexes=["*"]))
    settings = Settings(data_dir=tmp_path / "data", api_auth_failure_burst=2,
                        api_auth_failures_per_minute=1).resolved()
    with Hopindex(settings) as service, \
            BackgroundServer(service, KeyRing(load_keys_file(path))) as server:

        def status(presented: str) -> int:
            return requests.get(f"{server.url}/v1/indexes", timeout=30,
                                headers={"Authorization": f"Bearer {presented}"}).status_code

        assert status(key) == 200
        forged = [f"hpx_{key_id(key)}_{n:043d}" for n in range(8)]
        assert [status(k) for k in forged[:2]] == [401, 401]
        with ThreadPoolExecutor(6) as pool:  # the 429s' pauses overlap
            assert set(pool.map(status, forged[2:])) == {429}
        assert status(key) == 200


def test_pauses_are_capped() -> None:
    """At most ``max_paused`` 429s wait at once; the rest are not held back at all."""
    pause = FailurePause(max_pause_s=0.5, max_paused=2)

    async def three() -> tuple[int, list[float]]:
        async def timed() -> float:
            started = time.monotonic()
            await pause.pause(30.0)
            return time.monotonic() - started

        tasks = [asyncio.create_task(timed()) for _ in range(3)]
        # Not a wait for time: one pass of the event loop, in which each task runs up
        # to its first wait. The one not held back has none: it is done already.
        await asyncio.sleep(0)
        at_once = sum(task.done() for task in tasks)
        return at_once, sorted(await asyncio.gather(*tasks))

    at_once, waited = asyncio.run(three())
    assert at_once == 1
    # The two held back wait max_pause_s (0.5 s), not the 30 s asked: 15 s leaves a
    # loaded 2-core machine ample room and still tells the two apart.
    assert 0.4 < waited[1] <= waited[2] < 15.0
    assert pause.paused == 0
