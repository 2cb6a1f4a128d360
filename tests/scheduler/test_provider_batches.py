"""Batch mode in the process that runs its job (no broker): the job's LLM calls go to the
provider's Batch API and the job follows its batches in place. A batch build equals the
synchronous build, at the batch price, whatever the replies look like."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from hopindex.api.client.local import LocalClient
from hopindex.core.budget import BudgetLimits
from hopindex.core.errors import NotFoundError
from hopindex.core.models import Job, JobState
from hopindex.core.provider_batches import BatchState
from hopindex.testing.llm_server import LlmTestServer, ReplyStyle
from tests import waiting
from tests.conftest import llm_settings, local_client
from tests.workers.conftest import (
    INDEX,
    assert_batches_cancelled,
    embedder_settings,
    hotpot_corpus,
    kinds_and_texts,
)

pytestmark = pytest.mark.integration

PRICES: dict[str, object] = {"llm_price_input_per_mtok": 2.0, "llm_price_output_per_mtok": 8.0}
BATCH: dict[str, object] = {"llm_mode": "batch", "llm_batch_min_items": 1,
                            "llm_batch_poll_interval_s": 0.02}


def _build(tmp: Path, server: LlmTestServer, corpus: Path, method: str,
           **settings: object) -> tuple[Job, dict[str, tuple[str, str]]]:
    with local_client(llm_settings(tmp, server, **PRICES, **embedder_settings(server),
                                   **settings)) as client:
        job = client.ingest(INDEX, [corpus], method=method)
        return job, kinds_and_texts(client)


def _phase_costs(job: Job) -> dict[str, float]:
    return {phase: round(usage.cost or 0.0, 9) for phase, usage in job.llm.items()}


@pytest.mark.parametrize("method", ["indexrag", "sirerag"])
def test_a_batch_build_of_hotpotqa_equals_the_synchronous_build_at_the_batch_price(
        method: str, tmp_path: Path, start_server: Callable[..., LlmTestServer]) -> None:
    """HotpotQA built in batch mode: the synchronous build's units exactly, every call a
    batch line (no chat call), each phase's cost half the synchronous one (the default
    discount), and the batches each phase needed on the record. (The whole of
    HotpotQA-100 is benchmarks/batch_mode.py's: minutes, not a unit test's seconds.)"""
    server = start_server()
    corpus = hotpot_corpus(tmp_path, limit=24)
    sync_job, expected = _build(tmp_path / "sync", server, corpus, method)
    server.reset()
    job, got = _build(tmp_path / "batch", server, corpus, method, **BATCH)
    assert job.state is JobState.SUCCEEDED, (job.reason, job.errors)
    assert got == expected
    assert server.stats.count("chat.completions") == 0
    assert set(server.stats.submissions.values()) == {1}
    sync_costs = _phase_costs(sync_job)
    assert set(_phase_costs(job)) == set(sync_costs)
    for phase, cost in _phase_costs(job).items():
        assert cost == pytest.approx(sync_costs[phase] / 2, rel=1e-6), phase
        assert job.llm[phase].calls == sync_job.llm[phase].calls, phase
    per_phase = {phase: sum(1 for b in job.provider_batches if b.phase == phase)
                 for phase in sync_costs}
    assert all(count >= 1 for count in per_phase.values()), per_phase


def test_messy_replies_in_batch_mode_build_what_they_build_synchronously(
        tmp_path: Path, start_server: Callable[..., LlmTestServer]) -> None:
    """Replies in every real form (fenced, prose around them, reasoning blocks, cut at
    their budget, a structured-output mode refused): the refused lines are asked again
    in the next batch at the weaker mode, cut ones with a larger budget, unusable ones
    repaired, each as its own line, and the units are the synchronous build's."""
    server = start_server(reply_styles=ReplyStyle.mixed())
    corpus = hotpot_corpus(tmp_path, limit=20)
    sync_job, expected = _build(tmp_path / "sync", server, corpus, "indexrag")
    server.reset()
    job, got = _build(tmp_path / "batch", server, corpus, "indexrag", **BATCH)
    assert job.state is sync_job.state, (job.reason, job.errors)
    assert got == expected
    assert server.stats.count("chat.completions") == 0
    assert len({b.phase for b in job.provider_batches}) == 2
    # More batches than phases: the stepped-down, repaired and larger-budget lines.
    assert len(job.provider_batches) > 2


