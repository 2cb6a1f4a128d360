"""The wire models read exactly what the runtime records write: a job, an event and a
query's result go through their view and back to the same record, with every
optional part (prices, reading counters, a pause, a plan) present and absent."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from hopindex.api.client.wire import EventView, JobView, QueryResultView
from hopindex.core.budget import BudgetLimits
from hopindex.core.embedding_usage import EmbeddingUsage
from hopindex.core.events import Event, EventType
from hopindex.core.models import ItemError, Job, JobKind, JobState, LlmUsage, StageCounts
from hopindex.core.provider_batches import BatchState, ProviderBatch
from hopindex.core.settings import LlmMode
from hopindex.methods.base import (
    QueryResult,
    QueryUsage,
    QueryWarning,
    RankedPassage,
)


def a_job() -> Job:
    return Job(job_id="j1", index="curie", kind=JobKind.INGEST, state=JobState.PAUSED,
               counts={"validate": StageCounts(total=3, done=2, failed=1),
                       "indexrag.stage1": StageCounts(total=2, done=1)},
               errors=[ItemError(item="d3", stage="validate", reason="no text", where="l3"),
                       ItemError(item="d2", stage="indexrag.stage1", reason="bad reply")],
               llm={"indexrag.stage1": LlmUsage(calls=2, prompt_tokens=10, cost=0.25,
                                                repairs=1, rescaled=1),
                    "indexrag.stage2": LlmUsage(calls=1, completion_tokens=3)},
               embedding=EmbeddingUsage(requests=1, tokens=7, cost=0.1), corpus_tokens=40,
               phases={"indexrag.stage1": "documents"}, reason="paused",
               started_at=2.0, settled=["a"], stale_units=["u"], redrives=["r"],
               owner={"pid": 1}, budget=BudgetLimits(max_llm_tokens=100), paused_at=3.0,
               pause={"limits": {"max_llm_tokens": 100}, "stage": "indexrag.stage1"},
               paused_tasks=["t"], estimate={"indexrag.stage1": {"calls": 2}},
               waits_for="j0", queue_position=1, staged=4, events_at=1.5,
               progress_floor=10.0)


def a_batch_job() -> Job:
    """A job in batch mode waiting on two provider batches, one not sent yet."""
    return Job(job_id="j3", index="i", kind=JobKind.INGEST,
               state=JobState.WAITING_ON_PROVIDER, llm_mode=LlmMode.BATCH,
               provider_batches=[
                   ProviderBatch(token="t1", phase="indexrag.stage1", keys=["k1", "k2"],
                                 tasks=["task-1"], batch_id="batch_1",
                                 state=BatchState.IN_PROGRESS, total=2, completed=1,
                                 failed=1, held_tokens=10, held_cost=0.5,
                                 submitted_at=5.0),
                   ProviderBatch(token="t2", phase="indexrag.stage2", keys=["k3"],
                                 submitted_at=6.0, ended_at=7.0, error="cut")])


def test_a_job_reads_back_as_it_was_written() -> None:
    """What a reader of the job gets (``Job.view``, which the HTTP API writes) reads
    back through the wire model to the same view: the mode, and each provider batch as
    a person follows it."""
    for job in (a_job(), Job(job_id="j2", index="i", kind=JobKind.DELETE), a_batch_job()):
        data = job.view()
        assert JobView.model_validate(data).to_runtime().view() == data


def test_a_job_view_leaves_out_its_batches_bookkeeping() -> None:
    """A job's view shows its mode and its batches' ids, phases, states and counts,
    not the requests' keys, the waiting tasks or the budget held: those are the
    record's (``as_dict``), which can run to thousands of keys."""
    view = a_batch_job().view()
    assert view["llm_mode"] == "batch" and view["state"] == "waiting_on_provider"
    first, second = view["provider_batches"]
    assert first == {"batch_id": "batch_1", "phase": "indexrag.stage1",
                     "state": "in_progress", "total": 2, "completed": 1, "failed": 1,
                     "submitted_at": 5.0, "ended_at": None, "error": ""}
    assert (second["batch_id"], second["total"], second["error"]) == ("", 1, "cut")
    assert "keys" in a_batch_job().as_dict()["provider_batches"][0]


def test_an_event_reads_back_as_it_was_written() -> None:
    event = Event(event_id="7", event_type=EventType.JOB_PAUSED, index="i", job_id="j",
                  data={"stage": "x"}, created_at=1.0)
    assert EventView.model_validate(event.as_dict()).to_runtime() == event


@pytest.mark.parametrize("usage", [
    QueryUsage(),
    QueryUsage(llm_calls=2, prompt_tokens=5, cache_hits=1, llm_retries=1,
               limiter_wait_s=0.5, phases_s={"retrieve": 0.1}, embedding_tokens=3,
               cost=0.02, replies={"coerced": 1})])
def test_a_query_result_reads_back_as_it_was_written(usage: QueryUsage) -> None:
    result = QueryResult(question="q", method="naive", index="i", answer="a",
                         passages=[RankedPassage(rank=1, doc_id="d", title="t", text="x",
                                                 score=0.5, via_unit_id="u",
                                                 via_kind="passage", via_text="v")],
                         trace={"steps": [1]}, usage=usage, latency_s=0.25,
                         answer_truncated=True, embedder_load_s=1.0,
                         warnings=[QueryWarning(code="index_partial", message="m")])
    result.degrade("answer", "deadline")
    data = result.as_dict()
    assert QueryResultView.model_validate(data).to_runtime().as_dict() == data


def test_a_key_no_model_declares_is_refused() -> None:
    with pytest.raises(ValidationError):
        JobView.model_validate({**a_job().view(), "surprise": 1})
