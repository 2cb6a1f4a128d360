"""The client's own result types: what an operation returns that no runtime type
already describes. pydantic models, so a result reads the same from the service in
this process and from a server's JSON (``model_validate``), prints the same
(``model_dump(mode="json")``), and documents itself (``model_json_schema``).

Jobs, query results, plans and events keep their runtime types (``Job``,
``QueryResult``, ``IngestPlan``, ``Event``): both transports return those.
"""

from __future__ import annotations

import enum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from hopindex.api.client.wire import CitationView
from hopindex.core.llm_modes import ModeSource
from hopindex.core.settings import LlmMode


class _Result(BaseModel):
    # Frozen: a result is a reading, not a handle; extra fields are refused so that a
    # server answering with a field this client does not know fails loudly in tests
    # (the congruence suite) rather than being dropped in silence.
    model_config = ConfigDict(frozen=True, extra="forbid")

    def as_dict(self) -> dict[str, Any]:
        """The result as the HTTP API sends it."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=False)


class IndexSummary(_Result):
    """An index as listed: name, index method, creation time and options."""

    name: str
    method: str
    created_at: float
    options: dict[str, Any] = Field(default_factory=dict)


class IndexStatus(enum.StrEnum):
    READY = "ready"
    BUILDING = "building"
    PARTIAL = "partial"


class OutstandingWork(_Result):
    """What an index is missing: documents not fully indexed, stored text its units
    were not built from (only when verified), and failed items per phase."""

    documents: int = Field(description="documents stored but not fully indexed")
    changed_text: int = Field(description="of those, text marked indexed that its units "
                                          "were not built from (counted only when verified)")
    failed: dict[str, int] = Field(default_factory=dict,
                                   description="items that failed for good, per phase")
    items: list[dict[str, Any]] = Field(default_factory=list, description=(
        "the first failed items, with their reasons"))


class IndexDescription(IndexSummary):
    """An index described: what it holds (documents, units per kind), its status, what
    it is missing, its running jobs and the build state of its on-request levels."""

    documents: int
    units: dict[str, int] = Field(default_factory=dict, description="units per kind")
    status: IndexStatus = Field(description=(
        "partial: work is outstanding; an ingest of the same input or a repair completes it"))
    outstanding: OutstandingWork
    running_jobs: list[str] = Field(default_factory=list)
    levels: list[dict[str, Any]] = Field(default_factory=list, description=(
        "the levels phases the index's method builds only on request (global trees): how "
        "stale each is; a rebuild builds them again"))


class IndexBudget(_Result):
    """An index's default LLM budget: the limits set (an empty object: none)."""

    index: str
    budget: dict[str, Any] = Field(default_factory=dict)


class IndexLlmMode(_Result):
    """An index's default LLM mode: how its jobs that name none make their LLM calls."""

    index: str
    llm_mode: LlmMode | None = Field(description=(
        "the index's own default; null: none, its jobs run in the server's "
        "HOPINDEX_LLM_MODE"))
    effective: LlmMode = Field(description=(
        "what a job of the index that names no mode runs in: the index's default, else "
        "the server's"))


class WebhookInfo(_Result):
    """A registered webhook. The URL is shown without its userinfo or secret-looking
    query values; ``secret`` is there only in the answer to registering it."""

    webhook_id: str = Field(alias="id")
    index: str
    url: str
    created_at: float
    # None for a webhook registered before the choice was recorded (each delivering
    # process's own setting decides).
    allow_private: bool | None = Field(False, description=(
        "whether deliveries may reach loopback, private and other internal addresses: "
        "HOPINDEX_WEBHOOK_ALLOW_PRIVATE of the process that registered it, obeyed by every "
        "process that delivers; null for a webhook registered before it was recorded"))
    secret: str | None = None

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    def as_dict(self) -> dict[str, Any]:
        data = super().as_dict()
        if self.secret is None:  # listing never carries a secret, not even as null
            data.pop("secret")
        return data


class TransferCounts(_Result):
    """What an export or an import moved, per kind of record."""

    index: str
    documents: int = 0
    units: int = 0
    vectors: int = 0
    mentions: int = 0
    groups: int = 0
    records: int = 0


class PlanCost(_Result):
    """The planned phases' LLM cost in all, at the synchronous prices and at the batch
    price, whichever mode the ingest would run in."""

    sync: float = Field(ge=0, description="at HOPINDEX_LLM_PRICE_*, one request at a time")
    batch: float = Field(ge=0, description=(
        "through the provider's Batch API: sync less batch_discount"))
    batch_discount: float = Field(ge=0, lt=1, description=(
        "the share the Batch API takes off (HOPINDEX_LLM_BATCH_DISCOUNT)"))
    bound: bool = Field(description="some phase's cost is an upper estimate")
    left_out: list[str] = Field(description=(
        "phases that call an LLM whose cost is not known before they run: not in the sums"))


class IngestPlanView(_Result):
    """What an ingest would do and cost, computed without an LLM call or a write:
    documents new, changed, unchanged and invalid; each phase's LLM calls and tokens;
    the cost in all at the synchronous and the batch prices, and the mode the job would
    run in; the records that cannot be read (``errors``); embedding tokens at a
    provider."""

    index: str
    method: str
    model: str
    index_exists: bool
    documents: dict[str, int]
    phases: list[dict[str, Any]] = Field(default_factory=list)
    errors: list[dict[str, str]] = Field(default_factory=list)
    embedding: dict[str, Any] | None = None
    llm_mode: LlmMode = Field(description="the mode the ingest would run in")
    llm_mode_from: ModeSource = Field(description=(
        "where that mode comes from: the request (llm_mode), the index's default, or the "
        "server's settings (HOPINDEX_LLM_MODE)"))
    llm_cost: PlanCost | None = Field(description=(
        "null when no phase has a cost: no prices set, or no LLM call planned"))


class OperationInfo(_Result):
    """An operation a method registers for its indexes (e.g. ``links.list``)."""

    name: str
    method: str
    summary: str
    writes: bool
    params: dict[str, Any] = Field(default_factory=dict)


class DocumentView(_Result):
    """A document of an index as stored: its id, title and text, the hash an ingest
    compares, the metadata it was given, and where it is in the file it was read
    from."""

    doc_id: str
    index: str
    title: str
    text: str
    content_hash: str = Field(description=(
        "sha256 of the normalised title and text: an ingest of the same document skips it"))
    metadata: dict[str, Any] = Field(description=(
        "the metadata given with the document (hopindex's own fields left out)"))
    citation: CitationView | None = Field(description=(
        "file, pages and section of the whole document, for one read from a PDF, HTML, "
        "DOCX or Markdown file; null for one read from records"))
