"""LLM budgets that pause, on real worker processes sharing one Redis: two workers race
for the last of a job's budget and together pass it by no more than one call in flight
each; the paused job sends nothing, outlives the reaper's stall timeout, a SIGKILL of a
worker and a Redis restart (append-only file), and a resume finishes it with the units
of an unbudgeted build, each request sent to the provider once."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from hopindex.api.service import Hopindex
from hopindex.core.budget import BudgetLimits
from hopindex.core.models import JobState
from hopindex.testing.llm_server import LlmTestServer
from hopindex.testing.redis_server import RedisServer
from tests.methods.indexrag.conftest import llm_settings
from tests.workers.conftest import (
    INDEX,
    JOB_TIMEOUT_S,
    Cluster,
    embedder_settings,
    engine_counts,
    hotpot_corpus,
    kinds_and_texts,
    wait_until,
)

pytestmark = pytest.mark.integration

DOCUMENTS = 24
WORKERS = 2
# Each request takes this long, so both workers have a call in flight when the budget
# runs out.
LATENCY_S = 0.1
# Shorter than the time the test keeps the job paused: a reaper that took a paused job
# for stalled would re-drive or fail it within it.
STALL_S = 5
VISIBILITY_S = 4
REDIS_DOWN_S = 1.0


@pytest.fixture(scope="module")
def private_redis(aof_redis: RedisServer) -> str:
    """The ``cluster`` fixture's Redis: this module's restartable one."""
    return aof_redis.url


def _chat_requests(server: LlmTestServer) -> int:
    return sum(server.stats.by_kind.values())


def _sent_tokens(server: LlmTestServer) -> int:
    stats = server.stats
    return stats.prompt_tokens + stats.completion_tokens


def _settled(server: LlmTestServer, quiet_s: float = 1.0) -> int:
    """The server's chat request count once it has not moved for ``quiet_s``: the calls
    in flight when the job paused have all come back."""
    seen = _chat_requests(server)
    deadline = time.monotonic() + quiet_s
    while time.monotonic() < deadline:
        time.sleep(0.05)
        now = _chat_requests(server)
        if now != seen:
            seen, deadline = now, time.monotonic() + quiet_s
    return seen


def test_workers_racing_for_a_budget_pause_and_resume_through_kill_and_restart(
        tmp_path: Path, start_server: Callable[..., LlmTestServer],
        cluster: Callable[..., Cluster], aof_redis: RedisServer) -> None:
    """Half the clean build's tokens, two LLM workers of one call in flight each: the
    spend passes the budget by at most one call per worker; once paused nothing is
    sent, the reaper leaves the job alone past its stall timeout, and a worker killed
    and Redis restarted while paused change nothing; a resume with a higher budget
    ends with the clean build's units in both engines, and no request sent twice."""
    clean_server = start_server()
    corpus = hotpot_corpus(tmp_path, limit=DOCUMENTS)
    with Hopindex(llm_settings(tmp_path / "clean", clean_server,
                               **embedder_settings(clean_server))) as clean:
        reference = clean.ingest_paths(INDEX, [corpus])
        assert reference.state is JobState.SUCCEEDED, reference.reason
        expected = kinds_and_texts(clean)
    clean_calls = _chat_requests(clean_server)
    clean_tokens = _sent_tokens(clean_server)
    limit = clean_tokens // 2

    server = start_server(latency_s=LATENCY_S)
    c = cluster(server, llm_concurrency=1, job_stall_timeout_s=STALL_S, reaper_interval_s=1,
                visibility_timeout_s=VISIBILITY_S, task_time_limit_s=VISIBILITY_S - 1,
                **embedder_settings(server))
    c.start("engines", "control,embed", concurrency=2)
    c.start_beat()
    workers = [c.start(f"llm-{n}", "stage1,stage2", concurrency=1) for n in range(WORKERS)]
    with Hopindex(c.settings) as client:
        job = client.ingest_paths(INDEX, [corpus], budget=BudgetLimits(max_llm_tokens=limit))
        job = wait_until(client, job.job_id, lambda j: j.state is JobState.PAUSED)
        assert job.state is JobState.PAUSED, job.reason
        assert job.reason.startswith("LLM budget reached: max_llm_tokens")
        sent_calls = _settled(server)
        spent = _sent_tokens(server)
        # The stated bound: what the account admits never passes the limit; the calls
        # in flight can pass it only by what they under-estimated, at most one call per
        # worker (each has one call in flight).
        assert limit // 2 < spent <= limit + WORKERS * server.stats.largest_call_tokens
        assert spent > 0 and sent_calls < clean_calls

        # Paused well past the stall timeout: not re-driven, not failed, nothing sent.
        time.sleep(STALL_S + 3)
        assert client.get_job(job.job_id).state is JobState.PAUSED
        assert _chat_requests(server) == sent_calls
        workers[0].kill()
        aof_redis.restart(down_s=REDIS_DOWN_S)
        after = client.get_job(job.job_id)
        assert after.state is JobState.PAUSED and after.pause == job.pause
        assert after.paused_tasks, "no paused task was noted for the resume"

        client.resume_job(job.job_id, max_llm_tokens=clean_tokens * 3)
        job = client.wait_for_job(job.job_id, timeout_s=JOB_TIMEOUT_S)
        got = kinds_and_texts(client)
    c.stop_all()
    assert job.state is JobState.SUCCEEDED, job.reason
    assert not job.errors
    assert got == expected  # 0 lost, 0 duplicated
    assert engine_counts(c) == (len(expected), len(expected))
    # Nothing done was redone: every request reached the provider once.
    assert _chat_requests(server) == clean_calls
    total = job.llm_total
    assert total.calls == clean_calls
    assert total.prompt_tokens + total.completion_tokens == _sent_tokens(server)
