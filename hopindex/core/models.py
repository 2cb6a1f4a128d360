"""The data model: documents, units, jobs (docs/architecture.md)."""

from __future__ import annotations

import enum
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from hopindex.core.budget import BudgetLimits
from hopindex.core.embedding_usage import EmbeddingUsage
from hopindex.core.job_progress import overall_percent, step_percents
from hopindex.core.provider_batches import ProviderBatch
from hopindex.core.redact import redact_text
from hopindex.core.settings import LlmMode
from hopindex.core.token_multiplier import multiplier_record
from hopindex.core.tracing.propagation import SAMPLED, parse_traceparent


class UnitKind(enum.StrEnum):
    PASSAGE = "passage"
    AKU = "aku"
    BRIDGE = "bridge"
    PROPOSITION_AGGREGATE = "proposition_aggregate"
    SUMMARY = "summary"
    ENTITY_SUMMARY = "entity_summary"
    DOC_SUMMARY = "doc_summary"
    QA_PAIR = "qa_pair"


@dataclass(frozen=True, slots=True)
class Document:
    doc_id: str
    index: str
    title: str
    text: str
    content_hash: str
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def passage_text(self) -> str:
        """The text a passage unit holds: title and body, the gold-passage convention."""
        return f"{self.title}\n{self.text}" if self.title else self.text


@dataclass(frozen=True, slots=True)
class Unit:
    unit_id: str
    index: str
    kind: UnitKind
    text: str
    source_doc_ids: tuple[str, ...]
    method: str
    source_key: str
    entities: tuple[str, ...] = ()
    level: int = 0
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ScoredUnit:
    """A unit with the score one retriever (or a fusion of several) gave it."""

    unit: Unit
    score: float


@dataclass(frozen=True, slots=True)
class Hit:
    """A raw search hit: an id and the engine's score."""

    unit_id: str
    score: float


