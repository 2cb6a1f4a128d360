"""Job state changes publish their events; the reaper fails stalled jobs with a reason
(eager mode, embedded state and event log)."""

from __future__ import annotations

import time

import pytest

from hopindex.core.errors import JobFinishedError
from hopindex.core.events import EventType
from hopindex.core.models import Dispatch, Job, JobState
from hopindex.scheduler.lifecycle import cancel_job, fail_job
from hopindex.scheduler.reaper import stalled_jobs
from hopindex.testing.contracts.state_records import new_job
from hopindex.workers.tasks.reaper import reap_stalled_jobs
from tests.conftest import CURIE_CORPUS, ClientFactory, ingest_documents

pytestmark = pytest.mark.integration

INDEX = "curie"


def test_an_ingest_publishes_started_progress_and_ready(make_client: ClientFactory) -> None:
    """job.started first, a job.progress per phase, then index.ready carrying the
    index's units per kind, in log order and all for this job."""
    client = make_client()
    job = ingest_documents(client, INDEX, CURIE_CORPUS)
    events = client.service.backends.events.read_events(index=INDEX)
    types = [e.event_type for e in events]
    assert types[0] is EventType.JOB_STARTED and types[-1] is EventType.INDEX_READY
    phases = [e.data["phase"] for e in events if "phase" in e.data]
    assert phases == ["extractive.stage1", "embed:extractive.stage1", "extractive.link",
                      "extractive.stage2", "embed:extractive.stage2", "finalize"]
    assert {e.job_id for e in events} == {job.job_id}
    ready = events[-1].data
    units = client.service.backends.state.count_units(INDEX)
    assert ready["units"] == {k.value: n for k, n in units.items()}
    assert ready["documents"] == len(CURIE_CORPUS) and ready["failed"] == []


def _running(service_state: object, updated_ago_s: float) -> Job:
    job = new_job(INDEX)
    job.state = JobState.RUNNING
    job.updated_at = time.time() - updated_ago_s
    return job


def test_the_reaper_fails_only_stalled_running_jobs(make_client: ClientFactory) -> None:
    """A running job silent past the stall timeout is failed with a reason naming the
    timeout, and job.failed is published; a recent one and a finished one are left."""
    client = make_client(job_stall_timeout_s=3600, task_time_limit_s=60,
                           visibility_timeout_s=120)
    state = client.service.backends.state
    stalled, fresh = _running(state, 7200), _running(state, 10)
    finished = _running(state, 7200)
    finished.state = JobState.SUCCEEDED
    for job in (stalled, fresh, finished):
        state.create_job(job)
    assert [j.job_id for j in stalled_jobs(state, time.time(), 3600)] == [stalled.job_id]
    assert reap_stalled_jobs.apply().get() == [stalled.job_id]
    failed = client.jobs.get_job(stalled.job_id)
    assert failed.state is JobState.FAILED
    assert "HOPINDEX_JOB_STALL_TIMEOUT_S" in failed.reason
    assert client.jobs.get_job(fresh.job_id).state is JobState.RUNNING
    assert client.jobs.get_job(finished.job_id).state is JobState.SUCCEEDED
    published = client.service.backends.events.read_events(index=INDEX)
    assert [(e.event_type, e.job_id) for e in published] == [
        (EventType.JOB_FAILED, stalled.job_id)]


def test_a_job_out_of_redrives_is_failed_naming_them(make_client: ClientFactory) -> None:
    """A stalled job that was already re-driven HOPINDEX_JOB_MAX_REDRIVES times is
    failed, not re-driven again, and the reason counts the re-drives; its recorded
    fan-outs are cleared with it."""
    client = make_client(job_stall_timeout_s=3600, task_time_limit_s=60,
                           visibility_timeout_s=120, job_max_redrives=1)
    state = client.service.backends.state
    job = _running(state, 7200)
    job.redrives.append("re-sent 1 of 4 tasks of stage1 after 7200 s without progress")
    state.create_job(job)
    state.add_dispatch(job.job_id, Dispatch(phase="stage1", tasks=[], callback={}))
    assert reap_stalled_jobs.apply().get() == [job.job_id]
    failed = client.jobs.get_job(job.job_id)
    assert failed.state is JobState.FAILED
    assert "after 1 re-drive(s)" in failed.reason
    assert state.last_dispatch(job.job_id) is None


def test_final_jobs_are_not_failed_or_cancelled_again(make_client: ClientFactory) -> None:
    """Failing a finished job changes nothing; cancelling one is a conflict naming it
    (decided inside the state update, so a job ending just before the cancel is refused
    the same way, never with a 400)."""
    client = make_client()
    job = ingest_documents(client, INDEX, CURIE_CORPUS[:2])
    assert fail_job(client.service.runtime, job.job_id, "late").state is JobState.SUCCEEDED
    with pytest.raises(JobFinishedError, match="already succeeded"):
        cancel_job(client.service.runtime, job.job_id)


def test_cancel_is_cancelling_until_a_phase_ends(make_client: ClientFactory) -> None:
    """Cancel leaves the job ``cancelling`` (asking twice changes nothing); the next
    phase boundary ends it ``cancelled`` with job.cancelled published."""
    from hopindex.scheduler.lifecycle import start_phase

    client = make_client()
    job = _running(client.service.backends.state, 0)
    client.service.backends.state.create_job(job)
    assert cancel_job(client.service.runtime, job.job_id).state is JobState.CANCELLING
    assert cancel_job(client.service.runtime, job.job_id).state is JobState.CANCELLING
    assert not client.jobs.get_job(job.job_id).state.is_final
    assert start_phase(client.service.runtime, job.job_id, "extractive.stage2", "extractive.stage2",
                       5) is False
    ended = client.jobs.get_job(job.job_id)
    assert ended.state is JobState.CANCELLED and ended.finished_at is not None
    assert "extractive.stage2" not in ended.counts  # the phase never started
    published = [e.event_type for e in client.service.backends.events.read_events(index=INDEX)]
    assert published == [EventType.JOB_PROGRESS, EventType.JOB_CANCELLED]


def test_the_reaper_ends_a_quiet_cancelling_job(make_client: ClientFactory) -> None:
    """A cancelling job whose phase callback was lost is ended ``cancelled`` by the
    reaper once silent past the stall timeout, saying why; a recent one is left."""
    client = make_client(job_stall_timeout_s=3600, task_time_limit_s=60,
                           visibility_timeout_s=120)
    state = client.service.backends.state
    quiet, recent = _running(state, 7200), _running(state, 10)
    quiet.state = recent.state = JobState.CANCELLING
    for job in (quiet, recent):
        state.create_job(job)
    assert reap_stalled_jobs.apply().get() == [quiet.job_id]
    ended = client.jobs.get_job(quiet.job_id)
    assert ended.state is JobState.CANCELLED
    assert "after the cancel" in ended.reason
    assert client.jobs.get_job(recent.job_id).state is JobState.CANCELLING
