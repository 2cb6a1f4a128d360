"""``compactrag`` as an index method: one QA-extraction call per chunk, then one unit per
(document, question).

1. ``qa`` (documents, ``stage1`` queue): each chunk, with its spaCy entities and noun
   chunks, is sent once; the pairs that keep the prompt's rules are the document's
   record (namespace ``compactrag.qa``, with its content hash, so an unchanged
   document is never sent again, and the count of pairs dropped per rule). Each
   pair's normalised question is a mention of the document.
2. ``pairs`` (groups of namespace ``compactrag.question``, no LLM): per normalised
   question, one ``qa_pair`` unit (``question\\nanswer``) for each document that
   states it, as that document states it, citing that document alone. Nothing is
   merged: two documents answering one question differently keep both facts, and
   the query drops repeats of one fact by score (``query._retrieve``).
   The phase is grouped by question, not by document, so that an index whose units
   an earlier version merged per question is mended question by question: rebuilding
   a group replaces its merged unit with the per-document ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from hopindex.core.errors import ConfigError, HopindexError
from hopindex.core.ids import content_hash, unit_id
from hopindex.core.logging import get_logger
from hopindex.core.models import Document, EntityMention, ItemError, MentionSource, Unit, UnitKind
from hopindex.methods.chunking import chunk_document
from hopindex.methods.compactrag.parsing import (
    DropReason,
    QaExtraction,
    QaPair,
    normalise_question,
    parse_qa_pairs,
)
from hopindex.methods.compactrag.planning import plan_qa_calls
from hopindex.methods.compactrag.prompts import qa_request, shown_passage
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

log = get_logger(__name__)

METHOD = "compactrag"
RECORDS = "compactrag.qa"  # each document's QA pairs
QUESTIONS = "compactrag.question"  # the groups' namespace: one key per normalised question


@dataclass(frozen=True, slots=True)
class CompactRagSettings:
    """``HOPINDEX_COMPACTRAG_*``: the query's local modules and retrieval depth.

    ``extractor`` and ``rewriter``: folders of a local Hugging Face span-extraction and
    text-to-text model (empty: the model-free defaults: the top QA unit's answer, and
    substituting the referenced answer into the sub-question).
    """

    extractor: str = ""
    rewriter: str = ""
    top_k: int = 5  # QA units per sub-question
    fetch_factor: int = 10  # fetched per kept unit, before repeated facts are dropped

    def __post_init__(self) -> None:
        if not 1 <= self.top_k <= 50:
            raise ConfigError(f"HOPINDEX_COMPACTRAG_TOP_K must be 1 to 50, got {self.top_k}")
        if not 1 <= self.fetch_factor <= 50:
            raise ConfigError("HOPINDEX_COMPACTRAG_FETCH_FACTOR must be 1 to 50, got "
                              f"{self.fetch_factor}")


def read_pairs(context: PhaseContext, doc_ids: Sequence[str]) -> dict[str, list[QaPair]]:
    records = context.state.get_records(context.index, RECORDS, list(doc_ids))
    return {doc_id: [QaPair(question=str(p["question"]), answer=str(p["answer"]))
                     for p in record["pairs"]] for doc_id, record in records.items()}


def run_qa(context: PhaseContext, documents: list[Document]) -> DocumentsResult:
    """One QA call per chunk of each document whose record is not of its current text."""
    state, index = context.state, context.index
    stored = state.get_records(index, RECORDS, [d.doc_id for d in documents])
    pending = [d for d in documents
               if stored.get(d.doc_id, {}).get("hash") != content_hash(d.title, d.text)]
    # Departure (docs/methods.md): the paper sends each corpus passage whole; a
    # document is sent in chunks, so a long one still fits a prompt.
    chunks = [(d, number, body) for d in pending
              for number, body in enumerate(chunk_document(d))]
    outcomes = _extract(context, chunks) if chunks else []
    found: dict[str, list[QaExtraction]] = {}
    failures: dict[str, str] = {}
    for (document, number, _), outcome in zip(chunks, outcomes, strict=True):
        if isinstance(outcome, HopindexError):
            failures.setdefault(document.doc_id, f"chunk {number}: {outcome}")
        else:
            found.setdefault(document.doc_id, []).append(outcome)
    records: dict[str, dict[str, Any]] = {}
    for document in pending:
        if document.doc_id not in failures:
            records[document.doc_id] = _record(document, found.get(document.doc_id, []))
    if records:
        state.put_records(index, RECORDS, records)
    result = DocumentsResult(errors=[
        ItemError(item=doc_id, stage=context.phase, reason=f"QA extraction failed at {why}")
        for doc_id, why in sorted(failures.items())])
    pairs = read_pairs(context, [d.doc_id for d in documents if d.doc_id not in failures])
    for document in documents:
        if document.doc_id not in failures:
            result.touch(QUESTIONS, _replace_mentions(context, document.doc_id,
                                                      pairs.get(document.doc_id, [])))
    return result


def _extract(context: PhaseContext, chunks: Sequence[tuple[Document, int, str]]
             ) -> list[QaExtraction | HopindexError]:
    bodies = [body for _, _, body in chunks]
    analyses = context.nlp.analyze_texts(bodies)
    noun_chunks = context.nlp.find_noun_chunks(bodies)
    requests = [qa_request(d.title, body, analysis.entities, nouns)
                for (d, _, body), analysis, nouns in zip(chunks, analyses, noun_chunks,
                                                         strict=True)]
    # Departure (docs/methods.md): the prompt's rules are enforced, not only asked for.
    # Answers are checked against the passage as the prompt shows it, title included.
    parses = [partial(parse_qa_pairs, passage=shown_passage(d.title, body))
              for d, _, body in chunks]
    return context.require_llm().complete_json_many(requests, parses, context.usage)


def _record(document: Document, extractions: Sequence[QaExtraction]) -> dict[str, Any]:
    """The document's pairs (each question once) and the pairs dropped per rule."""
    # Departure (docs/methods.md): one pair per (document, question), the first chunk's.
    # The paper's passages are one chunk each; a long document split into chunks that
    # ask one question twice keeps the first answer, so its unit key stays unique.
    pairs: dict[str, QaPair] = {}
    dropped = dict.fromkeys((r.value for r in DropReason), 0)
    for extraction in extractions:
        for pair in extraction.pairs:
            pairs.setdefault(normalise_question(pair.question), pair)
        for reason, count in extraction.dropped.items():
            dropped[reason.value] += count
    if any(dropped.values()):
        log.info("compactrag_pairs_dropped", doc_id=document.doc_id, kept=len(pairs),
                 **{k: v for k, v in dropped.items() if v})
    return {"hash": content_hash(document.title, document.text),
            "pairs": [{"question": p.question, "answer": p.answer} for p in pairs.values()],
            "dropped": dropped}


