"""``extractive`` as an index method: stage 1 (passages, mentions), link, stage 2 (bridges).

No LLM. Stage 1 analyses each document (sentences, named entities), keeps its
passages and entity mentions; link records which catalogue titles each text names
(for the job's documents and those whose mentions a change may alter); stage 2
writes one bridge unit per entity shared by 2..tau documents.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hopindex.core.errors import ConfigError, HopindexError
from hopindex.core.logging import get_logger
from hopindex.core.models import Document, ItemError, MentionSource, TextAnalysis, UnitKind
from hopindex.methods.bridges import (
    BRIDGES,
    DROPPED_TITLES,
    bridge_documents,
    forget_mentions,
    replace_document_mentions,
)
from hopindex.methods.extractive.analyses import ANALYSES, get_analyses, put_analyses
from hopindex.methods.extractive.linking import documents_to_relink, job_lexicon
from hopindex.methods.extractive.stage1 import METHOD, extract_document
from hopindex.methods.extractive.stage2 import (
    BridgePolicy,
    SentenceCache,
    build_bridge_unit,
)
from hopindex.methods.plugin import (
    DocumentsPhase,
    DocumentsResult,
    Forgotten,
    GroupsPhase,
    GroupsResult,
    LlmUse,
    Phase,
    PhaseContext,
)

log = get_logger(__name__)

_STAGE1_SOURCES = (MentionSource.NER, MentionSource.TITLE)


@dataclass(frozen=True, slots=True)
class ExtractiveSettings:
    """``HOPINDEX_EXTRACTIVE_TAU`` (bridge entities are named by 2..tau documents),
    ``…_BRIDGE_MAX_DOCS`` and ``…_BRIDGE_MAX_SENTENCES`` (what one bridge quotes)."""

    tau: int = 10
    bridge_max_docs: int = 5
    bridge_max_sentences: int = 2

    def __post_init__(self) -> None:
        if self.tau < 2:
            raise ConfigError(f"HOPINDEX_EXTRACTIVE_TAU must be at least 2, got {self.tau}")
        for name in ("bridge_max_docs", "bridge_max_sentences"):
            if getattr(self, name) < 1:
                raise ConfigError(f"HOPINDEX_EXTRACTIVE_{name.upper()} must be positive, "
                                  f"got {getattr(self, name)}")

    @property
    def bridge_policy(self) -> BridgePolicy:
        return BridgePolicy(tau=self.tau, max_docs=self.bridge_max_docs,
                            max_sentences=self.bridge_max_sentences)


def run_stage1(context: PhaseContext, documents: list[Document]) -> DocumentsResult:
    analyses, errors = _analyze(context, documents)
    put_analyses(context, documents, analyses)
    # An analysis of a document's earlier text must not outlive it: offsets would point
    # into the wrong sentences.
    failed = [e.item for e in errors]
    if failed:
        context.state.delete_records(context.index, failed, ANALYSES)
    result = DocumentsResult(errors=errors)
    for document in documents:
        if document.doc_id not in analyses:
            continue
        try:
            output = extract_document(document, analyses[document.doc_id])
            touched = replace_document_mentions(context, document.doc_id, output.mentions,
                                                _STAGE1_SOURCES)
        except HopindexError as exc:
            result.errors.append(ItemError(item=document.doc_id, stage=context.phase,
                                           reason=str(exc)))
            continue
        result.units.extend(output.units)
        result.touch(BRIDGES, touched)
    return result


def _analyze(context: PhaseContext, documents: list[Document]
             ) -> tuple[dict[str, TextAnalysis], list[ItemError]]:
    nlp = context.nlp
    try:
        found = nlp.analyze_texts([d.text for d in documents])
        return {d.doc_id: a for d, a in zip(documents, found, strict=True)}, []
    except Exception:  # retried one by one below to isolate the bad document
        log.warning("batch_analysis_failed", documents=len(documents))
    analyses: dict[str, TextAnalysis] = {}
    errors: list[ItemError] = []
    for document in documents:
        try:
            analyses[document.doc_id] = nlp.analyze_texts([document.text])[0]
        except Exception as exc:  # one document's failure must not stop the rest
            errors.append(ItemError(item=document.doc_id, stage=context.phase,
                                    reason=f"NLP analysis failed: {exc}"))
    return analyses, errors


def select_relink(context: PhaseContext, scope_doc_ids: Sequence[str],
                  dropped_titles: Sequence[str]) -> list[str]:
    return documents_to_relink(context, scope_doc_ids, dropped_titles, context.settings.tau)


def run_link(context: PhaseContext, documents: list[Document]) -> DocumentsResult:
    """Record which catalogue titles each document's text names."""
    lexicon = job_lexicon(context)
    result = DocumentsResult()
    for document in documents:
        mentions = lexicon.find_mentions(document.doc_id, document.text)
        result.touch(BRIDGES, context.state.replace_mentions(
            context.index, document.doc_id, mentions, (MentionSource.LEXICON,)))
    return result


def build_bridges(context: PhaseContext, entities: list[str]) -> GroupsResult:
    policy: BridgePolicy = context.settings.bridge_policy
    bridged, doc_ids_of = bridge_documents(context.state, context.index, entities, policy.tau)
    needed = sorted({d for e in bridged for d in doc_ids_of[e]})
    documents = {d.doc_id: d for d in context.state.get_documents(context.index, needed)}
    analyses = get_analyses(context, list(documents.values()))
    result = GroupsResult()
    sentences = SentenceCache()
    for entity in bridged:
        unit = build_bridge_unit(context.index, entity,
                                 [documents[d] for d in doc_ids_of[entity] if d in documents],
                                 analyses, policy, sentences=sentences)
        if unit is not None:
            result.built[entity] = [unit]
    return result


class ExtractiveIndexMethod:
    name = METHOD
    llm_use = LlmUse.NONE
    settings_type = ExtractiveSettings
    writes = frozenset({UnitKind.PASSAGE, UnitKind.BRIDGE})
    default_queries = ("hops", "extractive", "naive")
    phases: tuple[Phase, ...] = (
        DocumentsPhase(name="stage1", run=run_stage1, writes=frozenset({UnitKind.PASSAGE})),
        DocumentsPhase(name="link", run=run_link, batch_scale=4,
                       select=lambda context, scope: select_relink(
                           context, scope.doc_ids, scope.notes.get(DROPPED_TITLES, []))),
        GroupsPhase(name="stage2", namespace=BRIDGES, build=build_bridges,
                    writes=frozenset({UnitKind.BRIDGE})),
    )

    def forget_documents(self, context: PhaseContext, doc_ids: Sequence[str]) -> Forgotten:
        return forget_mentions(context, doc_ids)
