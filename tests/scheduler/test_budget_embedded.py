"""LLM budgets that pause, in the process that runs the job itself (no broker): an
IndexRAG ingest against the local test server pauses where its budget says, calls
nothing while paused, and a resume finishes it with the units an unbudgeted build
makes, each request sent once; a budget below one call pauses before the first."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from hopindex.api.client.local import LocalClient
from hopindex.core.budget import BudgetLimits
from hopindex.core.errors import InvalidInputError
from hopindex.core.events import EventType
from hopindex.core.models import Job, JobState
from hopindex.readers import RawDocument, ReadResult, read_paths
from hopindex.scheduler.pause import wait_for_resume
from hopindex.scheduler.runtime import Runtime
from hopindex.testing.llm_server import LlmTestServer
from hopindex.workers import base as task_base
from tests import waiting
from tests.methods.indexrag.conftest import llm_settings, local_client
from tests.workers.conftest import hotpot_corpus, kinds_and_texts

pytestmark = pytest.mark.integration

INDEX = "hotpot"
DOCUMENTS = 12
LlmServerStarter = Callable[..., LlmTestServer]


class BackgroundIngest:
    """An ingest on a thread of its own, as the HTTP service runs one: it blocks while
    its job is paused, and the test resumes it from the main thread."""

    def __init__(self, client: LocalClient, documents: list[RawDocument],
                 budget: BudgetLimits | None) -> None:
        self.job: Job | None = None
        self.error: BaseException | None = None
        self.job_id = "budgeted-job"

        def run() -> None:
            try:
                self.job = client.ingest_read(INDEX, ReadResult(documents=documents),
                                              job_id=self.job_id, limits=budget)
            except BaseException as exc:  # reported to the test thread
                self.error = exc

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()

    def finished(self, timeout_s: float = 300.0) -> Job:
        self.thread.join(timeout_s)
        assert not self.thread.is_alive(), "the ingest never ended"
        if self.error is not None:
            raise self.error
        assert self.job is not None
        return self.job


def wait_until(client: LocalClient, job_id: str, ready: Callable[[Job], bool],
               timeout_s: float) -> Job:
    """The job once ``ready`` holds for it or it ended (it may not exist yet at first)."""

    def reached() -> Job | None:
        job = client.jobs.find_job(job_id)
        return job if job is not None and (ready(job) or job.state.is_final) else None

    job = waiting.wait_until(reached, what=f"job {job_id} to reach the awaited point",
                             timeout_s=timeout_s, interval_s=0.05)
    assert job is not None  # wait_until returns a truthy value
    return job


def watch_resume_waits(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """Set once a task of a job run in this process starts waiting for its resume
    (``wait_for_resume``, which it then runs unchanged): from there it sends nothing
    until the job is resumed."""
    entered = threading.Event()

    def watched(runtime: Runtime, job_id: str, poll_s: float = 0.5) -> Job | None:
        entered.set()
        return wait_for_resume(runtime, job_id, poll_s)

    monkeypatch.setattr(task_base, "wait_for_resume", watched)
    return entered


def _read(corpus: Path) -> list[RawDocument]:
    return list(read_paths([corpus]).documents)


def _clean_build(tmp_path: Path, server: LlmTestServer, corpus: Path
                 ) -> tuple[dict[str, tuple[str, str]], int, int]:
    """The unbudgeted build's units, its calls and tokens (prompt + completion)."""
    before = server.stats
    with local_client(llm_settings(tmp_path / "clean", server)) as clean:
        job = clean.ingest(INDEX, [corpus])
        assert job.state is JobState.SUCCEEDED, job.reason
        units = kinds_and_texts(clean)
    after = server.stats
    calls = sum(after.by_kind.values()) - sum(before.by_kind.values())
    tokens = (after.prompt_tokens + after.completion_tokens
              - before.prompt_tokens - before.completion_tokens)
    return units, calls, tokens


