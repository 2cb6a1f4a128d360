"""The wire forms of the runtime records: a job (``Job.as_dict``), an event
(``Event.as_dict``) and a query's result (``QueryResult.as_dict``), each a pydantic
model declared once. The OpenAPI document takes their components from these models
(api/http/openapi/schemas.py, ``model_schemas``), and the remote client reads an answer
through them (``JobView.model_validate(data).to_runtime()``), so what the document says
of a record and what the client accepts cannot drift apart.

The server still writes a record with its runtime type's ``as_dict`` (a job's with
``Job.view``, its provider batches as a person reads them): these models describe
those bytes, they do not produce them. Every key ``as_dict`` always writes is
a field without a default (required); a key it writes only when there is something to
say (an unpriced cost, a zero reading counter) is ``X | SkipJsonSchema[None] = None``:
left out of the document's ``required``, never declared as null. A model is named for
its component plus ``View``, which the document drops (``_Generator.normalize_name``).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import SkipJsonSchema

from hopindex.core.budget import BudgetLimits
from hopindex.core.citations import Citation
from hopindex.core.embedding_usage import EmbeddingUsage
from hopindex.core.events import Event, EventType
from hopindex.core.models import (
    ItemError,
    Job,
    JobKind,
    JobState,
    LlmUsage,
    StageCounts,
)
from hopindex.core.provider_batches import BatchState, ProviderBatch
from hopindex.core.settings import LlmMode
from hopindex.methods.base import (
    Degradation,
    QueryResult,
    QueryUsage,
    QueryWarning,
    RankedPassage,
)
from hopindex.methods.plugin import PhaseKind

Count = Annotated[int, Field(ge=0)]
NonNegative = Annotated[float, Field(ge=0)]
Timestamp = Annotated[float, Field(description="seconds since the epoch (UTC)")]


def _absent_when_none(schema: dict[str, Any]) -> None:
    # Left out when None, never written as null: no default for the document to show.
    schema.pop("default", None)


Absent = Field(json_schema_extra=_absent_when_none)
# Money at the prices in force when the calls were made (HOPINDEX_LLM_PRICE_*).
Cost = Annotated[NonNegative | SkipJsonSchema[None], Absent, Field(
    description="at the prices in force when the calls were made; absent when any of "
                "them was unpriced")]
# A reading counter appears only when it is not zero.
ReadingCount = Annotated[Count | SkipJsonSchema[None], Absent]


class _Wire(BaseModel):
    # Extra keys refused, as the client's result models do (models.py): a server
    # writing a key no model declares fails the congruence suite and the fuzzing, not
    # a reader in silence.
    model_config = ConfigDict(frozen=True, extra="forbid",
                              model_title_generator=lambda model: model.__name__
                              .removesuffix("View"))


# -- a job ----------------------------------------------------------------------------

class StageCountsView(_Wire):
    total: Count
    done: Count
    failed: Count
    skipped: Count

    def to_runtime(self) -> StageCounts:
        return StageCounts(total=self.total, done=self.done, failed=self.failed,
                           skipped=self.skipped)


class StepProgressView(_Wire):
    finished: Count
    total: Count
    percent: NonNegative


class JobProgressView(_Wire):
    percent: Annotated[NonNegative, Field(description="the job overall: 100 only once it "
                                                      "succeeded, never lower than it read "
                                                      "before")]
    stages: Annotated[dict[str, StepProgressView], Field(description="per step")]


class ItemErrorView(_Wire):
    item: str
    stage: Annotated[str, Field(description="validate, or the qualified name of the phase "
                                            "that failed the item")]
    reason: str
    where: str

    def to_runtime(self) -> ItemError:
        return ItemError(item=self.item, stage=self.stage, reason=self.reason,
                         where=self.where)


class LlmUsageView(_Wire):
    # The reading counters (repairs: second requests, also in calls; coerced, dropped,
    # rescaled, truncated: what reading the replies forgave) appear only when not zero.
    calls: Count
    cache_hits: Count
    prompt_tokens: Count
    completion_tokens: Count
    retries: Count
    limiter_wait_s: NonNegative
    cost: Cost = None
    repairs: ReadingCount = None
    coerced: ReadingCount = None
    dropped: ReadingCount = None
    rescaled: ReadingCount = None
    truncated: ReadingCount = None

    def to_runtime(self) -> LlmUsage:
        return LlmUsage(calls=self.calls, cache_hits=self.cache_hits,
                        prompt_tokens=self.prompt_tokens,
                        completion_tokens=self.completion_tokens, retries=self.retries,
                        limiter_wait_s=self.limiter_wait_s, cost=self.cost,
                        **{name: getattr(self, name) or 0
                           for name in LlmUsage.READING_FIELDS})


class JobLlmUsageView(LlmUsageView):
    """The job's LLM usage in all, and per phase."""

    stages: Annotated[dict[str, LlmUsageView], Field(description="per phase, by qualified "
                                                                 "name")]


