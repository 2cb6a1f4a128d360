"""Plan the phases of an ingest over validated documents, and keep the plan on its job.

Each phase of the index's method is planned through the method's optional
:class:`~hopindex.methods.plugin.CallPlanner`: a documents phase's requests exactly
(less those the response cache answers), a groups or levels phase's calls as an
upper bound, and "not planned" where the method cannot say. Nothing is written: no
LLM call, no cache entry. ``hopindex ingest --dry-run`` (scheduler/dry_run.py) prints
the plan; every ingest of an LLM method records it on its job
(:func:`estimate_ingest`), beside what the calls then really used.

An ingest plans itself without the NLP analyser: a planner that needs it (CompactRAG
puts each chunk's spaCy entities in its prompts) would run the analysis the ingest
runs again, doubling its CPU work, and would load the models into whatever process
submits the job (the API server, on workers). Such a phase is "not planned" on the
job; a dry run, asked for, plans it.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hopindex.backends.llm.chat import ChatRequest
from hopindex.backends.llm.usage import LlmPrices
from hopindex.backends.protocols import NlpAnalyzer
from hopindex.core.errors import HopindexError
from hopindex.core.logging import get_logger
from hopindex.core.models import COST_DECIMALS, Document
from hopindex.core.settings import Settings
from hopindex.core.text import printable
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
from hopindex.methods.registry import method_settings
from hopindex.scheduler.dry_run_cache import cached_keys, request_key
from hopindex.scheduler.dry_run_tokens import (
    PhaseHistory,
    TokenBasis,
    TokenEstimate,
    estimate_tokens,
    phase_history,
)
from hopindex.scheduler.runtime import Runtime

log = get_logger(__name__)


class Planning(enum.StrEnum):
    """How a phase's call count is known."""

    EXACT = "exact"  # the requests themselves, less the cache's hits
    BOUND = "bound"  # at most this many
    NOT_PLANNED = "not_planned"  # the method cannot say before the calls before it
    NO_LLM = "no_llm"  # the method calls no LLM


class Analyser(enum.StrEnum):
    """Whether planners may run the NLP analyser."""

    OPEN = "open"  # a dry run: everything planned that can be
    WITHHELD = "withheld"  # an ingest planning itself: only what costs next to nothing


class AnalyserWithheldError(HopindexError):
    """A planner asked for the NLP analyser while planning an ingest."""


@dataclass(frozen=True, slots=True)
class PhasePlan:
    """One phase: ``calls`` (exact or an upper bound, see ``planning``; None: unknown),
    ``cache_hits`` (planned requests the response cache answers, not in ``calls``),
    the characters of the planned prompts and of the documents they carry
    (``input_chars``), the token estimate with its basis, and its cost at the
    configured prices (None: unpriced or no token estimate)."""

    phase: str
    kind: str
    planning: Planning
    calls: int | None
    basis: str
    cache_hits: int = 0
    prompt_chars: int | None = None
    input_chars: int | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    token_basis: TokenBasis = TokenBasis.NONE
    cost: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"phase": self.phase, "kind": self.kind, "planning": self.planning.value,
                "calls": self.calls, "basis": self.basis, "cache_hits": self.cache_hits,
                "prompt_chars": self.prompt_chars, "input_chars": self.input_chars,
                "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens,
                "token_basis": self.token_basis.value, "cost": self.cost}


def plan_phases(runtime: Runtime, index: str, method: IndexMethod,
                todo: Sequence[Document], *, index_exists: bool,
                analyser: Analyser = Analyser.OPEN) -> list[PhasePlan]:
    """Each phase of ``method`` when ``todo`` (valid documents, new or changed) is
    ingested into ``index``; ``index_exists`` False: a new index, with no history."""
    state = runtime.backends.state
    model = runtime.settings.llm_model
    history = phase_history(state, index, model) if index_exists else {}
    return [_plan_phase(runtime, index, method, phase, todo=todo, history=history,
                        analyser=analyser)
            for phase in method.phases]


def estimate_ingest(runtime: Runtime, index: str, method: IndexMethod,
                    todo: Sequence[Document]) -> dict[str, dict[str, Any]]:
    """The plan of an ingest job per phase, as its record keeps it (``Job.estimate``):
    empty for a method that calls no LLM, and when planning fails, since an estimate
    is advice and must never cost the ingest."""
    if method.llm_use is LlmUse.NONE:
        return {}
    started = time.perf_counter()
    try:
        phases = plan_phases(runtime, index, method, todo, index_exists=True,
                             analyser=Analyser.WITHHELD)
    except Exception as exc:  # whatever a planner raises, the ingest goes on without it
        log.warning("job_estimate_failed", index=index, method=method.name,
                    error=printable(f"{type(exc).__name__}: {exc}"))
        return {}
    log.info("job_estimated", index=index, method=method.name, documents=len(todo),
             duration_s=round(time.perf_counter() - started, 4))
    model = runtime.settings.llm_model
    return {p.phase: {**{k: v for k, v in p.as_dict().items() if k != "phase"},
                      "model": model} for p in phases}


