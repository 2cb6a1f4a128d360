"""Plan an ingest without running it: what would change, and what it would cost.

The same validation and content hashes as :func:`hopindex.scheduler.submit.submit_ingest`
sort the documents into new, changed, unchanged and invalid. Each phase of the
index's method is then planned through the method's optional
:class:`~hopindex.methods.plugin.CallPlanner`: a documents phase's requests exactly
(less those the response cache answers), a groups or levels phase's calls as an
upper bound, and "not planned" where the method cannot say. Nothing is written: no
job, no document, no unit, no LLM call, no cache entry.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from hopindex.backends.llm.client import ChatRequest
from hopindex.core.errors import ConfigError, InvalidInputError
from hopindex.core.ids import validate_index_name
from hopindex.core.models import Document, ItemError
from hopindex.methods.plugin import (
    CallPlanner,
    DocumentsPhase,
    IndexMethod,
    LlmUse,
    Phase,
    PhaseKind,
    PlanContext,
    job_documents,
    phase_name,
)
from hopindex.methods.registry import get_index_method, method_settings
from hopindex.readers import RawDocument, ReadError
from hopindex.scheduler.dry_run_cache import cached_keys, request_key
from hopindex.scheduler.dry_run_tokens import (
    PhaseHistory,
    TokenBasis,
    estimate_tokens,
    phase_history,
)
from hopindex.scheduler.runtime import Runtime
from hopindex.scheduler.submit import default_method, read_error_items, validate_documents


class Planning(enum.StrEnum):
    """How a phase's call count is known."""

    EXACT = "exact"  # the requests themselves, less the cache's hits
    BOUND = "bound"  # at most this many
    NOT_PLANNED = "not_planned"  # the method cannot say before the calls before it
    NO_LLM = "no_llm"  # the method calls no LLM


@dataclass(frozen=True, slots=True)
class DocumentCounts:
    new: int = 0
    changed: int = 0
    unchanged: int = 0
    invalid: int = 0

    @property
    def usable(self) -> int:
        """Valid documents, whether or not they need work."""
        return self.new + self.changed + self.unchanged

    def as_dict(self) -> dict[str, int]:
        return {"new": self.new, "changed": self.changed, "unchanged": self.unchanged,
                "invalid": self.invalid}


@dataclass(frozen=True, slots=True)
class PhasePlan:
    """One phase: ``calls`` (exact or an upper bound, see ``planning``; None: unknown),
    ``cache_hits`` (planned requests the response cache answers, not in ``calls``),
    the planned prompts' characters, and the token estimate with its basis."""

    phase: str
    kind: str
    planning: Planning
    calls: int | None
    basis: str
    cache_hits: int = 0
    prompt_chars: int | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    token_basis: TokenBasis = TokenBasis.NONE

    def as_dict(self) -> dict[str, Any]:
        return {"phase": self.phase, "kind": self.kind, "planning": self.planning.value,
                "calls": self.calls, "basis": self.basis, "cache_hits": self.cache_hits,
                "prompt_chars": self.prompt_chars, "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens,
                "token_basis": self.token_basis.value}


@dataclass(frozen=True, slots=True)
class IngestPlan:
    """What ``hopindex ingest`` would do to ``index``, computed without doing it."""

    index: str
    method: str
    model: str
    index_exists: bool
    documents: DocumentCounts
    phases: list[PhasePlan] = field(default_factory=list)
    errors: list[ItemError] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"index": self.index, "method": self.method, "model": self.model,
                "index_exists": self.index_exists, "documents": self.documents.as_dict(),
                "phases": [p.as_dict() for p in self.phases],
                "errors": [e.as_dict() for e in self.errors]}


def plan_ingest(runtime: Runtime, index: str, raw: Sequence[RawDocument],
                read_errors: Sequence[ReadError] = (), *, method: str | None = None
                ) -> IngestPlan:
    """The plan of ingesting ``raw`` into ``index`` (created for ``method`` when new)."""
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
                            unchanged=len(documents) - len(todo), invalid=len(errors))
    history = phase_history(state, index) if info else {}
    phases = [_plan_phase(runtime, index, chosen, phase, todo=todo, history=history)
              for phase in chosen.phases]
    return IngestPlan(index=index, method=chosen.name, model=runtime.settings.llm_model,
                      index_exists=info is not None, documents=counts, phases=phases,
                      errors=errors)


