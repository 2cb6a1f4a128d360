"""Job progress is honest: a job just submitted reads 0 %, one that failed or has not
finished never reads 100 %, and the overall figure never goes down over a job's life,
though each phase adds its work to the totals only when the job reaches it."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from hopindex.core.errors import HopindexError
from hopindex.core.job_progress import UNFINISHED_MAX
from hopindex.core.models import Job, JobKind, JobState, StageCounts
from tests.conftest import CURIE_CORPUS, ClientFactory, ingest_documents
from tests.scheduler.test_submit_faults import Step, inject


def _job(state: JobState, **steps: tuple[int, int]) -> Job:
    """A record with each step's (finished, total), in the order given (``__`` in a
    name stands for the dot of a qualified phase name)."""
    job = Job(job_id="j", index="i", kind=JobKind.INGEST, state=state)
    job.counts = {name.replace("__", "."): StageCounts(total=total, done=finished)
                  for name, (finished, total) in steps.items()}
    return job


def _percent(job: Job) -> float:
    return float(job.progress()["percent"])


def test_a_job_just_submitted_reads_0_percent() -> None:
    """Validation is done before the job starts: 6 of 6 documents validated, and a first
    phase with nothing planned yet, is 0 % (it read 100 %)."""
    assert _percent(_job(JobState.RUNNING, validate=(6, 6))) == 0.0
    fresh = _job(JobState.RUNNING, validate=(6, 6), extractive__stage1=(0, 0))
    assert _percent(fresh) == 0.0
    assert fresh.progress()["stages"]["extractive.stage1"]["percent"] == 0.0
    assert _percent(_job(JobState.QUEUED, validate=(6, 6))) == 0.0


def test_a_failed_job_does_not_read_100_percent() -> None:
    """A job that failed planning its first phase (`stage1 0/0`) did none of its work:
    0 %, the step too; one that failed after finishing every step it had planned reads
    below 100, since the steps it never reached were work too."""
    failed = _job(JobState.FAILED, validate=(6, 6), extractive__stage1=(0, 0))
    assert _percent(failed) == 0.0
    assert failed.progress()["stages"]["extractive.stage1"]["percent"] == 0.0
    later = _job(JobState.FAILED, validate=(6, 6), extractive__stage1=(6, 6), embed=(6, 6))
    assert 0.0 < _percent(later) < 100.0
    assert later.progress()["stages"]["extractive.stage1"]["percent"] == 100.0


def test_only_a_job_that_succeeded_reads_100_percent() -> None:
    """Every step finished and finalize reached: 99.9 while running, 100 once succeeded
    (with errors too); a step with nothing to do that the job went past is complete."""
    steps = {"validate": (6, 6), "extractive__stage1": (6, 6), "extractive__link": (0, 0),
             "embed": (6, 6), "finalize": (0, 0)}
    assert _percent(_job(JobState.RUNNING, **steps)) == UNFINISHED_MAX
    done = _job(JobState.SUCCEEDED, **steps)
    assert _percent(done) == 100.0
    assert done.progress()["stages"]["extractive.link"]["percent"] == 100.0
    assert _percent(_job(JobState.SUCCEEDED_WITH_ERRORS, **steps)) == 100.0


def test_a_step_planned_later_holds_the_figure_instead_of_lowering_it() -> None:
    """After stage 1 (6 of 6) the job reads 50 %; the link phase then adds 6 items, which
    alone would make it 33 %: the record keeps the 50 it reported, through a round trip
    of its stored form, until the work done passes it."""
    job = _job(JobState.RUNNING, validate=(6, 6), extractive__stage1=(6, 6))
    assert _percent(job) == 50.0
    stored = Job.from_dict(job.as_dict())
    stored.counts["extractive.link"] = StageCounts(total=6)
    assert _percent(stored) == 50.0
    stored.counts["extractive.link"].done = 6
    assert _percent(Job.from_dict(stored.as_dict())) == 66.7


@pytest.mark.integration
def test_the_records_of_a_real_ingest_never_read_less(
        make_client: ClientFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every version of the job record an embedded extractive ingest stores, read back
    from the store, in order: the first reads 0 %, none reads less than the one before,
    none reads 100 until the job succeeded, the last reads 100. Four phases plan their
    work one after another (stage 1, link, stage 2, two embed steps), so a figure of the
    work known so far went 100, 50, 100, 66.7, ... here."""
    client = make_client()
    state = client.service.backends.state
    seen: list[tuple[JobState, float]] = []

    def observed(write: Callable[..., object]) -> Callable[..., object]:
        def wrapper(*args: object, **kwargs: object) -> object:
            result = write(*args, **kwargs)
            job_id = args[0].job_id if isinstance(args[0], Job) else str(args[0])
            stored = state.get_job(job_id)
            assert stored is not None
            seen.append((stored.state, _percent(stored)))
            return result
        return wrapper

    monkeypatch.setattr(state, "create_job", observed(state.create_job))
    monkeypatch.setattr(state, "update_job", observed(state.update_job))
    job = ingest_documents(client, "curie", CURIE_CORPUS)
    assert job.state is JobState.SUCCEEDED, job.reason
    assert len(job.counts) >= 5  # validate, the phases, embed, finalize
    percents = [percent for _, percent in seen]
    assert percents[0] == 0.0
    assert percents == sorted(percents), percents
    assert all(p < 100.0 for state_, p in seen if state_ is not JobState.SUCCEEDED)
    assert percents[-1] == 100.0
    assert len(set(percents)) >= 4, percents  # it moved along the way, not only at the end


@pytest.mark.integration
def test_a_real_job_failed_before_its_first_phase_reads_0(
        make_client: ClientFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """An ingest whose first phase could not be started fails with its documents
    validated and none of its work done: the stored record reads 0 %."""
    client = make_client()
    inject(monkeypatch, client, Step("first phase", "submit", "start_steps"))
    with pytest.raises(HopindexError, match="injected at first phase"):
        ingest_documents(client, "curie", CURIE_CORPUS)
    failed = client.jobs.list_jobs("curie", limit=1)[0]
    assert failed.state is JobState.FAILED
    assert failed.counts["validate"].done == len(CURIE_CORPUS)
    assert _percent(failed) == 0.0