class JobState(enum.StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    # Cancel was asked: nothing new starts, tasks already running finish their item.
    CANCELLING = "cancelling"
    # The LLM budget cannot cover the next call: no task makes one, the unfinished items
    # stay outstanding on the job, and a resume drives them on. Neither final nor
    # stopping, and never stalled: nothing is expected of a paused job until then.
    PAUSED = "paused"
    # Its LLM work is with the provider's Batch API (core/provider_batches.py): no
    # worker holds it, a poller looks at its batches and sends its tasks again when
    # their results are in. Not stalled, and it holds its index like a running job.
    WAITING_ON_PROVIDER = "waiting_on_provider"
    SUCCEEDED = "succeeded"
    # Finished, but some work items failed for good: they are recorded on the index
    # as outstanding, and the next ingest or a repair of the index re-plans them.
    SUCCEEDED_WITH_ERRORS = "succeeded_with_errors"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def is_final(self) -> bool:
        return self in (JobState.SUCCEEDED, JobState.SUCCEEDED_WITH_ERRORS, JobState.FAILED,
                        JobState.CANCELLED)

    @property
    def is_stopping(self) -> bool:
        """Tasks of the job must start no new work (cancelled, failed, or on the way)."""
        return self in (JobState.CANCELLING, JobState.CANCELLED, JobState.FAILED)


class JobKind(enum.StrEnum):
    INGEST = "ingest"
    DELETE = "delete"
    REPAIR = "repair"  # re-plans an index's outstanding items, no new input
    REBUILD = "rebuild"  # builds the levels phases built only on request, no new input


class Stage(enum.StrEnum):
    """The runtime's own steps of every job. A job record also counts each phase of
    its index method under the phase's qualified name (``indexrag.stage1``)."""

    VALIDATE = "validate"
    EMBED = "embed"
    FINALIZE = "finalize"


def initial_counts() -> dict[str, StageCounts]:
    return {Stage.VALIDATE.value: StageCounts()}


@dataclass(slots=True)
class StageCounts:
    total: int = 0
    done: int = 0
    failed: int = 0
    skipped: int = 0

    @property
    def finished(self) -> int:
        """Items the stage is through with, whatever their outcome."""
        return self.done + self.failed + self.skipped

    def as_dict(self) -> dict[str, int]:
        return {"total": self.total, "done": self.done, "failed": self.failed,
                "skipped": self.skipped}


@dataclass(frozen=True, slots=True)
class ItemError:
    """Why one work item (a document, a group key) failed; the rest of the job went on.

    ``stage`` is ``validate`` or the qualified name of the phase that failed it.
    """

    item: str
    stage: str
    reason: str
    where: str = ""

    def as_dict(self) -> dict[str, str]:
        # Reasons quote error messages, which may quote a URL with its credentials.
        return {"item": self.item, "stage": str(self.stage),
                "reason": redact_text(self.reason), "where": self.where}


def is_repairable(stage: str) -> bool:
    """Whether failed items of ``stage`` are outstanding work a repair re-plans: every
    phase's are; validation failures need new input, not a retry."""
    return stage != Stage.VALIDATE.value


@dataclass(frozen=True, slots=True)
class FailedItem:
    """A work item that failed for good, kept on its index until a later job redoes it.

    ``phase`` names the phase that plans the item again (``indexrag.stage1``: a
    document id; ``indexrag.stage2``: a bridge entity; ``purge``: a replaced unit).
    """

    phase: str
    item: str
    reason: str
    job_id: str
    failed_at: float = field(default_factory=time.time)

    def as_dict(self) -> dict[str, Any]:
        return {"phase": self.phase, "item": self.item, "reason": redact_text(self.reason),
                "job_id": self.job_id, "failed_at": self.failed_at}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FailedItem:
        return cls(phase=str(data["phase"]), item=str(data["item"]), reason=str(data["reason"]),
                   job_id=str(data["job_id"]), failed_at=float(data["failed_at"]))


@dataclass(frozen=True, slots=True)
class Group:
    """What one group of a method's per-group phase produced (``GroupStore``): the units
    it wrote and the documents those units cite (sorted, each once), so a change to any
    member document finds the group to redo."""

    namespace: str
    key: str
    unit_ids: tuple[str, ...]
    members: tuple[str, ...]


@dataclass(slots=True)
class LlmUsage:
    """What LLM calls cost: one stage of a job, one query, or a total of several.

    ``cost`` is money at the prices in force when each call was made (the client
    prices it as it records it), so a later price change never rewrites a job's
    history. None: unpriced, or some of the calls counted here were unpriced, since
    a sum that skipped them would understate the bill.
    """

    calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    retries: int = 0
    limiter_wait_s: float = 0.0
    cost: float | None = None
    # Of ``calls``: the second requests sent for a reply that could not be read (a
    # repair) or was cut at its token budget (a retry with a larger budget).
    repairs: int = 0
    # What reading the replies forgave (backends/llm/reply_shapes.py): values taken in
    # lax mode (numbers as strings), elements dropped from a reply, replies whose
    # scores were rescaled from 0-1, and replies cut at their token budget.
    coerced: int = 0
    dropped: int = 0
    rescaled: int = 0
    truncated: int = 0

    # Counters shown only when non-zero: most stages never need them.
    READING_FIELDS = ("repairs", "coerced", "dropped", "rescaled", "truncated")

    @property
    def is_empty(self) -> bool:
        """Nothing recorded yet: its ``cost`` says nothing about prices."""
        return not (self.calls or self.cache_hits)

    def add(self, other: LlmUsage) -> None:
        self.cost = combined_cost(self.cost, self.is_empty, other.cost, other.is_empty)
        self.calls += other.calls
        self.cache_hits += other.cache_hits
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.retries += other.retries
        self.limiter_wait_s += other.limiter_wait_s
        for name in self.READING_FIELDS:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def as_dict(self) -> dict[str, float]:
        data: dict[str, float] = {
            "calls": self.calls, "cache_hits": self.cache_hits,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens, "retries": self.retries,
            "limiter_wait_s": round(self.limiter_wait_s, 6)}
        if self.cost is not None:  # unpriced: no figure at all, not a zero
            data["cost"] = round(self.cost, COST_DECIMALS)
        data.update({name: getattr(self, name) for name in self.READING_FIELDS
                     if getattr(self, name)})
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LlmUsage:
        cost = data.get("cost")
        return cls(calls=int(data.get("calls", 0)), cache_hits=int(data.get("cache_hits", 0)),
                   prompt_tokens=int(data.get("prompt_tokens", 0)),
                   completion_tokens=int(data.get("completion_tokens", 0)),
                   retries=int(data.get("retries", 0)),
                   limiter_wait_s=float(data.get("limiter_wait_s", 0.0)),
                   cost=None if cost is None else float(cost),
                   **{name: int(data.get(name, 0)) for name in cls.READING_FIELDS})


# A token at the cheapest prices is a fraction of a millionth; ten places keep it
# while dropping float noise from sums.
COST_DECIMALS = 10


def combined_cost(cost: float | None, empty: bool, other: float | None,
                  other_empty: bool) -> float | None:
    """The cost of two usages together: an empty one adds nothing, and an unpriced
    one makes the sum unknown (None) rather than short."""
    if other_empty:
        return cost
    if empty:
        return other
    if cost is None or other is None:
        return None
    return cost + other


def total_usage(usages: Iterable[LlmUsage]) -> LlmUsage:
    total = LlmUsage()
    for usage in usages:
        total.add(usage)
    return total


def _optional_count(value: Any) -> int | None:
    # A stored record's count, or None where it has none (null, or a record from before
    # the count was kept).
    return None if value is None else int(value)


@dataclass(slots=True)
class Job:
    job_id: str
    index: str
    kind: JobKind
    state: JobState = JobState.QUEUED
    # Work items per step, in the order the job met them: ``validate``, each phase of
    # the index method by its qualified name, ``embed``, ``finalize``.
    counts: dict[str, StageCounts] = field(default_factory=initial_counts)
    errors: list[ItemError] = field(default_factory=list)
    # LLM usage per phase name ("indexrag.stage1", ...), as the workers reported it.
    llm: dict[str, LlmUsage] = field(default_factory=dict)
    # What the embed steps asked of a remote embedding provider (empty for a local
    # model); apart from ``llm``, whose figures are the chat calls alone.
    embedding: EmbeddingUsage = field(default_factory=EmbeddingUsage)
    # Tokens of the documents the job's LLM phases work on, as it read them (the dry
    # run's estimate of their text, scheduler/dry_run_tokens.py): what ``llm`` is
    # divided by for its multiplier (core/token_multiplier.py). None: a job that runs no
    # LLM method, a delete, or a record from before it was counted.
    corpus_tokens: int | None = None
    # Groups (bridges, tree nodes, ...) a groups or levels phase rebuilt or removed.
    groups_rebuilt: int = 0
    groups_removed: int = 0
    # The kind of each phase the job ran (documents, groups, levels), by qualified name.
    phases: dict[str, str] = field(default_factory=dict)
    units_embedded: int = 0
    reason: str = ""
    created_at: float = field(default_factory=time.time)
    started_at: float | None = None
    finished_at: float | None = None
    # Last time any task reported on this job: the reaper's measure of progress.
    updated_at: float = field(default_factory=time.time)
    # The claims on its steps: which task run started each (scheduler/progress.py
    # ``claim_phase``), one per step. What task runs counted is settled beside the
    # record (``JobStore.update_job(..., once=key)``), not in it.
    settled: list[str] = field(default_factory=list)
    # Group units replaced by a groups or levels phase, purged by the next embed step.
    stale_units: list[str] = field(default_factory=list)
    # When the last job.progress event went out (throttling, see scheduler/lifecycle.py).
    events_at: float = 0.0
    # The highest overall percent the record reported: progress never reads lower
    # (core/job_progress.py). Bookkeeping, not part of what the job is.
    progress_floor: float = field(default=0.0, compare=False)
    # What the reaper did each time it re-drove this stalled job (scheduler/reaper.py).
    redrives: list[str] = field(default_factory=list)
    # The process running the job itself (no broker): host, pid, boot id, start time,
    # lease. Empty for jobs run by workers. See scheduler/recovery.py.
    owner: dict[str, Any] = field(default_factory=dict)
    # What the job's LLM calls may use before it pauses (see backends/llm/budget.py).
    budget: BudgetLimits = field(default_factory=BudgetLimits)
    # When it last paused, and the figures the pause reported (limits, spent, held,
    # the refused call's estimate); cleared by a resume.
    paused_at: float | None = None
    pause: dict[str, Any] = field(default_factory=dict)
    # Ids of the tasks (and chord callbacks) that ended without doing their work because
    # the job was paused: what a resume sends again on workers (scheduler/pause.py).
    paused_tasks: list[str] = field(default_factory=list)
    # The dry run's figures per phase, planned when the job was submitted, kept beside
    # ``llm_usage`` (what the calls really used): calls, prompt_tokens,
    # completion_tokens, cost and how each was estimated (scheduler/dry_run_plan.py).
    estimate: dict[str, dict[str, Any]] = field(default_factory=dict)
    # While it is queued behind another job of its index (scheduler/writers.py): the job
    # it waits for and its place in the line (1: next); both cleared at its turn.
    waits_for: str = ""
    queue_position: int = 0
    # How many records of input a queued job keeps until its turn (its documents, or
    # the ids it deletes), which any process can then start it from; -1: none kept,
    # the process that submitted it starts it (no broker) or it started at once.
    staged: int = -1
    # How its index-time LLM calls are made, and the provider batches it sent.
    llm_mode: LlmMode = LlmMode.SYNC
    provider_batches: list[ProviderBatch] = field(default_factory=list)
    # Its trace (core/tracing/propagation.py), empty when tracing was off at submit:
    # the job span's traceparent, its parent span and start, so the work done for it in
    # any process and at any later time (a re-drive, a resume) joins the same trace.
    trace: dict[str, str] = field(default_factory=dict)

    @property
    def trace_id(self) -> str:
        """The id of the job's trace, as trace views search it: "" when it has none, or
        when the sampler left it out (its spans are not kept)."""
        parsed = parse_traceparent(self.trace.get("traceparent"))
        if parsed is None or not parsed[2] & SAMPLED:
            return ""
        return f"{parsed[0]:032x}"

    def as_dict(self) -> dict[str, Any]:
        progress = self.progress()
        return {
            "job_id": self.job_id,
            "index": self.index,
            "kind": self.kind.value,
            "state": self.state.value,
            "counts": {stage: c.as_dict() for stage, c in self.counts.items()},
            "progress": progress,
            "progress_floor": progress["percent"],
            "errors": [e.as_dict() for e in self.errors],
            "missing": self.missing(),
            "llm": {**self.llm_total.as_dict(),
                    "stages": {stage: u.as_dict() for stage, u in sorted(self.llm.items())}},
            "embedding": self.embedding.as_dict(),
            "corpus_tokens": self.corpus_tokens,
            "token_multiplier": multiplier_record(self.llm_total, self.llm, self.corpus_tokens),
            "groups_rebuilt": self.groups_rebuilt,
            "groups_removed": self.groups_removed,
            "phases": dict(self.phases),
            "units_embedded": self.units_embedded,
            "reason": redact_text(self.reason),
            "created_at": self.created_at,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "updated_at": self.updated_at,
            "settled": list(self.settled),
            "events_at": self.events_at,
            "stale_units": list(self.stale_units),
            "redrives": [redact_text(note) for note in self.redrives],
            "owner": dict(self.owner),
            "budget": self.budget.as_dict(),
            "paused_at": self.paused_at,
            "pause": dict(self.pause),
            "paused_tasks": list(self.paused_tasks),
            "estimate": {phase: dict(figures) for phase, figures in self.estimate.items()},
            "waits_for": self.waits_for,
            "queue_position": self.queue_position,
            "staged": self.staged,
            "llm_mode": self.llm_mode.value,
            "provider_batches": [b.as_dict() for b in self.provider_batches],
            "trace_id": self.trace_id,
            "trace": dict(self.trace),
        }

    def view(self) -> dict[str, Any]:
        """The job as its readers get it (the HTTP API, ``--json``, the MCP tools): the
        record, each provider batch as a person follows it (``ProviderBatch.view``),
        without its requests' keys and waiting tasks, which run to thousands."""
        return {**self.as_dict(),
                "provider_batches": [b.view() for b in self.provider_batches]}

    def progress(self) -> dict[str, Any]:
        """How far each step is (items finished, whatever their outcome, of its total)
        and the job overall: 0 when just submitted, 100 only once it succeeded, never
        lower than it read before (core/job_progress.py)."""
        succeeded = self.state in (JobState.SUCCEEDED, JobState.SUCCEEDED_WITH_ERRORS)
        percent = overall_percent(self.counts, succeeded=succeeded, floor=self.progress_floor,
                                  uncounted=Stage.VALIDATE.value, last=Stage.FINALIZE.value)
        return {"percent": percent,
                "stages": step_percents(self.counts, succeeded=succeeded)}

    def missing(self) -> dict[str, int]:
        """Work items this job failed for good, per phase: what a repair would redo."""
        found: dict[str, set[str]] = {}
        for error in self.errors:
            if is_repairable(error.stage):
                found.setdefault(error.stage, set()).add(error.item)
        return {stage: len(items) for stage, items in sorted(found.items())}

    def count(self, stage: str) -> StageCounts:
        """The counts of ``stage`` (a step or a qualified phase name), started at zero."""
        return self.counts.setdefault(str(stage), StageCounts())

    def documents_phase(self) -> str | None:
        """The first documents phase the job ran: whose counts say how many documents
        were indexed, found unchanged or failed."""
        return next((name for name, kind in self.phases.items() if kind == "documents"), None)

    @property
    def llm_total(self) -> LlmUsage:
        return total_usage(self.llm.values())

    def add_llm_usage(self, stages: dict[str, LlmUsage]) -> None:
        for stage, usage in stages.items():
            self.llm.setdefault(stage, LlmUsage()).add(usage)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Job:
        counts = {str(k): StageCounts(**v) for k, v in data["counts"].items()}
        return cls(
            job_id=data["job_id"], index=data["index"], kind=JobKind(data["kind"]),
            state=JobState(data["state"]), counts=counts,
            errors=[ItemError(item=e["item"], stage=str(e["stage"]), reason=e["reason"],
                              where=e.get("where", "")) for e in data["errors"]],
            llm={stage: LlmUsage.from_dict(u)
                 for stage, u in data["llm"].get("stages", {}).items()},
            embedding=EmbeddingUsage.from_dict(data.get("embedding", {})),
            corpus_tokens=_optional_count(data.get("corpus_tokens")),
            groups_rebuilt=int(data.get("groups_rebuilt", 0)),
            groups_removed=int(data.get("groups_removed", 0)),
            phases={str(k): str(v) for k, v in data.get("phases", {}).items()},
            units_embedded=data["units_embedded"], reason=data["reason"],
            created_at=data["created_at"], started_at=data["started_at"],
            finished_at=data["finished_at"],
            updated_at=data.get("updated_at", data["created_at"]),
            settled=list(data.get("settled", [])),
            events_at=float(data.get("events_at", 0.0)),
            progress_floor=float(data.get("progress_floor", 0.0)),
            stale_units=list(data.get("stale_units", [])),
            redrives=list(data.get("redrives", [])),
            owner=dict(data.get("owner", {})),
            budget=BudgetLimits.from_dict(data.get("budget", {}), where="budget"),
            paused_at=data.get("paused_at"),
            pause=dict(data.get("pause", {})),
            paused_tasks=list(data.get("paused_tasks", [])),
            estimate={phase: dict(figures)
                      for phase, figures in data.get("estimate", {}).items()},
            waits_for=str(data.get("waits_for", "")),
            queue_position=int(data.get("queue_position", 0)),
            staged=int(data.get("staged", -1)),
            llm_mode=LlmMode(data.get("llm_mode", LlmMode.SYNC.value)),
            provider_batches=[ProviderBatch.from_dict(b)
                              for b in data.get("provider_batches", [])],
            trace={str(k): str(v) for k, v in data.get("trace", {}).items()},
        )


@dataclass(frozen=True, slots=True)
class Dispatch:
    """One fan-out of a job phase: the frozen Celery signatures of its tasks and of the
    callback that follows them, kept so the reaper can re-send what a broker lost."""

    phase: str
    tasks: list[dict[str, Any]]
    callback: dict[str, Any]
    created_at: float = field(default_factory=time.time)

    def as_dict(self) -> dict[str, Any]:
        return {"phase": self.phase, "tasks": self.tasks, "callback": self.callback,
                "created_at": self.created_at}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Dispatch:
        return cls(phase=data["phase"], tasks=list(data["tasks"]), callback=data["callback"],
                   created_at=float(data["created_at"]))


@dataclass(frozen=True, slots=True)
class EntityMention:
    """One document's mention of a normalised entity, and how it was found."""

    entity: str
    doc_id: str
    source: MentionSource
    count: int = 1


class MentionSource(enum.StrEnum):
    NER = "ner"  # a named entity found by the NLP backend
    TITLE = "title"  # the document's own title
    LEXICON = "lexicon"  # another document's title found in this document's text
    LLM = "llm"  # an entity an LLM listed


@dataclass(frozen=True, slots=True)
class Sentence:
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class EntitySpan:
    text: str
    label: str
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class TextAnalysis:
    """What the NLP backend found in one text: sentence bounds and named entities."""

    sentences: tuple[Sentence, ...]
    entities: tuple[EntitySpan, ...]
