"""A job waiting on the provider's batches (``waiting_on_provider``): not final, never
stalled, holding its index like a running job; cancelled at once, its batches with it
(embedded state and event log)."""

from __future__ import annotations

import time

import pytest

from hopindex.backends.protocols import IndexInfo
from hopindex.core.errors import IndexBusyError, LlmUnavailableError
from hopindex.core.events import EventType
from hopindex.core.models import Job, JobState
from hopindex.core.provider_batches import BatchState, ProviderBatch
from hopindex.core.settings import LlmMode
from hopindex.scheduler import provider_batches
from hopindex.scheduler.lifecycle import cancel_job
from hopindex.scheduler.progress import claim_phase
from hopindex.scheduler.reaper import stalled_jobs
from hopindex.scheduler.runtime import Runtime
from hopindex.testing.contracts.state_records import new_job
from hopindex.workers.tasks.reaper import reap_stalled_jobs
from tests.conftest import ClientFactory

pytestmark = pytest.mark.integration

INDEX = "curie"


def _waiting(updated_ago_s: float = 0.0) -> Job:
    job = new_job(INDEX)
    job.state = JobState.WAITING_ON_PROVIDER
    job.llm_mode = LlmMode.BATCH
    job.provider_batches = [ProviderBatch(token="t1", phase="indexrag.stage1",
                                          keys=["k1", "k2"], batch_id="batch_1",
                                          state=BatchState.IN_PROGRESS, total=2)]
    job.updated_at = time.time() - updated_ago_s
    return job


def test_a_waiting_job_is_not_stalled_and_holds_its_index(make_client: ClientFactory) -> None:
    """Quiet for longer than the stall timeout, a job waiting on the provider is neither
    re-driven nor failed by the reaper; a later job of its index, not allowed to wait,
    is refused naming it as waiting on the provider's batches and how to cancel it."""
    client = make_client(job_stall_timeout_s=3600, task_time_limit_s=60,
                         visibility_timeout_s=120)
    state = client.service.backends.state
    state.create_index(IndexInfo(name=INDEX, method="extractive", created_at=time.time()))
    job = _waiting(updated_ago_s=7200)
    state.create_job(job)
    assert stalled_jobs(state, time.time(), 3600) == []
    assert reap_stalled_jobs.apply().get() == []
    assert client.jobs.get_job(job.job_id).state is JobState.WAITING_ON_PROVIDER
    with pytest.raises(IndexBusyError) as busy:
        client.delete_documents(INDEX, ["d1"], wait=False)
    assert job.job_id in str(busy.value)
    assert "waiting on the provider's batches" in str(busy.value)
    assert f"hopindex jobs cancel {job.job_id}" in str(busy.value)


def test_cancelling_a_waiting_job_cancels_its_batches_and_ends_it(
        make_client: ClientFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """The cancel asks the provider to cancel the job's batches (the hook of
    scheduler/provider_batches.py, given the job as it reads cancelling) and ends the
    job cancelled at once, as a paused job's cancel does: no task of it runs to finish
    it. job.cancelled is published."""
    client = make_client()
    runtime = client.service.runtime
    asked: list[tuple[Runtime, Job]] = []
    monkeypatch.setattr(provider_batches, "cancel_provider_batches",
                        lambda rt, job: asked.append((rt, job)) or 1)
    job = _waiting()
    client.service.backends.state.create_job(job)
    cancelled = cancel_job(runtime, job.job_id)
    assert cancelled.state is JobState.CANCELLED
    assert [(rt, seen.job_id, seen.state) for rt, seen in asked] == [
        (runtime, job.job_id, JobState.CANCELLING)]
    assert asked[0][1].provider_batches[0].batch_id == "batch_1"
    events = client.service.backends.events.read_events(index=INDEX)
    assert [e.event_type for e in events] == [EventType.JOB_PROGRESS,
                                              EventType.JOB_CANCELLED]


def test_a_provider_that_cannot_be_told_does_not_keep_the_job_from_ending(
        make_client: ClientFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """When cancelling the batches fails, the job still ends cancelled, its reason
    saying they could not be cancelled and may still be billed."""
    client = make_client()

    def unreachable(runtime: Runtime, job: Job) -> int:
        raise LlmUnavailableError("the provider did not answer")

    monkeypatch.setattr(provider_batches, "cancel_provider_batches", unreachable)
    job = _waiting()
    client.service.backends.state.create_job(job)
    cancelled = client.jobs.cancel_job(job.job_id)
    assert cancelled.state is JobState.CANCELLED
    assert cancelled.reason.startswith("cancelled by request; its provider batches could "
                                       "not be cancelled (LlmUnavailableError")
    assert "may still run and be billed" in cancelled.reason


def test_a_phase_of_a_waiting_job_starts_as_a_running_jobs_does(
        make_client: ClientFactory) -> None:
    """Tasks sent again once a batch is in may finish a phase while another batch of the
    job is still out: the next phase is claimed, once, as for a running job."""
    client = make_client()
    state = client.service.backends.state
    job = _waiting()
    state.create_job(job)
    assert claim_phase(state, job.job_id, "indexrag.stage2")
    assert state.get_job(job.job_id).state is JobState.WAITING_ON_PROVIDER