class EmbeddingUsageView(_Wire):
    """What a job's embed steps asked of a remote embedding provider; all zero for a
    local model. Cost at HOPINDEX_EMBEDDING_PRICE_PER_MTOK, absent when unpriced."""

    requests: Count
    tokens: Count
    cost: Cost = None

    def to_runtime(self) -> EmbeddingUsage:
        return EmbeddingUsage(requests=self.requests, tokens=self.tokens, cost=self.cost)


class TokenMultiplierView(_Wire):
    """LLM tokens per corpus token (core/token_multiplier.py)."""

    prompt: NonNegative
    completion: NonNegative
    total: NonNegative


class JobTokenMultiplierView(TokenMultiplierView):
    """The job's LLM tokens per token of the corpus it read, in all and per phase."""

    stages: Annotated[dict[str, TokenMultiplierView], Field(
        description="per phase, by qualified name")]


class ProviderBatchView(_Wire):
    """One batch of the job's LLM requests at the provider's Batch API, as a person
    follows it (``ProviderBatch.view``): its requests' keys and the tasks waiting for it
    stay in the record."""

    batch_id: Annotated[str, Field(description="the provider's id; empty until it has "
                                               "the batch")]
    phase: Annotated[str, Field(description="the phase whose requests it carries")]
    state: BatchState
    total: Annotated[Count, Field(description="its requests (lines)")]
    completed: Annotated[Count, Field(description="lines the provider answered")]
    failed: Annotated[Count, Field(description="lines the provider failed")]
    submitted_at: Timestamp
    ended_at: float | None
    error: str

    def to_runtime(self) -> ProviderBatch:
        # What the view leaves out is the record's bookkeeping: none of it is shown.
        return ProviderBatch(token="", phase=self.phase, keys=[], batch_id=self.batch_id,
                             state=self.state, total=self.total, completed=self.completed,
                             failed=self.failed, submitted_at=self.submitted_at,
                             ended_at=self.ended_at, error=self.error)


_BOOKKEEPING = "the runtime's bookkeeping, shown as the record holds it"


