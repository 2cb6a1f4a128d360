"""Pausing a job on its LLM budget and resuming it: one job.paused with the figures,
a record that keeps them, a reaper that leaves paused jobs alone, and a resume that
changes the limits and gives the job a fresh stall clock (eager mode, embedded state
and event log)."""

from __future__ import annotations

import time

import pytest

from hopindex.core.budget import BudgetLimits
from hopindex.core.errors import InvalidInputError
from hopindex.core.events import EventType
from hopindex.core.models import Job, JobState
from hopindex.scheduler.lifecycle import cancel_job
from hopindex.scheduler.pause import pause_job, resume_job
from hopindex.scheduler.reaper import stalled_jobs
from hopindex.testing.contracts.state_records import new_job
from hopindex.workers.tasks.reaper import reap_stalled_jobs
from tests.conftest import ClientFactory

pytestmark = pytest.mark.integration

INDEX = "curie"
FIGURES = {"limits": {"max_llm_tokens": 100}, "spent": {"tokens": 0, "cost": 0.0},
           "held": {"tokens": 0, "cost": 0.0}, "wanted": {"tokens": 500, "cost": 0.0}}
REASON = "LLM budget is below the cost of one call: max_llm_tokens 100"


def _running(updated_ago_s: float = 0.0) -> Job:
    job = new_job(INDEX)
    job.state = JobState.RUNNING
    job.budget = BudgetLimits(max_llm_tokens=100)
    job.updated_at = time.time() - updated_ago_s
    return job


def test_pause_publishes_job_paused_once_with_the_figures(make_client: ClientFactory) -> None:
    """Many refused tasks pausing at once: the job reads paused with the reason and
    figures, and exactly one job.paused carries them; the record round-trips."""
    client = make_client()
    job = _running()
    client.service.backends.state.create_job(job)
    for _ in range(3):
        paused = pause_job(client.service.runtime, job.job_id, REASON, FIGURES)
        assert paused is not None and paused.state is JobState.PAUSED
    stored = client.jobs.get_job(job.job_id)
    assert stored.state is JobState.PAUSED and not stored.state.is_final
    assert not stored.state.is_stopping
    assert stored.reason == REASON and stored.pause == FIGURES
    assert stored.paused_at is not None
    assert Job.from_dict(stored.as_dict()).budget == BudgetLimits(max_llm_tokens=100)
    events = client.service.backends.events.read_events(index=INDEX)
    assert [e.event_type for e in events] == [EventType.JOB_PAUSED]
    assert events[0].data["reason"] == REASON and events[0].data["budget"] == FIGURES
    assert events[0].data["state"] == "paused"


def test_only_running_jobs_pause(make_client: ClientFactory) -> None:
    """A cancelling job is not paused by a late refusal, and an unknown job is None."""
    client = make_client()
    job = _running()
    client.service.backends.state.create_job(job)
    cancel_job(client.service.runtime, job.job_id)
    late = pause_job(client.service.runtime, job.job_id, REASON, FIGURES)
    assert late is not None and late.state is JobState.CANCELLING
    assert pause_job(client.service.runtime, "no-such-job", REASON, FIGURES) is None


def test_the_reaper_leaves_paused_jobs_alone(make_client: ClientFactory) -> None:
    """A job paused for longer than the stall timeout is neither re-driven nor failed."""
    client = make_client(job_stall_timeout_s=3600, task_time_limit_s=60,
                           visibility_timeout_s=120)
    state = client.service.backends.state
    job = _running()
    state.create_job(job)
    pause_job(client.service.runtime, job.job_id, REASON, FIGURES)
    state.update_job(job.job_id, lambda record: setattr(record, "updated_at",
                                                        time.time() - 7200))
    assert stalled_jobs(state, time.time(), 3600) == []
    assert reap_stalled_jobs.apply().get() == []
    assert client.jobs.get_job(job.job_id).state is JobState.PAUSED


def test_resume_raises_the_limits_and_restarts_the_stall_clock(
        make_client: ClientFactory) -> None:
    """Resume: running again, the limit given replaced and the other kept, the pause
    cleared, updated now (not stalled), and job.resumed published."""
    client = make_client(job_stall_timeout_s=3600, task_time_limit_s=60,
                           visibility_timeout_s=120)
    state = client.service.backends.state
    job = _running()
    job.budget = BudgetLimits(max_llm_tokens=100, max_cost=0.5)
    state.create_job(job)
    pause_job(client.service.runtime, job.job_id, REASON, FIGURES)
    state.update_job(job.job_id, lambda record: setattr(record, "updated_at",
                                                        time.time() - 7200))
    resumed, _ = resume_job(client.service.runtime, job.job_id, max_cost=2.0)
    assert resumed.state is JobState.RUNNING
    assert resumed.budget == BudgetLimits(max_llm_tokens=100, max_cost=2.0)
    assert resumed.reason == "" and resumed.pause == {} and resumed.paused_at is None
    assert stalled_jobs(state, time.time(), 3600) == []
    events = client.service.backends.events.read_events(index=INDEX)
    assert [e.event_type for e in events] == [EventType.JOB_PAUSED, EventType.JOB_RESUMED]
    assert events[-1].data["budget"] == {"max_llm_tokens": 100, "max_cost": 2.0}


def test_resuming_a_job_that_is_not_paused_names_it(make_client: ClientFactory) -> None:
    """Resume of a running job is an InvalidInputError naming job_id and its state."""
    client = make_client()
    job = _running()
    client.service.backends.state.create_job(job)
    with pytest.raises(InvalidInputError, match=r"^job_id: .* is running, not paused"):
        resume_job(client.service.runtime, job.job_id)
    assert client.jobs.get_job(job.job_id).state is JobState.RUNNING
