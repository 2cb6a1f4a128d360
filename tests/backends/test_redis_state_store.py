"""The Redis state store: the shared contract plus what only a shared server can show."""

from __future__ import annotations

import math
import multiprocessing
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any, ClassVar
from unittest.mock import patch

import pytest
import redis

from hopindex.backends.protocols import IndexInfo, StateStore
from hopindex.backends.state import redis_jobs
from hopindex.backends.state.redis_connection import CHUNK, COMMANDS_PER_TRIP, glob_escape
from hopindex.backends.state.redis_store import RedisStateStore
from hopindex.core.errors import BackendError, BackendUnavailableError
from hopindex.core.models import Job, Unit, UnitKind
from hopindex.testing.contracts.groups import GroupsContract
from hopindex.testing.contracts.state_records import (
    NER,
    TITLE,
    doc,
    mention,
    new_job,
    unit,
)
from hopindex.testing.contracts.state_store import StateStoreContract
from hopindex.testing.redis_server import free_port
from tests.redis_server import (
    redis_url,  # noqa: F401  # pytest fixture
)

pytestmark = pytest.mark.integration

ROUNDS = 200
FORK_ROUNDS = 40


def _keys(client: redis.Redis, prefix: str) -> list[str]:
    return sorted(client.scan_iter(match=f"{glob_escape(prefix)}:*", count=1000))


@pytest.fixture
def store(redis_store: RedisStateStore) -> RedisStateStore:
    return redis_store


class TestRedisStateStore(StateStoreContract, GroupsContract):
    persistent: ClassVar[bool] = True

    @pytest.fixture
    def store(self, redis_store: RedisStateStore) -> Iterator[StateStore]:
        yield redis_store

    @pytest.fixture
    def reopen_store(self, redis_url: str,  # noqa: F811  # the imported fixture
                     prefix: str) -> Callable[[], StateStore]:
        return lambda: RedisStateStore(redis_url, prefix=prefix)


def _bump(job: Job) -> None:
    job.units_embedded += 1


def _bump_in_own_store(url: str, prefix: str, job_id: str, rounds: int) -> None:
    store = RedisStateStore(url, prefix=prefix)
    try:
        for _ in range(rounds):
            store.update_job(job_id, _bump)
    finally:
        store.close()


def _bump_in_inherited_store(store: RedisStateStore, job_id: str) -> None:
    for _ in range(FORK_ROUNDS):
        store.update_job(job_id, _bump)


def test_processes_lose_no_update(store: RedisStateStore, redis_url: str,  # noqa: F811  # the imported fixture
                                  prefix: str) -> None:
    """Two spawned processes, each with its own store, lose none of their increments."""
    job = new_job("shared")
    store.create_job(job)
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_bump_in_own_store, args=(redis_url, prefix, job.job_id, ROUNDS))
             for _ in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
        assert p.exitcode == 0
    final = store.get_job(job.job_id)
    assert final is not None
    assert final.units_embedded == 2 * ROUNDS


def test_forked_children_reconnect(store: RedisStateStore) -> None:
    """A store inherited across fork opens fresh connections and stays consistent."""
    job = new_job("forked")
    store.create_job(job)
    store.update_job(job.job_id, _bump)  # the parent's pool holds a connection now
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_bump_in_inherited_store, args=(store, job.job_id))
             for _ in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
        assert p.exitcode == 0
    store.update_job(job.job_id, _bump)
    final = store.get_job(job.job_id)
    assert final is not None
    assert final.units_embedded == 2 * FORK_ROUNDS + 2


def test_change_runs_once_per_update(store: RedisStateStore) -> None:
    """Under contention each call's change runs once, so flags it sets stay truthful."""
    job = new_job("once")
    store.create_job(job)
    calls: list[int] = []

    def bump_and_count(j: Job) -> None:
        calls.append(1)
        j.units_embedded += 1
        # Work done while holding the job's lease, so the other threads contend for it
        # meanwhile (a change re-run on contention would be counted twice); not a wait.
        time.sleep(0.001)

    def worker() -> None:
        for _ in range(20):
            store.update_job(job.job_id, bump_and_count)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    final = store.get_job(job.job_id)
    assert final is not None
    assert final.units_embedded == 80
    assert len(calls) == 80