class JobView(_Wire):
    """A job record. Its counts are keyed by step: ``validate``, each phase of the
    index's method by its qualified name, ``embed``, ``finalize``."""

    job_id: str
    index: str
    kind: JobKind
    state: JobState
    counts: Annotated[dict[str, StageCountsView], Field(
        description="items per step, in the order the job met them: validate, each phase "
                    "of the index's method (<method>.<phase>), embed, finalize")]
    progress: JobProgressView
    progress_floor: NonNegative
    errors: list[ItemErrorView]
    missing: Annotated[dict[str, Count], Field(
        description="items the job failed for good, per phase: what a repair would redo")]
    llm: JobLlmUsageView
    embedding: EmbeddingUsageView
    corpus_tokens: Annotated[Count | None, Field(
        description="tokens of the documents the job's LLM phases read (new and changed "
                    "ones, a repair's outstanding ones, a rebuild's whole index), at the "
                    "dry run's 0.25 tokens per character; null for a delete, a method "
                    "without an LLM, or a job from before they were counted")]
    token_multiplier: Annotated[JobTokenMultiplierView | None, Field(
        description="LLM tokens per corpus token: prompt, completion and total, for the "
                    "job and per phase; null when corpus_tokens is null or 0")]
    groups_rebuilt: Annotated[Count, Field(description="groups a groups or levels phase "
                                                       "rebuilt")]
    groups_removed: Annotated[Count, Field(description="groups a groups or levels phase "
                                                       "removed")]
    phases: Annotated[dict[str, PhaseKind], Field(
        description="the kind of each phase the job ran, by qualified name")]
    units_embedded: Count
    reason: str
    created_at: Timestamp
    started_at: float | None
    finished_at: float | None
    updated_at: Annotated[float, Field(description="the last time a task reported on it")]
    settled: Annotated[list[str], Field(description=_BOOKKEEPING)]
    events_at: Annotated[float, Field(description=_BOOKKEEPING)]
    stale_units: Annotated[list[str], Field(description=_BOOKKEEPING)]
    redrives: Annotated[list[str], Field(description="what the reaper did each time it "
                                                     "re-drove the job")]
    owner: Annotated[dict[str, Any], Field(description="the process running the job itself "
                                                       "(no broker); empty on workers")]
    # Shapes shared with other components (Budget, JobPause, the dry-run plan): the
    # document grafts them on (openapi/budget.py, openapi/schemas.py).
    budget: dict[str, float]
    paused_at: Annotated[float | None, Field(
        description="when it last paused (seconds since the epoch); null when it is not "
                    "paused")]
    pause: dict[str, Any]
    paused_tasks: Annotated[list[str], Field(
        description="on workers: the tasks a resume sends again")]
    estimate: dict[str, dict[str, Any]]
    waits_for: Annotated[str, Field(description="while queued: the job of its index it "
                                                "waits for to end (empty once its turn "
                                                "came)")]
    queue_position: Annotated[Count, Field(description="while queued: its place among the "
                                                       "index's waiting jobs, 1 next; 0 "
                                                       "once its turn came")]
    staged: Annotated[int, Field(ge=-1, description=_BOOKKEEPING)]
    llm_mode: Annotated[LlmMode, Field(
        description="how its index-time LLM calls are made: sync, one request at a time; "
                    "batch, through the provider's Batch API")]
    provider_batches: Annotated[list[ProviderBatchView], Field(
        description="in batch mode, the batches it sent, oldest first; empty in sync mode")]
    trace_id: Annotated[str, Field(
        description="the id of its OpenTelemetry trace (hex); empty when tracing was off "
                    "when it was submitted")] = ""
    trace: Annotated[dict[str, str], Field(description=_BOOKKEEPING)] = {}

    def to_runtime(self) -> Job:
        return Job(
            job_id=self.job_id, index=self.index, kind=self.kind, state=self.state,
            counts={stage: c.to_runtime() for stage, c in self.counts.items()},
            errors=[e.to_runtime() for e in self.errors],
            llm={stage: u.to_runtime() for stage, u in self.llm.stages.items()},
            embedding=self.embedding.to_runtime(), corpus_tokens=self.corpus_tokens,
            groups_rebuilt=self.groups_rebuilt, groups_removed=self.groups_removed,
            phases={name: kind.value for name, kind in self.phases.items()},
            units_embedded=self.units_embedded, reason=self.reason,
            created_at=self.created_at, started_at=self.started_at,
            finished_at=self.finished_at, updated_at=self.updated_at,
            settled=list(self.settled), events_at=self.events_at,
            progress_floor=self.progress_floor, stale_units=list(self.stale_units),
            redrives=list(self.redrives), owner=dict(self.owner),
            budget=BudgetLimits.from_dict(self.budget, where="budget"),
            paused_at=self.paused_at, pause=dict(self.pause),
            paused_tasks=list(self.paused_tasks),
            estimate={phase: dict(figures) for phase, figures in self.estimate.items()},
            waits_for=self.waits_for, queue_position=self.queue_position,
            staged=self.staged, llm_mode=self.llm_mode,
            provider_batches=[b.to_runtime() for b in self.provider_batches],
            trace=dict(self.trace))


# -- an event -------------------------------------------------------------------------

class EventView(_Wire):
    """One entry of the event log, as server-sent events and webhook bodies carry it."""

    id: Annotated[str, Field(description="the log's cursor (Last-Event-ID)")]
    type: EventType
    index: str
    job_id: str
    data: dict[str, Any]
    created_at: Timestamp

    def to_runtime(self) -> Event:
        return Event(event_id=self.id, event_type=self.type, index=self.index,
                     job_id=self.job_id, data=dict(self.data), created_at=self.created_at)


# -- a query's result -----------------------------------------------------------------

class PassageViaView(_Wire):
    """The unit that led to the passage (provenance)."""

    unit_id: str
    kind: str
    text: str


class CitationView(_Wire):
    """Where the passage is in the file it was read from."""

    file: Annotated[str, Field(description="the file's path inside the folder ingested, or "
                                           "its name (an upload's name)")]
    page: Annotated[int | None, Field(description="the page the passage starts on (PDF)")]
    page_end: Annotated[int | None, Field(description="the page it ends on, when it spans "
                                                      "several")]
    section: Annotated[str | None, Field(description="its section's heading path, "
                                                     "'Chapter > Section'")]


