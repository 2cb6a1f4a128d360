"""The embedded server's one-job slot: a job whose record already reads final holds it
only while its thread returns, so a client that saw the job end and sends the next
one is served, not told the server is busy; a job still running gets the 429."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from hopindex.api.blocking import BlockingRunner
from hopindex.api.job_launch import JobLauncher
from hopindex.core.errors import JobSlotBusyError
from hopindex.core.models import Job, JobKind, JobState
from hopindex.scheduler.submit import new_job
from tests.conftest import ClientFactory
from tests.waiting import wait_until


def _job(job_id: str, state: JobState) -> Job:
    job = new_job(job_id, "slot", JobKind.INGEST, {})
    job.state = state
    return job


def test_a_job_that_reads_final_lets_the_next_one_in(make_client: ClientFactory) -> None:
    """The first job's record reads succeeded while its thread is held: a second
    launch waits for that thread and gets its own job; while the first read running,
    a launch got the 429 busy at once."""
    client = make_client()
    state = client.service.backends.state
    release = threading.Event()
    first_running = threading.Event()

    def slow_first(job_id: str) -> Job:
        state.create_job(_job(job_id, JobState.RUNNING))
        first_running.set()
        release.wait(60)  # the test's own hold on the job's thread, released below

        def finish(job: Job) -> None:
            job.state = JobState.SUCCEEDED
            job.finished_at = time.time()

        done = state.update_job(job_id, finish)
        held.wait(60)  # the thread's last steps after the record reads final
        return done

    held = threading.Event()

    def second(job_id: str) -> Job:
        state.create_job(_job(job_id, JobState.SUCCEEDED))
        return state.get_job(job_id) or _job(job_id, JobState.SUCCEEDED)

    async def scenario() -> tuple[Job, Job]:
        launcher = JobLauncher(client, BlockingRunner(4))
        try:
            first = await launcher.launch(slow_first)
            with pytest.raises(JobSlotBusyError) as busy:
                await launcher.launch(second)
            assert busy.value.http_status == 429 and busy.value.code == "busy"
            release.set()
            await asyncio.to_thread(wait_until, lambda: (state.get_job(first.job_id)
                                                        or first).state.is_final,
                                    what="the first job's record to read final")
            waiting = asyncio.create_task(launcher.launch(second))
            # One turn of the loop runs the launch up to its first await: it has found
            # the slot taken by then (a yield, not a wait for the system under test).
            await asyncio.sleep(0)
            held.set()
            return first, await asyncio.wait_for(waiting, timeout=60)
        finally:
            launcher.close()

    first, later = asyncio.run(scenario())
    assert later.job_id != first.job_id and later.state is JobState.SUCCEEDED
