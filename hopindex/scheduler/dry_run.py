"""Plan an ingest without running it: what would change, and what it would cost.

The same validation and content hashes as :func:`hopindex.scheduler.submit.submit_ingest`
sort the documents into new, changed, unchanged and invalid; each phase of the
index's method is then planned as an ingest job's is (scheduler/dry_run_plan.py).
Nothing is written: no job, no document, no unit, no LLM call, no cache entry.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from hopindex.core.errors import ConfigError, InvalidInputError
from hopindex.core.ids import validate_index_name
from hopindex.core.llm_modes import JobMode, batch_price, job_mode
from hopindex.core.models import COST_DECIMALS, Document, ItemError
from hopindex.core.settings import LlmMode
from hopindex.methods.plugin import IndexMethod, LlmUse
from hopindex.methods.registry import get_index_method
from hopindex.readers import RawDocument, ReadError
from hopindex.scheduler.dry_run_plan import PhasePlan, Planning, plan_phases
from hopindex.scheduler.dry_run_tokens import TOKENS_PER_CHAR, document_tokens
from hopindex.scheduler.file_documents import stale_documents
from hopindex.scheduler.runtime import Runtime
from hopindex.scheduler.submit import (
    default_method,
    method_mismatch,
    read_error_items,
    validate_documents,
)

# The plan's parts are defined with the planning; callers find them here too.
__all__ = ["DocumentCounts", "IngestPlan", "LlmCostPlan", "PhasePlan", "Planning",
           "plan_ingest"]


@dataclass(frozen=True, slots=True)
class DocumentCounts:
    new: int = 0
    changed: int = 0
    unchanged: int = 0
    invalid: int = 0
    # Documents of files read again that their new reading lacks: the ingest deletes
    # them (scheduler/file_documents.py).
    removed: int = 0

    @property
    def usable(self) -> int:
        """Valid documents, whether or not they need work."""
        return self.new + self.changed + self.unchanged

    def as_dict(self) -> dict[str, int]:
        return {"new": self.new, "changed": self.changed, "unchanged": self.unchanged,
                "invalid": self.invalid, "removed": self.removed}


@dataclass(frozen=True, slots=True)
class IngestPlan:
    """What ``hopindex ingest`` would do to ``index``, computed without doing it."""

    index: str
    method: str
    model: str
    index_exists: bool
    documents: DocumentCounts
    # The mode the ingest would run in, and where that came from (core/llm_modes.py).
    llm_mode: JobMode
    phases: list[PhasePlan] = field(default_factory=list)
    errors: list[ItemError] = field(default_factory=list)
    # Embedding tokens at a provider's embeddings endpoint; None with a local model.
    embedding: EmbeddingPlan | None = None
    # The phases' cost in all at both prices; None when no phase has a cost.
    llm_cost: LlmCostPlan | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"index": self.index, "method": self.method, "model": self.model,
                "index_exists": self.index_exists, "documents": self.documents.as_dict(),
                "phases": [p.as_dict() for p in self.phases],
                "errors": [e.as_dict() for e in self.errors],
                "embedding": self.embedding.as_dict() if self.embedding else None,
                "llm_mode": self.llm_mode.mode.value,
                "llm_mode_from": self.llm_mode.source.value,
                "llm_cost": self.llm_cost.as_dict() if self.llm_cost else None}


@dataclass(frozen=True, slots=True)
class LlmCostPlan:
    """The planned phases' LLM cost in all: at the synchronous prices (``sync``) and
    through the provider's Batch API (``batch``, ``batch_discount`` off), whichever
    mode the ingest would run in, so that the two can be weighed before it runs.
    ``bound``: some phase's figure is an upper bound; ``left_out``: phases that call
    an LLM whose cost is not known before they run (not in the sums)."""

    sync: float
    batch: float
    batch_discount: float
    bound: bool
    left_out: list[str]

    def as_dict(self) -> dict[str, Any]:
        return {"sync": self.sync, "batch": self.batch,
                "batch_discount": self.batch_discount, "bound": self.bound,
                "left_out": list(self.left_out)}


def plan_cost(phases: Sequence[PhasePlan], discount: float) -> LlmCostPlan | None:
    """The phases' cost at both prices; None when none has one (no prices set, or no
    phase of the method calls an LLM or could be planned)."""
    priced = [p for p in phases if p.cost is not None]
    if not priced:
        return None
    sync = sum(p.cost or 0.0 for p in priced)
    return LlmCostPlan(sync=round(sync, COST_DECIMALS),
                       batch=round(batch_price(sync, discount), COST_DECIMALS),
                       batch_discount=discount,
                       bound=any(p.planning is Planning.BOUND for p in priced),
                       left_out=[p.phase for p in phases if p.cost is None
                                 and p.planning is not Planning.NO_LLM])


@dataclass(frozen=True, slots=True)
class EmbeddingPlan:
    """What a provider's embeddings of the ingest take at the least: the new and changed
    documents' text, at ``TOKENS_PER_CHAR`` (an approximation for English text). The
    units the phases derive from them (bridges, facts, summaries) are embedded too and
    are not known before they run."""

    model: str
    tokens: int
    cost: float | None

    def as_dict(self) -> dict[str, Any]:
        return {"model": self.model, "tokens": self.tokens, "cost": self.cost,
                "basis": f"the documents to embed at {TOKENS_PER_CHAR:g} tokens per character; "
                         "the units the phases derive from them are embedded too and not "
                         "planned"}


def plan_embedding(runtime: Runtime, todo: Sequence[Document]) -> EmbeddingPlan | None:
    """The embedding estimate when embeddings go to a provider (``openai://``); None for
    a local model, whose cost is the machine's time."""
    settings = runtime.settings
    scheme, _, model = settings.embedder_url.partition("://")
    if scheme != "openai":
        return None
    tokens = document_tokens(todo)
    price = settings.embedding_price_per_mtok
    return EmbeddingPlan(model=model, tokens=tokens,
                         cost=None if price is None else tokens * price / 1_000_000)


def plan_ingest(runtime: Runtime, index: str, raw: Sequence[RawDocument],
                read_errors: Sequence[ReadError] = (), *, method: str | None = None,
                llm_mode: LlmMode | None = None) -> IngestPlan:
    """The plan of ingesting ``raw`` into ``index`` (created for ``method`` when new),
    in ``llm_mode`` (None: the index's default, else the setting's)."""
    validate_index_name(index)
    state = runtime.backends.state
    info = state.get_index(index)
    chosen = _method(runtime, index, info.method if info else None, method)
    documents, errors = validate_documents(index, raw, runtime.settings.max_document_bytes)
    errors = read_error_items(read_errors) + errors
    known = state.document_hashes(index) if info else {}
    todo = [d for d in documents if known.get(d.doc_id) != d.content_hash]
    counts = DocumentCounts(new=sum(1 for d in todo if d.doc_id not in known),
                            changed=sum(1 for d in todo if d.doc_id in known),
                            unchanged=len(documents) - len(todo), invalid=len(errors),
                            removed=len(stale_documents(known, documents)))
    phases = plan_phases(runtime, index, chosen, todo, index_exists=info is not None)
    settings = runtime.settings
    return IngestPlan(index=index, method=chosen.name, model=settings.llm_model,
                      index_exists=info is not None, documents=counts, phases=phases,
                      errors=errors, embedding=plan_embedding(runtime, todo),
                      llm_mode=job_mode(llm_mode, info.options if info else {},
                                        settings.llm_mode),
                      llm_cost=plan_cost(phases, settings.llm_batch_discount))


def _method(runtime: Runtime, index: str, existing: str | None,
            asked: str | None) -> IndexMethod:
    # The checks of submit.ensure_index, without creating the index or opening the LLM.
    if asked is not None:
        get_index_method(asked)  # an unknown name is refused as such, before any mismatch
    if existing is not None and asked is not None and asked != existing:
        raise InvalidInputError(method_mismatch(index, existing, asked), where="method")
    chosen = get_index_method(existing or asked or default_method(runtime))
    if chosen.llm_use is not LlmUse.NONE and not runtime.settings.llm_enabled:
        raise ConfigError(f"index {index!r} is built with {chosen.name!r}, which needs an LLM, "
                          "and none is configured in this process: set HOPINDEX_LLM_MODEL "
                          "(and HOPINDEX_LLM_BASE_URL, OPENAI_API_KEY)")
    return chosen
