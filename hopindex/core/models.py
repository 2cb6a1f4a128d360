"""The data model of DESIGN.md §3: documents, units, jobs."""

from __future__ import annotations

import enum
import time
from dataclasses import dataclass, field
from typing import Any


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
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def is_final(self) -> bool:
        return self in (JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED)


class JobKind(enum.StrEnum):
    INGEST = "ingest"
    DELETE = "delete"


class Stage(enum.StrEnum):
    """Pipeline stages whose counts the job record keeps, in pipeline order."""

    VALIDATE = "validate"
    STAGE1 = "stage1"
    EMBED = "embed"
    LINK = "link"
    STAGE2 = "stage2"
    FINALIZE = "finalize"


@dataclass(slots=True)
class StageCounts:
    total: int = 0
    done: int = 0
    failed: int = 0
    skipped: int = 0

    def as_dict(self) -> dict[str, int]:
        return {"total": self.total, "done": self.done, "failed": self.failed,
                "skipped": self.skipped}


@dataclass(frozen=True, slots=True)
class ItemError:
    """Why one document (or entity) failed; the rest of the job went on."""

    item: str
    stage: Stage
    reason: str
    where: str = ""

    def as_dict(self) -> dict[str, str]:
        return {"item": self.item, "stage": self.stage.value, "reason": self.reason,
                "where": self.where}


@dataclass(slots=True)
class Job:
    job_id: str
    index: str
    kind: JobKind
    state: JobState = JobState.QUEUED
    counts: dict[Stage, StageCounts] = field(
        default_factory=lambda: {stage: StageCounts() for stage in Stage})
    errors: list[ItemError] = field(default_factory=list)
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    bridge_entities_recomputed: int = 0
    bridge_entities_removed: int = 0
    units_embedded: int = 0
    reason: str = ""
    created_at: float = field(default_factory=time.time)
    started_at: float | None = None
    finished_at: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "job_id": self.job_id,
            "index": self.index,
            "kind": self.kind.value,
            "state": self.state.value,
            "counts": {stage.value: c.as_dict() for stage, c in self.counts.items()},
            "errors": [e.as_dict() for e in self.errors],
            "llm": {"calls": self.llm_calls, "prompt_tokens": self.prompt_tokens,
                    "completion_tokens": self.completion_tokens},
            "bridge_entities_recomputed": self.bridge_entities_recomputed,
            "bridge_entities_removed": self.bridge_entities_removed,
            "units_embedded": self.units_embedded,
            "reason": self.reason,
            "created_at": self.created_at,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Job:
        counts = {Stage(k): StageCounts(**v) for k, v in data["counts"].items()}
        for stage in Stage:
            counts.setdefault(stage, StageCounts())
        return cls(
            job_id=data["job_id"], index=data["index"], kind=JobKind(data["kind"]),
            state=JobState(data["state"]), counts=counts,
            errors=[ItemError(item=e["item"], stage=Stage(e["stage"]), reason=e["reason"],
                              where=e.get("where", "")) for e in data["errors"]],
            llm_calls=data["llm"]["calls"], prompt_tokens=data["llm"]["prompt_tokens"],
            completion_tokens=data["llm"]["completion_tokens"],
            bridge_entities_recomputed=data["bridge_entities_recomputed"],
            bridge_entities_removed=data["bridge_entities_removed"],
            units_embedded=data["units_embedded"], reason=data["reason"],
            created_at=data["created_at"], started_at=data["started_at"],
            finished_at=data["finished_at"],
        )


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