def test_a_phase_too_small_for_a_batch_runs_synchronously(
        tmp_path: Path, start_server: Callable[..., LlmTestServer]) -> None:
    """With fewer items than ``llm_batch_min_items`` a phase makes its calls at once."""
    server = start_server()
    corpus = hotpot_corpus(tmp_path, limit=6)
    job, _ = _build(tmp_path / "batch", server, corpus, "indexrag",
                    **{**BATCH, "llm_batch_min_items": 50})
    assert job.state is JobState.SUCCEEDED
    assert not job.provider_batches
    assert server.stats.count("chat.completions") > 0


@pytest.fixture
def batch_client(request: pytest.FixtureRequest, tmp_path: Path,
                 start_server: Callable[..., LlmTestServer]
                 ) -> Iterator[tuple[LocalClient, LlmTestServer, Path]]:
    """A client in batch mode; its server takes ``request.param`` s over a batch."""
    server = start_server(batch_completion_s=getattr(request, "param", 0.5))
    corpus = hotpot_corpus(tmp_path, limit=24)
    settings = llm_settings(tmp_path / "batch", server, **PRICES, **embedder_settings(server),
                            **BATCH)
    with local_client(settings) as client:
        yield client, server, corpus


def _in_thread(work: Callable[[], Any]) -> threading.Thread:
    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    return thread


def test_a_budget_covering_part_of_a_batch_sends_that_part_and_pauses(
        tmp_path: Path, start_server: Callable[..., LlmTestServer]) -> None:
    """The job's token budget holds only some of the first batch's lines (at their
    estimates): those are sent, the job pauses with the rest, and a resume with a larger
    budget finishes it with the synchronous build's units."""
    server = start_server(batch_completion_s=0.5)
    corpus = hotpot_corpus(tmp_path, limit=24)
    reference = _build(tmp_path / "sync", server, corpus, "indexrag")[1]
    server.reset()
    with local_client(llm_settings(tmp_path / "batch", server, **PRICES,
                                   **embedder_settings(server), **BATCH)) as client:
        _pause_and_resume(client, server, corpus, reference)


def _pause_and_resume(client: LocalClient, server: LlmTestServer, corpus: Path,
                      reference: dict[str, tuple[str, str]]) -> None:
    # The job runs in this process, on the ingest's thread, which blocks while it is
    # paused (as the HTTP service runs one); the test resumes it from here.
    ingest = _in_thread(lambda: client.ingest(INDEX, [corpus], job_id=JOB_ID,
                                              limits=BudgetLimits(max_llm_tokens=6_000)))
    paused = waiting.wait_until(lambda: _job_in(client, JobState.PAUSED),
                                what="the job paused on its budget", timeout_s=120)
    assert paused.provider_batches, "nothing was sent before the pause"
    assert 0 < len(paused.provider_batches[0].keys) < 24, paused.provider_batches
    client.jobs.resume_job(JOB_ID, BudgetLimits(max_llm_tokens=10_000_000))
    ingest.join(300)
    done = client.jobs.get_job(JOB_ID)
    assert done.state is JobState.SUCCEEDED, (done.reason, done.errors)
    assert kinds_and_texts(client) == reference
    assert set(server.stats.submissions.values()) == {1}


JOB_ID = "batch-job"


def _job_in(client: LocalClient, state: JobState) -> Job | None:
    try:
        job = client.jobs.get_job(JOB_ID)
    except NotFoundError:
        return None
    return job if job.state is state else None


@pytest.mark.parametrize("batch_client", [60.0], indirect=True)
def test_cancelling_a_job_waiting_on_its_batch_cancels_the_batch(
        batch_client: tuple[LocalClient, LlmTestServer, Path]) -> None:
    """Cancelled while its first batch is out, the job ends cancelled and the
    provider's batch is cancelled; nothing is left outstanding."""
    client, server, corpus = batch_client
    ingest = _in_thread(lambda: client.ingest(INDEX, [corpus], job_id=JOB_ID))
    waiting.wait_until(
        lambda: (job := _job_in(client, JobState.WAITING_ON_PROVIDER)) is not None
        and any(b.batch_id for b in job.provider_batches),
        what="the batch with the provider", timeout_s=120)
    client.jobs.cancel_job(JOB_ID)
    ingest.join(120)
    done = client.jobs.get_job(JOB_ID)
    assert_batches_cancelled(done, server)