def _plan_phase(runtime: Runtime, index: str, method: IndexMethod, phase: Phase, *,
                todo: Sequence[Document], history: dict[str, PhaseHistory],
                analyser: Analyser) -> PhasePlan:
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
                          open_nlp=(lambda: runtime.backends.nlp) if analyser is Analyser.OPEN
                          else _withheld)
    try:
        if isinstance(phase, DocumentsPhase):
            if phase.select is not job_documents:
                return _not_planned(name, kind, "the phase chooses its own documents")
            return _plan_documents(runtime, method, context, todo=todo,
                                   history=history.get(name))
        return _plan_groups(runtime.settings, method, context, kind, todo=todo,
                            history=history.get(name))
    except AnalyserWithheldError:
        return _not_planned(name, kind, "planning it runs the NLP analyser, which an "
                                        "ingest does not do to plan itself; "
                                        "`hopindex ingest --dry-run` plans it")


def _withheld() -> NlpAnalyzer:
    raise AnalyserWithheldError("the NLP analyser is not run to plan an ingest")


def _plan_groups(settings: Settings, method: CallPlanner, context: PlanContext, kind: str,
                 *, todo: Sequence[Document], history: PhaseHistory | None) -> PhasePlan:
    bound = method.bound_group_calls(context, todo)
    if bound is None:
        return _not_planned(context.phase, kind, "the calls depend on earlier replies")
    if bound.max_calls is None:
        return _not_planned(context.phase, kind, bound.basis)
    tokens = estimate_tokens(bound.max_calls, history)
    return PhasePlan(phase=context.phase, kind=kind, planning=Planning.BOUND,
                     calls=bound.max_calls, basis=bound.basis,
                     prompt_tokens=tokens.prompt_tokens,
                     completion_tokens=tokens.completion_tokens, token_basis=tokens.basis,
                     cost=_cost(settings, tokens))


def _plan_documents(runtime: Runtime, method: CallPlanner, context: PlanContext, *,
                    todo: Sequence[Document], history: PhaseHistory | None) -> PhasePlan:
    kind = PhaseKind.DOCUMENTS.value
    requests: list[ChatRequest] = []
    owners: list[int] = []  # the position in ``todo`` of each request's document
    more = 0
    for position, document in enumerate(todo):
        planned = method.plan_document_calls(context, document)
        if planned is None:
            return _not_planned(context.phase, kind, "the method cannot say before its calls")
        requests.extend(planned.requests)
        owners.extend([position] * len(planned.requests))
        more += planned.more
    model = runtime.settings.llm_model
    keys = [request_key(model, r) for r in requests]
    hits = cached_keys(runtime.settings, keys)
    # Two identical requests of one job both go out: they run concurrently, before
    # either reply is cached.
    sending = [key not in hits for key in keys]
    sent = [r for r, goes in zip(requests, sending, strict=True) if goes]
    chars = sum(len(content) for r in sent for _, content in r.messages)
    documents = _input_chars(todo, owners, sending)
    basis = f"the method's requests for {len(todo)} new or changed documents"
    if more:
        # The calls built from replies have no prompt yet: no characters to count.
        tokens = estimate_tokens(len(sent) + more, history)
        basis += (f": {len(sent)} known exactly (not cached), plus at most {more} built "
                  "from their replies")
    else:
        tokens = estimate_tokens(len(sent), history, prompt_chars=chars,
                                 input_chars=documents)
    return PhasePlan(phase=context.phase, kind=kind,
                     planning=Planning.BOUND if more else Planning.EXACT,
                     calls=len(sent) + more, basis=basis,
                     cache_hits=len(requests) - len(sent), prompt_chars=chars,
                     input_chars=documents, prompt_tokens=tokens.prompt_tokens,
                     completion_tokens=tokens.completion_tokens, token_basis=tokens.basis,
                     cost=_cost(runtime.settings, tokens))


def _input_chars(todo: Sequence[Document], owners: Sequence[int],
                 sending: Sequence[bool]) -> int:
    """Characters of the documents the sent requests are built from (title and text):
    all of a document whose every request goes out, the share of its requests that
    do when the cache answers some (its chunks are about equal in size)."""
    planned = [0] * len(todo)
    going = [0] * len(todo)
    for position, goes in zip(owners, sending, strict=True):
        planned[position] += 1
        going[position] += goes
    total = 0.0
    for document, count, sent in zip(todo, planned, going, strict=True):
        if sent:
            total += (len(document.title) + len(document.text)) * sent / count
    return round(total)


def _cost(settings: Settings, tokens: TokenEstimate) -> float | None:
    if tokens.prompt_tokens is None or tokens.completion_tokens is None:
        return None
    prices = LlmPrices(input_per_mtok=settings.llm_price_input_per_mtok,
                       output_per_mtok=settings.llm_price_output_per_mtok)
    cost = prices.cost_of(tokens.prompt_tokens, tokens.completion_tokens)
    return None if cost is None else round(cost, COST_DECIMALS)


def _not_planned(name: str, kind: str, why: str) -> PhasePlan:
    return PhasePlan(phase=name, kind=kind, planning=Planning.NOT_PLANNED, calls=None,
                     basis=why)