def test_update_waits_out_a_dead_writers_lease(store: RedisStateStore, raw: redis.Redis,
                                               prefix: str) -> None:
    """A lease left by a writer that died expires, and the next update goes through."""
    job = new_job("lease")
    store.create_job(job)
    # Timed from before the lease is set: it expires 0.3 s after the SET reached Redis,
    # after ``started`` however late this thread gets a CPU again, and the update takes
    # the lease only once it is gone: at least 0.3 s, less Redis's rounding to whole ms.
    started = time.perf_counter()
    raw.set(f"{prefix}:joblease:{job.job_id}", "dead-writer", px=300)
    assert store.update_job(job.job_id, _bump).units_embedded == 1
    assert time.perf_counter() - started >= 0.29


def test_update_gives_up_on_a_lease_held_too_long(store: RedisStateStore, raw: redis.Redis,
                                                  prefix: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A lease never released is a retryable error after the wait budget, not a hang."""
    monkeypatch.setattr(redis_jobs, "LEASE_WAIT_S", 0.3)
    job = new_job("lease")
    store.create_job(job)
    raw.set(f"{prefix}:joblease:{job.job_id}", "stuck", px=60_000)
    with pytest.raises(BackendUnavailableError, match="locked"):
        store.update_job(job.job_id, _bump)
    assert store.get_job(job.job_id) == job


def test_write_behind_an_expired_lease_is_retried(store: RedisStateStore, raw: redis.Redis,
                                                  redis_url: str,  # noqa: F811  # the imported fixture
                                                  prefix: str) -> None:
    """If the lease expires mid-change and another writer commits, WATCH refuses the stale
    write and the change is applied again to the new record: nothing is lost."""
    job = new_job("watch")
    store.create_job(job)
    other = RedisStateStore(redis_url, prefix=prefix)
    interfered: list[bool] = []

    def slow_bump(j: Job) -> None:
        if not interfered:
            interfered.append(True)
            raw.delete(f"{prefix}:joblease:{job.job_id}")  # as if it had expired
            other.update_job(job.job_id, _bump)
        j.units_embedded += 10

    try:
        assert store.update_job(job.job_id, slow_bump).units_embedded == 11
    finally:
        other.close()
    final = store.get_job(job.job_id)
    assert final is not None
    assert final.units_embedded == 11


def _round_trips(call: Callable[[], object]) -> int:
    """How many times ``call`` sent to Redis: each send is one round trip, a pipeline's
    commands all going in one."""
    sends = 0
    send: Callable[..., None] = redis.connection.AbstractConnection.send_packed_command

    def counted(connection: redis.connection.AbstractConnection, command: Any,
                check_health: bool = True) -> None:
        nonlocal sends
        sends += 1
        send(connection, command, check_health)

    with patch.object(redis.connection.AbstractConnection, "send_packed_command", counted):
        call()
    return sends


def test_ten_thousand_units_round_trip_pipelined(store: RedisStateStore) -> None:
    """put_units + get_units of 10k units are pipelined: a round trip or so each, not one
    per unit or per chunk."""
    units = [unit("bulk", f"k{i}", docs=(f"d{i % 500}", "shared")) for i in range(10_000)]
    ids = [u.unit_id for u in units]
    # Counted, not timed (a busy machine stretches any time; benchmarks/state_store_bulk.py
    # measures it). 10k units are 10 chunks of CHUNK, COMMANDS_PER_TRIP chunks to a round
    # trip: one trip per call. redis-py may add up to 3 sends around it: SCRIPT EXISTS
    # and SCRIPT LOAD before a pipeline of scripts, a health-check PING on a connection
    # idle for 30 s. A trip per chunk would take 10, a command per unit 10k.
    most = math.ceil(len(units) / (CHUNK * COMMANDS_PER_TRIP)) + 3
    got: list[Unit] = []
    assert _round_trips(lambda: store.put_units(units)) <= most
    assert _round_trips(lambda: got.extend(store.get_units("bulk", ids))) <= most
    assert got == units
    assert store.count_units("bulk") == {UnitKind.PASSAGE: 10_000}
    assert len(store.units_of_documents("bulk", ["d7"])) == 20
    assert store.unembedded_units("bulk", ids) == ids
    store.mark_embedded("bulk", ids)
    assert store.unembedded_units("bulk", ids) == []
    # Unchanged texts: vectors stay valid.
    assert _round_trips(lambda: store.put_units(units)) <= most
    assert store.unembedded_units("bulk", ids) == []


def test_units_of_documents_in_write_order(store: RedisStateStore) -> None:
    """Units come back in first-write order, like SQLite's rowid, even after updates."""
    units = [unit("order", f"k{i}", docs=("d1",)) for i in range(30)]
    store.put_units(units[::-1])
    store.put_units([unit("order", "k5", docs=("d1",), text="rewritten")])
    found = store.units_of_documents("order", ["d1"])
    assert [u.source_key for u in found] == [f"k{i}" for i in reversed(range(30))]


def test_delete_index_leaves_no_key_behind(store: RedisStateStore, raw: redis.Redis,
                                           prefix: str) -> None:
    """Every key under the index's prefix is gone; the other index's keys remain."""
    names = [f"ct-{uuid.uuid4().hex[:8]}" for _ in range(2)]
    for name in names:
        store.create_index(IndexInfo(name=name, method="extractive", created_at=time.time()))
        store.put_documents([doc(name, "d1"), doc(name, "d:2*")])
        store.put_units([unit(name, f"k{i}", docs=("d1", "d:2*")) for i in range(50)])
        store.mark_embedded(name, [unit(name, "k1").unit_id])
        store.replace_mentions(name, "d1", [mention("paris", "d1"),
                                            mention("paris", "d1", TITLE)], [NER, TITLE])
        store.replace_group(name, "bridge", "paris", ["b1"], ["d1", "d:2*"])
        store.put_records(name, "extractive.analysis", {"d1": {"s": []}})
        store.create_job(new_job(name))
    gone, kept = names
    job_keys_before = len(list(raw.scan_iter(match=f"{glob_escape(prefix)}:job:*")))
    store.delete_index(gone)
    assert raw.keys(f"{glob_escape(prefix)}:ix:{gone}:*") == []
    assert raw.keys(f"{glob_escape(prefix)}:ix:{kept}:*")
    assert len(list(raw.scan_iter(match=f"{glob_escape(prefix)}:job:*"))) == job_keys_before - 1
    assert [j.index for j in store.list_jobs()] == [kept]
    assert store.count_units(kept) == {UnitKind.PASSAGE: 50}
    store.delete_index(kept)
    # Only the shared bookkeeping (the insertion counter, the layout version) outlives
    # both indexes.
    assert _keys(raw, prefix) == [f"{prefix}:jobseq", f"{prefix}:layout"]


def test_unsafe_index_names_cannot_reach_another_index(store: RedisStateStore) -> None:
    """Data under a name with ':' or glob characters stays apart and is deleted alone."""
    store.put_units([unit("a", "k1"), unit("a:b*", "k1")])
    store.delete_index("a:b*")
    assert store.count_units("a") == {UnitKind.PASSAGE: 1}
    assert store.count_units("a:b*") == {}


def test_unreachable_url_is_unavailable_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing listening: a retryable BackendUnavailableError that names the URL, after
    at most two short pauses, not a stall in retries."""
    where = f"127.0.0.1:{free_port()}"
    pauses: list[float] = []
    sleep = time.sleep  # what redis.retry imported

    def pause(seconds: float) -> None:
        pauses.append(seconds)
        sleep(seconds)

    # redis-py's retries pause here; counted rather than timed, so load cannot fail it.
    monkeypatch.setattr(redis.retry, "sleep", pause)
    started = time.perf_counter()
    with pytest.raises(BackendUnavailableError, match=re.escape(f"redis://{where}/0")):
        RedisStateStore(f"redis://{where}/0")
    # The store's Retry: 2 retries, each pause at most its 0.5 s cap (redis-py's default
    # would be 10 of up to 1 s). At least one was seen, so the count is not vacuous.
    assert 0 < len(pauses) <= 2 and sum(pauses) <= 1.0, pauses
    # And nothing else hangs: a closed loopback port refuses at once, so this is the
    # pauses (<= 1 s) and a few ms of CPU; 5 s leaves the rest for a busy machine.
    assert time.perf_counter() - started < 5.0


def test_password_is_not_in_messages() -> None:
    """The URL in errors and logs carries no password."""
    url = f"redis://user:s3cret@127.0.0.1:{free_port()}/0"
    with pytest.raises(BackendUnavailableError) as caught:
        RedisStateStore(url)
    assert "s3cret" not in str(caught.value)


def test_use_after_close_is_a_backend_error(store: RedisStateStore) -> None:
    """A closed store refuses work with BackendError; closing twice is harmless."""
    store.close()
    store.close()
    with pytest.raises(BackendError, match="closed"):
        store.document_hashes("x")
    with pytest.raises(BackendError, match="closed"):
        store.replace_mentions("x", "d1", [], [NER])