def test_an_expired_batch_sends_again_only_the_lines_it_did_not_run(
        tmp_path: Path, start_server: Callable[..., LlmTestServer]) -> None:
    """The first batch expires with half its lines answered: the next batch carries
    exactly the other half, and the build equals the synchronous one."""
    server = start_server(batch_expire_first=1)
    corpus = hotpot_corpus(tmp_path, limit=20)
    _, expected = _build(tmp_path / "sync", server, corpus, "indexrag")
    server.reset()
    job, got = _build(tmp_path / "batch", server, corpus, "indexrag", **BATCH)
    assert job.state is JobState.SUCCEEDED, (job.reason, job.errors)
    assert got == expected
    first, second = job.provider_batches[0], job.provider_batches[1]
    assert first.state is BatchState.EXPIRED
    expired = set(first.keys[len(first.keys) // 2:])
    assert set(second.keys) == expired
    submissions = server.stats.submissions
    assert {k for k, n in submissions.items() if n == 2} == expired
    assert set(submissions.values()) == {1, 2}


def _unnamed_batch_job(client: LocalClient, token: str) -> Job:
    """A running job whose batch was recorded, never named, long enough ago that its
    sender must have stopped between recording it and writing its id."""
    from hopindex.core.models import JobKind
    from hopindex.core.provider_batches import ProviderBatch

    state = client.service.backends.state
    job = Job(job_id=JOB_ID, index=INDEX, kind=JobKind.INGEST,
              state=JobState.WAITING_ON_PROVIDER)
    job.provider_batches.append(ProviderBatch(token=token, phase="indexrag.stage1",
                                              keys=["k1"], submitted_at=0.0))
    state.create_job(job)
    return job


def test_a_batch_recorded_but_never_named_is_found_by_its_token(
        tmp_path: Path, start_server: Callable[..., LlmTestServer]) -> None:
    """The provider has the batch (its sender stopped before writing the id): the
    poller finds it by the token in its metadata and follows it; nothing is sent."""
    from hopindex.backends.llm.batch_scope import PendingLine
    from hopindex.scheduler.provider_batches import poll_job_batches

    server = start_server()
    settings = llm_settings(tmp_path, server, **BATCH)
    with local_client(settings) as client:
        runtime = client.service.runtime
        _unnamed_batch_job(client, "tok-1")
        llm = runtime.backends.llm
        assert llm is not None
        body = {"model": server.config.model, "messages": [{"role": "user", "content": "hi"}]}
        batch_id = llm.submit_batch([PendingLine("k1", "indexrag.stage1", body)],
                                    metadata={"hopindex_token": "tok-1"})
        poll_job_batches(runtime, JOB_ID)
        job = client.jobs.get_job(JOB_ID)
    assert job.provider_batches[0].batch_id == batch_id
    assert job.provider_batches[0].settled
    assert server.stats.batches["batches_created"] == 1


def test_a_batch_recorded_but_never_sent_is_dropped(
        tmp_path: Path, start_server: Callable[..., LlmTestServer]) -> None:
    """The provider never got the batch: the poller drops the record, so its lines are
    free to be sent again, and the job is no longer waiting on the provider."""
    from hopindex.scheduler.provider_batches import poll_job_batches

    server = start_server()
    with local_client(llm_settings(tmp_path, server, **BATCH)) as client:
        _unnamed_batch_job(client, "tok-2")
        poll_job_batches(client.service.runtime, JOB_ID)
        job = client.jobs.get_job(JOB_ID)
    batch = job.provider_batches[0]
    assert batch.settled and batch.state is BatchState.FAILED and "never sent" in batch.error
    assert job.state is JobState.RUNNING


def _running_job(client: LocalClient) -> tuple[Any, Any]:
    """The client's runtime and state store, holding job ``JOB_ID``, running."""
    from hopindex.core.models import JobKind

    state = client.service.backends.state
    state.create_job(Job(job_id=JOB_ID, index=INDEX, kind=JobKind.INGEST,
                         state=JobState.RUNNING))
    return client.service.runtime, state


def _send_one_line(runtime: Any, server: LlmTestServer) -> Any:
    """``send_batch`` of one line for task-1 of the job, as a task whose call waits does."""
    from hopindex.backends.llm.batch_scope import PendingLine
    from hopindex.scheduler.provider_batches import send_batch

    body = {"model": server.config.model, "messages": [{"role": "user", "content": "hi"}]}
    return send_batch(runtime, JOB_ID, "indexrag.stage1", "task-1",
                      [PendingLine("k1", "indexrag.stage1", body)])


def _assert_cancelled_at_the_provider(batch: Any, server: LlmTestServer) -> None:
    """The record is settled and cancelling, and the provider was asked to cancel it."""
    assert batch.batch_id and batch.settled and batch.state is BatchState.CANCELLING
    provider = openai.OpenAI(base_url=server.base_url, api_key="test-key")
    assert provider.batches.retrieve(batch.batch_id).status in ("cancelling", "cancelled")


def test_a_cancel_while_the_provider_creates_the_batch_cancels_it_once_named(
        tmp_path: Path, start_server: Callable[..., LlmTestServer],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The cancel lands between the batch's record and its id: it settles a record with
    no id and asks the provider nothing. Once the provider answers with the id, the
    sender finds its record settled, keeps it so (cancelling, not validating) and asks
    the provider to cancel: no batch runs on for a stopped job."""
    from hopindex.scheduler.provider_batches import cancel_provider_batches

    server = start_server(batch_completion_s=60.0)
    with local_client(llm_settings(tmp_path, server, **BATCH)) as client:
        runtime, state = _running_job(client)
        llm = runtime.backends.llm
        assert llm is not None
        submit = llm.submit_batch

        def submit_then_cancelled(*args: Any, **kwargs: Any) -> str:
            batch_id = submit(*args, **kwargs)
            job = state.get_job(JOB_ID)
            assert job is not None and not job.provider_batches[0].batch_id
            assert cancel_provider_batches(runtime, job) == 0  # no id: nothing to ask
            return batch_id

        monkeypatch.setattr(llm, "submit_batch", submit_then_cancelled)
        _send_one_line(runtime, server)
        batch = client.jobs.get_job(JOB_ID).provider_batches[0]
    _assert_cancelled_at_the_provider(batch, server)


def test_a_cancel_holding_an_older_job_record_still_cancels_a_batch_named_since(
        tmp_path: Path, start_server: Callable[..., LlmTestServer]) -> None:
    """The canceller read the job before a task sent and named its batch: the batch is
    settled and cancelled at the provider all the same, since what is cancelled is
    what the settling update saw, not the canceller's older copy."""
    from hopindex.scheduler.provider_batches import cancel_provider_batches

    server = start_server(batch_completion_s=60.0)
    with local_client(llm_settings(tmp_path, server, **BATCH)) as client:
        runtime, state = _running_job(client)
        older = state.get_job(JOB_ID)
        assert older is not None and not older.provider_batches
        _send_one_line(runtime, server)
        assert cancel_provider_batches(runtime, older) == 1
        batch = client.jobs.get_job(JOB_ID).provider_batches[0]
    _assert_cancelled_at_the_provider(batch, server)


def test_a_task_of_a_stopping_job_sends_no_batch(
        tmp_path: Path, start_server: Callable[..., LlmTestServer]) -> None:
    """A task whose calls wait for a batch, of a job cancelled since it started, sends
    nothing: its cancel has already settled the job's batches, so one sent now would
    run, and be billed, with nobody to cancel it."""
    from hopindex.core.models import JobKind

    server = start_server(batch_completion_s=60.0)
    with local_client(llm_settings(tmp_path, server, **BATCH)) as client:
        runtime = client.service.runtime
        client.service.backends.state.create_job(Job(
            job_id=JOB_ID, index=INDEX, kind=JobKind.INGEST, state=JobState.CANCELLING))
        sent = _send_one_line(runtime, server)
        job = client.jobs.get_job(JOB_ID)
    assert sent is None and not job.provider_batches
    assert server.stats.batches.get("batches_created", 0) == 0