class PassageView(_Wire):
    rank: int
    doc_id: str
    title: str
    text: str
    score: float
    via: PassageViaView
    citation: Annotated[CitationView | None, Field(
        description="file, page and section, for a document read from a PDF, HTML, DOCX "
                    "or Markdown file; null for one read from records")] = None

    def to_runtime(self) -> RankedPassage:
        citation = (None if self.citation is None
                    else Citation.from_dict(self.citation.model_dump()))
        return RankedPassage(rank=self.rank, doc_id=self.doc_id, title=self.title,
                             text=self.text, score=self.score, via_unit_id=self.via.unit_id,
                             via_kind=self.via.kind, via_text=self.via.text,
                             citation=citation)


class DegradationView(_Wire):
    step: Annotated[str, Field(description="the step that did not run as designed: answer, "
                                           "decompose, plan, judge, reasoning step 2, ...")]
    reason: Annotated[str, Field(description="why: the LLM error's message (the query's LLM "
                                             "deadline passed, an unusable reply, a refused "
                                             "request) or the method's note on its "
                                             "fallback")]

    def to_runtime(self) -> Degradation:
        return Degradation(step=self.step, reason=self.reason)


class QueryWarningView(_Wire):
    code: Annotated[str, Field(description="stable, for programs: index_partial (the index "
                                           "holds documents or items not fully indexed), "
                                           "index_building (a job is changing it)")]
    message: Annotated[str, Field(description="for people: the index's status, what is "
                                              "outstanding and what completes it (a "
                                              "repair, or waiting for the job)")]

    def to_runtime(self) -> QueryWarning:
        return QueryWarning(code=self.code, message=self.message)


class QueryUsageView(_Wire):
    llm_calls: Count
    prompt_tokens: Count
    completion_tokens: Count
    cache_hits: Count
    embedding_tokens: Annotated[Count, Field(
        description="tokens a remote embedder reported (0: a local model); in cost only "
                    "when the embedding price is set")]
    llm_retries: Count
    limiter_wait_s: NonNegative
    phases_s: dict[str, float]
    cost: Cost = None
    replies: Annotated[dict[str, int] | SkipJsonSchema[None], Absent, Field(
        description="what reading the LLM replies forgave, only when something was: "
                    "coerced, dropped, rescaled (0-1 scores read on 0-10), truncated")] = None

    def to_runtime(self) -> QueryUsage:
        return QueryUsage(llm_calls=self.llm_calls, prompt_tokens=self.prompt_tokens,
                          completion_tokens=self.completion_tokens,
                          cache_hits=self.cache_hits, llm_retries=self.llm_retries,
                          limiter_wait_s=self.limiter_wait_s, phases_s=dict(self.phases_s),
                          embedding_tokens=self.embedding_tokens, cost=self.cost,
                          replies=dict(self.replies or {}))


class QueryResultView(_Wire):
    """A query's answer: the passages, the answer when the method gives one, and the
    steps that degraded."""

    question: str
    method: str
    index: str
    answer: Annotated[str | None, Field(
        description="null from a retrieval-only method, or when the answer step degraded "
                    "(see degraded): the passages are still returned")]
    answer_truncated: Annotated[bool, Field(
        description="the answer reply was cut at its token budget (finish_reason length); "
                    "the answer is kept")]
    degraded: Annotated[list[DegradationView], Field(
        description="every step that degraded, LLM or not; empty when none did. A failed "
                    "LLM step is never an error status: the query answers 200 with what it "
                    "retrieved")]
    passages: list[PassageView]
    trace: Annotated[dict[str, Any], Field(
        description="the method's decisions, step by step (degraded repeated in it)")]
    usage: QueryUsageView
    latency_s: Annotated[NonNegative, Field(
        description="the query's own time, without embedder_load_s")]
    embedder_load_s: Annotated[NonNegative, Field(
        description="seconds the query waited for the embedding model to load and warm up "
                    "(its first use in the server's process); 0 once it is loaded")]
    warnings: Annotated[list[QueryWarningView], Field(
        description="what the answer rests on that the caller should know: an index that "
                    "is partial or building still answers, with a warning naming its "
                    "status and the fix; empty when there is none")]
    trace_id: Annotated[str, Field(
        description="the id of the query's OpenTelemetry trace (hex); empty when tracing "
                    "is off")] = ""

    def to_runtime(self) -> QueryResult:
        return QueryResult(question=self.question, method=self.method, index=self.index,
                           passages=[p.to_runtime() for p in self.passages],
                           answer=self.answer, trace=dict(self.trace),
                           usage=self.usage.to_runtime(), latency_s=self.latency_s,
                           degraded=[d.to_runtime() for d in self.degraded],
                           answer_truncated=self.answer_truncated,
                           embedder_load_s=self.embedder_load_s,
                           warnings=[w.to_runtime() for w in self.warnings],
                           trace_id=self.trace_id)