def _replace_mentions(context: PhaseContext, doc_id: str, pairs: Sequence[QaPair]) -> set[str]:
    """The document's questions as its mentions; returns the question groups to rebuild."""
    keys = sorted({k for k in (normalise_question(p.question) for p in pairs) if k})
    mentions = [EntityMention(entity=k, doc_id=doc_id, source=MentionSource.LLM) for k in keys]
    state = context.state
    touched = state.groups_of_documents(context.index, QUESTIONS, [doc_id])
    touched |= state.replace_mentions(context.index, doc_id, mentions, (MentionSource.LLM,))
    return touched | set(keys)


def build_pairs(context: PhaseContext, keys: list[str]) -> GroupsResult:
    """Per question key, one unit for each document that states it, as it states it."""
    mentions = context.state.mentions_of_entities(context.index, keys)
    doc_ids = sorted({m.doc_id for found in mentions.values() for m in found})
    pairs = read_pairs(context, doc_ids)
    result = GroupsResult()
    for key in keys:
        # A document's record holds each question once (``_record``), so this is one
        # pair per stating document.
        units = [qa_unit(context.index, key, p, d)
                 for d in sorted({m.doc_id for m in mentions.get(key, [])})
                 for p in pairs.get(d, []) if normalise_question(p.question) == key]
        if units:
            result.built[key] = units
    return result


def qa_unit(index: str, key: str, pair: QaPair, doc_id: str) -> Unit:
    """The unit of ``doc_id``'s answer to the question ``key``: its id depends on the
    document, the question and the text only, so rebuilding the question's group for
    another document's change rewrites this unit unchanged, never replaces it."""
    text = pair.unit_text
    # A normalised question holds no ":" (punctuation is folded), so the key is unique
    # per (question, document) whatever the document id.
    source_key = f"qa:{key}:{doc_id}"
    return Unit(unit_id=unit_id(index, UnitKind.QA_PAIR, source_key, text), index=index,
                kind=UnitKind.QA_PAIR, text=text, source_doc_ids=(doc_id,), method=METHOD,
                source_key=source_key,
                metadata={"question": pair.question, "answer": pair.answer})


class CompactRagIndexMethod:
    name = METHOD
    llm_use = LlmUse.REQUIRED
    settings_type = CompactRagSettings
    writes = frozenset({UnitKind.QA_PAIR})
    default_queries = ("compactrag",)
    phases: tuple[Phase, ...] = (
        DocumentsPhase(name="qa", run=run_qa),
        GroupsPhase(name="pairs", namespace=QUESTIONS, build=build_pairs,
                    writes=frozenset({UnitKind.QA_PAIR})),
    )

    def forget_documents(self, context: PhaseContext, doc_ids: Sequence[str]) -> Forgotten:
        """Drop the documents' pairs and question mentions; the questions they stated
        are rebuilt, which drops these documents' units and keeps the others'."""
        state, index = context.state, context.index
        touched = state.groups_of_documents(index, QUESTIONS, doc_ids)
        touched |= state.delete_mentions(index, doc_ids)
        state.delete_records(index, list(doc_ids), namespace=RECORDS)
        return Forgotten(touched={QUESTIONS: touched})

    def plan_document_calls(self, context: PlanContext, document: Document
                            ) -> DocumentCalls | None:
        if context.phase == f"{METHOD}.qa":
            return plan_qa_calls(context, document, RECORDS)
        return None

    def bound_group_calls(self, context: PlanContext, documents: Sequence[Document]
                          ) -> CallBound | None:
        if context.phase == f"{METHOD}.pairs":
            return CallBound(max_calls=0, basis="the pairs phase calls no LLM")
        return None