def test_a_paused_ingest_resumes_where_it_stopped(start_server: LlmServerStarter,
                                                  tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Half the tokens a clean build needs: the job pauses with the reason and figures
    and one job.paused, having spent no more than its budget plus the calls in flight
    under-estimated; nothing is sent while paused; a resume with a higher budget
    finishes it with the clean build's units, and across both runs every request went
    to the provider once (the clean build's count) and the job counts what was paid."""
    server = start_server()
    corpus = hotpot_corpus(tmp_path, limit=DOCUMENTS)
    expected, clean_calls, clean_tokens = _clean_build(tmp_path, server, corpus)
    server.reset()
    limit = clean_tokens // 2
    # Concurrency 1: one call in flight, so the spend passes the limit by at most one
    # call's under-estimate.
    client = local_client(llm_settings(tmp_path / "budgeted", server, llm_concurrency=1))
    waiting_for_resume = watch_resume_waits(monkeypatch)
    try:
        ingest = BackgroundIngest(client, _read(corpus), BudgetLimits(max_llm_tokens=limit))
        paused = wait_until(client, ingest.job_id, lambda j: j.state is JobState.PAUSED,
                            timeout_s=300)
        assert paused.state is JobState.PAUSED, paused.reason
        assert paused.reason.startswith("LLM budget reached: max_llm_tokens")
        figures = paused.pause
        assert figures["limits"] == {"max_llm_tokens": limit}
        spent = figures["spent"]["tokens"]
        biggest = figures["next_call"]["tokens"] * 4
        assert 0 < spent <= limit + biggest
        sent = server.stats
        assert sent.prompt_tokens + sent.completion_tokens == spent
        # Paused: nothing more goes out, however long it waits. The job runs on the
        # ingest's one thread, which is parked in the resume wait from here on.
        assert waiting_for_resume.wait(60), "the paused task never waited for a resume"
        assert sum(server.stats.by_kind.values()) == sum(sent.by_kind.values())
        events = [e for e in client.events.iterate_events(INDEX)
                  if e.event_type is EventType.JOB_PAUSED]
        assert len(events) == 1 and events[0].data["reason"] == paused.reason

        client.jobs.resume_job(ingest.job_id, BudgetLimits(max_llm_tokens=clean_tokens * 2))
        job = ingest.finished()
        assert job.state is JobState.SUCCEEDED, job.reason
        assert kinds_and_texts(client) == expected
        assert sum(server.stats.by_kind.values()) == clean_calls
        total = job.llm_total
        assert total.prompt_tokens + total.completion_tokens == clean_tokens
        assert total.calls == clean_calls
        kinds = [e.event_type for e in client.events.iterate_events(INDEX)]
        assert EventType.JOB_RESUMED in kinds and kinds[-1] is EventType.INDEX_READY
    finally:
        client.close()


def test_the_pause_shows_what_the_calls_in_flight_spent(start_server: LlmServerStarter,
                                                       tmp_path: Path) -> None:
    """Five documents in one stage-1 batch, each call answered after 0.3 s, under 1,000
    tokens: the second call is refused while the first is in flight (holding its
    estimate, having spent nothing), and the job pauses once that call came back. The
    pause shows the account as it is then: spent is what the provider answered for,
    not 0, nothing is held, and the reason says the same."""
    server = start_server(latency_s=0.3)
    client = local_client(llm_settings(tmp_path / "data", server))
    try:
        ingest = BackgroundIngest(client, _read(hotpot_corpus(tmp_path, limit=5)),
                                  BudgetLimits(max_llm_tokens=1000))
        paused = wait_until(client, ingest.job_id, lambda j: j.state is JobState.PAUSED,
                            timeout_s=120)
        assert paused.state is JobState.PAUSED, paused.reason
        sent = server.stats
        spent = sent.prompt_tokens + sent.completion_tokens
        assert sum(sent.by_kind.values()) >= 1 and spent > 0
        assert paused.pause["spent"]["tokens"] == spent
        assert paused.pause["held"]["tokens"] == 0
        assert f"{spent} spent, 0 held by calls in flight" in paused.reason, paused.reason
        client.jobs.cancel_job(ingest.job_id)
        assert ingest.finished().state is JobState.CANCELLED
    finally:
        client.close()


def test_an_index_default_below_one_call_pauses_before_the_first(
        start_server: LlmServerStarter, tmp_path: Path) -> None:
    """An index whose default budget is ten tokens: its next ingest, given no budget,
    gets that one and pauses saying the budget is below one call, having sent nothing;
    a limit given for the other kind keeps the default's; cancelling the paused job
    ends the ingest, cancelled."""
    server = start_server()
    documents = _read(hotpot_corpus(tmp_path, limit=4))
    client = local_client(llm_settings(tmp_path / "data", server))
    try:
        first = client.ingest_read(INDEX, ReadResult(documents=documents[:1]))
        assert first.state is JobState.SUCCEEDED, first.reason
        client.indexes.set_budget(INDEX, BudgetLimits(max_llm_tokens=10))
        server.reset()
        ingest = BackgroundIngest(client, documents[1:], budget=None)
        paused = wait_until(client, ingest.job_id, lambda j: j.state is JobState.PAUSED,
                            timeout_s=120)
        assert paused.state is JobState.PAUSED
        assert paused.budget == BudgetLimits(max_llm_tokens=10)
        assert paused.reason.startswith("LLM budget is below the cost of one call")
        assert "max_llm_tokens 10" in paused.reason
        assert sum(server.stats.by_kind.values()) == 0
        client.jobs.cancel_job(ingest.job_id)
        assert ingest.finished().state is JobState.CANCELLED
        assert client.jobs.get_job(ingest.job_id).state is JobState.CANCELLED
    finally:
        client.close()


def test_a_money_budget_needs_prices(start_server: LlmServerStarter, tmp_path: Path) -> None:
    """max_cost with no prices configured could never pause: refused, naming the field,
    before any job exists."""
    server = start_server()
    client = local_client(llm_settings(tmp_path / "data", server))
    try:
        with pytest.raises(InvalidInputError) as refused:
            client.ingest(INDEX, [hotpot_corpus(tmp_path, limit=2)],
                          limits=BudgetLimits(max_cost=1.0))
        assert refused.value.where == "max_cost"
        assert client.jobs.list_jobs(INDEX) == []
    finally:
        client.close()