def _method(runtime: Runtime, index: str, existing: str | None,
            asked: str | None) -> IndexMethod:
    # The checks of submit.ensure_index, without creating the index or opening the LLM.
    if existing is not None and asked is not None and asked != existing:
        raise InvalidInputError(f"index {index!r} is built with {existing!r}, not {asked!r}: "
                                "ingest without --method or into a new index", where="method")
    chosen = get_index_method(existing or asked or default_method(runtime))
    if chosen.llm_use is not LlmUse.NONE and not runtime.settings.llm_enabled:
        raise ConfigError(f"index {index!r} is built with {chosen.name!r}, which needs an LLM, "
                          "and none is configured in this process: set HOPINDEX_LLM_MODEL "
                          "(and HOPINDEX_LLM_BASE_URL, OPENAI_API_KEY)")
    return chosen


def _plan_phase(runtime: Runtime, index: str, method: IndexMethod, phase: Phase, *,
                todo: Sequence[Document], history: dict[str, PhaseHistory]) -> PhasePlan:
    name = phase_name(method.name, phase)
    kind = phase.kind.value
    if method.llm_use is LlmUse.NONE:
        return PhasePlan(phase=name, kind=kind, planning=Planning.NO_LLM, calls=0,
                         basis=f"{method.name} calls no LLM")
    if not isinstance(method, CallPlanner):
        return _not_planned(name, kind, f"{method.name} does not plan its calls")
    context = PlanContext(index=index, method=method.name, phase=name,
                          state=runtime.backends.state,
                          settings=method_settings(runtime.settings, method.name),
                          open_nlp=lambda: runtime.backends.nlp)
    if isinstance(phase, DocumentsPhase):
        if phase.select is not job_documents:
            return _not_planned(name, kind, "the phase chooses its own documents")
        return _plan_documents(runtime, method, context, todo=todo, history=history.get(name))
    return _plan_groups(method, context, kind, todo=todo, history=history.get(name))


def _plan_groups(method: CallPlanner, context: PlanContext, kind: str, *,
                 todo: Sequence[Document], history: PhaseHistory | None) -> PhasePlan:
    bound = method.bound_group_calls(context, todo)
    if bound is None:
        return _not_planned(context.phase, kind, "the calls depend on earlier replies")
    if bound.max_calls is None:
        return _not_planned(context.phase, kind, bound.basis)
    tokens = estimate_tokens(bound.max_calls, None, history)
    return PhasePlan(phase=context.phase, kind=kind, planning=Planning.BOUND,
                     calls=bound.max_calls, basis=bound.basis,
                     prompt_tokens=tokens.prompt_tokens,
                     completion_tokens=tokens.completion_tokens, token_basis=tokens.basis)


def _plan_documents(runtime: Runtime, method: CallPlanner, context: PlanContext, *,
                    todo: Sequence[Document], history: PhaseHistory | None) -> PhasePlan:
    kind = PhaseKind.DOCUMENTS.value
    requests: list[ChatRequest] = []
    more = 0
    for document in todo:
        planned = method.plan_document_calls(context, document)
        if planned is None:
            return _not_planned(context.phase, kind, "the method cannot say before its calls")
        requests.extend(planned.requests)
        more += planned.more
    model = runtime.settings.llm_model
    keys = [request_key(model, r) for r in requests]
    hits = cached_keys(runtime.settings, keys)
    # Two identical requests of one job both go out: they run concurrently, before
    # either reply is cached.
    sent = [r for r, key in zip(requests, keys, strict=True) if key not in hits]
    chars = sum(len(content) for r in sent for _, content in r.messages)
    basis = f"the method's requests for {len(todo)} new or changed documents"
    if more:
        # The calls built from replies have no prompt yet: no characters to count.
        tokens = estimate_tokens(len(sent) + more, None, history)
        basis += (f": {len(sent)} known exactly (not cached), plus at most {more} built "
                  "from their replies")
    else:
        tokens = estimate_tokens(len(sent), chars, history)
    return PhasePlan(phase=context.phase, kind=kind,
                     planning=Planning.BOUND if more else Planning.EXACT,
                     calls=len(sent) + more, basis=basis,
                     cache_hits=len(requests) - len(sent), prompt_chars=chars,
                     prompt_tokens=tokens.prompt_tokens,
                     completion_tokens=tokens.completion_tokens, token_basis=tokens.basis)


def _not_planned(name: str, kind: str, why: str) -> PhasePlan:
    return PhasePlan(phase=name, kind=kind, planning=Planning.NOT_PLANNED, calls=None,
                     basis=why)
