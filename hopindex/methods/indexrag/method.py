"""``indexrag`` as an index method: stage 1 (AKUs per document), stage 2 (bridging facts).

One LLM call per document (per chunk of one over ``max_document_tokens``), then one
per bridge entity whose facts sit in at least two documents. A document whose
extraction fails keeps its previous units and its empty content hash, so the next
ingest tries it again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hopindex.core.errors import ConfigError
from hopindex.core.models import Document, MentionSource, UnitKind
from hopindex.methods.base import MAX_CANDIDATES
from hopindex.methods.bridges import (
    BRIDGES,
    bridge_documents,
    forget_mentions,
    replace_document_mentions,
)
from hopindex.methods.indexrag.indexing import extract_documents, plan_bridges, write_bridging_facts
from hopindex.methods.indexrag.planning import bound_stage2_calls, plan_stage1_calls
from hopindex.methods.indexrag.units import (
    METHOD,
    MIN_DOCUMENT_TOKENS,
    RETRIEVE_K,
    doc_facts_from_units,
)
from hopindex.methods.plugin import (
    CallBound,
    DocumentCalls,
    DocumentsPhase,
    DocumentsResult,
    Forgotten,
    GroupsPhase,
    GroupsResult,
    LlmUse,
    Phase,
    PhaseContext,
    PlanContext,
)


@dataclass(frozen=True, slots=True)
class IndexRagSettings:
    """``HOPINDEX_INDEXRAG_*``, read once from the environment (docs/methods.md).

    ``tau``: bridge entities are named by 2..tau documents. ``max_document_tokens``:
    stage 1 sends a document whole up to this many tokens (estimated at
    ``CHARS_PER_TOKEN`` characters each, as the LLM client does), and cuts a longer one
    into chunks of at most this size. ``max_candidates``: the query's balanced
    selection fetches further candidates, 20 at a time, until it holds k units; at
    most this many in all.
    """

    tau: int = 10
    # The paper sends every document whole; 2,000 tokens (~8,000 characters, ~1,500
    # words) is our departure for longer ones. The prompt (~2,200 tokens with the
    # instructions) and a reply of up to twice the document (atomic pairs restate
    # their subjects) fit the smallest common context window, 8,192 tokens, and the
    # 4,096-token output cap many models and servers set. Every paragraph of the
    # HotpotQA, 2Wiki and MuSiQue sets (at most 6,434 characters) goes whole.
    max_document_tokens: int = 2000
    # Algorithm 1 walks the ranking of every entry; 200 bounds the searches a query
    # may make (10 pages) when bridging facts crowd the top of the ranking.
    max_candidates: int = 200

    def __post_init__(self) -> None:
        if self.tau < 2:
            raise ConfigError(f"HOPINDEX_INDEXRAG_TAU must be at least 2, got {self.tau}")
        if self.max_document_tokens < MIN_DOCUMENT_TOKENS:
            raise ConfigError(f"HOPINDEX_INDEXRAG_MAX_DOCUMENT_TOKENS must be at least "
                              f"{MIN_DOCUMENT_TOKENS}, got {self.max_document_tokens}")
        if not RETRIEVE_K <= self.max_candidates <= MAX_CANDIDATES:
            raise ConfigError(f"HOPINDEX_INDEXRAG_MAX_CANDIDATES must be between "
                              f"{RETRIEVE_K} and {MAX_CANDIDATES}, got {self.max_candidates}")


def run_stage1(context: PhaseContext, documents: list[Document]) -> DocumentsResult:
    extractions, errors = extract_documents(context.require_llm(), documents, context.usage,
                                            context.settings.max_document_tokens)
    result = DocumentsResult(errors=errors)
    for extraction in extractions:
        result.units.extend(extraction.units)
        result.touch(BRIDGES, replace_document_mentions(
            context, extraction.document.doc_id, extraction.mentions(), (MentionSource.LLM,)))
        result.touch(BRIDGES, extraction.entities)
    return result


def build_bridges(context: PhaseContext, entities: list[str]) -> GroupsResult:
    bridged, doc_ids_of = bridge_documents(context.state, context.index, entities,
                                           context.settings.tau)
    needed = sorted({d for e in bridged for d in doc_ids_of[e]})
    facts = doc_facts_from_units(context.state.units_of_documents(
        context.index, needed, kinds=(UnitKind.AKU,)))
    planned = plan_bridges(bridged, {e: [facts[d] for d in doc_ids_of[e] if d in facts]
                                     for e in bridged})
    if not planned:
        return GroupsResult()
    outcomes, errors = write_bridging_facts(context.require_llm(), context.index, planned,
                                            context.usage)
    return GroupsResult(built={o.entity: o.units for o in outcomes}, errors=errors)


class IndexRagIndexMethod:
    name = METHOD
    llm_use = LlmUse.REQUIRED
    settings_type = IndexRagSettings
    writes = frozenset({UnitKind.AKU, UnitKind.BRIDGE})
    default_queries = ("indexrag", "ircot")
    phases: tuple[Phase, ...] = (
        DocumentsPhase(name="stage1", run=run_stage1, writes=frozenset({UnitKind.AKU})),
        GroupsPhase(name="stage2", namespace=BRIDGES, build=build_bridges,
                    writes=frozenset({UnitKind.BRIDGE})),
    )

    def forget_documents(self, context: PhaseContext, doc_ids: Sequence[str]) -> Forgotten:
        return forget_mentions(context, doc_ids)

    def plan_document_calls(self, context: PlanContext, document: Document
                            ) -> DocumentCalls | None:
        if not context.phase.endswith(".stage1"):
            return None
        return plan_stage1_calls(document, context.settings.max_document_tokens)

    def bound_group_calls(self, context: PlanContext, documents: Sequence[Document]
                          ) -> CallBound | None:
        return bound_stage2_calls(context, documents) if context.phase.endswith(".stage2") \
            else None
