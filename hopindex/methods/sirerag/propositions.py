"""SiReRAG's documents phase: a document's passages, and each chunk's propositions.

Each chunk of a document becomes a passage unit (the similarity tree's leaves) and its
propositions, with their named entities, are extracted by the model: in one call per
chunk, or in the paper's three (``extraction.py``). The propositions are the method's
own record of the document (namespace ``sirerag.propositions``), carrying the
document's content hash and the extraction mode: a document whose record matches its
text and the mode is never sent again. The entities become the document's
mentions, so each entity's aggregate is rebuilt when a document naming it changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hopindex.core.ids import content_hash
from hopindex.core.models import Document, EntityMention, ItemError, MentionSource
from hopindex.methods.chunking import chunk_document, passage_units
from hopindex.methods.plugin import DocumentsResult, PhaseContext
from hopindex.methods.sirerag.extraction import Extraction, extract
from hopindex.methods.sirerag.parsing import Proposition

METHOD = "sirerag"
PROPOSITIONS = "sirerag.propositions"  # the records' namespace
AGGREGATES = "sirerag.aggregate"  # the aggregates' group namespace: one key per entity


def entity_key(name: str) -> str:
    """The key propositions are grouped by: the entity lower-cased, spaces folded."""
    return " ".join(name.lower().split())


@dataclass(frozen=True, slots=True)
class PassagePropositions:
    """One chunk's passage unit id and the propositions the model found in it."""

    passage_id: str
    propositions: tuple[Proposition, ...]

    def as_dict(self) -> dict[str, Any]:
        return {"passage": self.passage_id,
                "propositions": [{"text": p.text, "entities": list(p.entities)}
                                 for p in self.propositions]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PassagePropositions:
        return cls(passage_id=str(data["passage"]), propositions=tuple(
            Proposition(text=str(p["text"]), entities=tuple(p["entities"]))
            for p in data["propositions"]))


def is_current(record: dict[str, Any] | None, document: Document, mode: Extraction) -> bool:
    """Whether a document's stored propositions are of its text, extracted in ``mode``
    (records from before the setting existed were extracted in one call)."""
    return record is not None and record.get("hash") == content_hash(
        document.title, document.text) and record.get(
        "extraction", Extraction.ONE_CALL.value) == mode.value


def read_propositions(context: PhaseContext, doc_ids: Sequence[str]
                      ) -> dict[str, list[PassagePropositions]]:
    """Each document's stored propositions, by chunk in document order."""
    records = context.state.get_records(context.index, PROPOSITIONS, list(doc_ids))
    return {doc_id: [PassagePropositions.from_dict(p) for p in record["passages"]]
            for doc_id, record in records.items()}


def run_propositions(context: PhaseContext, documents: list[Document]) -> DocumentsResult:
    """Passages and propositions of a batch, extracted (``extraction.py``) for each
    document whose stored propositions are not of its current text and mode."""
    state, index = context.state, context.index
    mode = Extraction(context.settings.extraction)
    stored = state.get_records(index, PROPOSITIONS, [d.doc_id for d in documents])
    # hopindex's shared chunking (2,000 characters, 200 overlap), not the authors'
    # LlamaIndex sentence splitter: every method's passages are cut the same way.
    bodies_of = {d.doc_id: chunk_document(d) for d in documents}
    passages_of = {d.doc_id: passage_units(d, bodies_of[d.doc_id], METHOD) for d in documents}
    pending = [d for d in documents if not is_current(stored.get(d.doc_id), d, mode)]
    extracted = extract(context, mode, pending, bodies_of)
    failures = extracted.failures
    result = DocumentsResult(errors=[
        ItemError(item=doc_id, stage=context.phase,
                  reason=f"proposition extraction failed at {reason}")
        for doc_id, reason in sorted(failures.items())])
    records: dict[str, dict[str, Any]] = {}
    for document in pending:
        if document.doc_id in failures:
            continue
        chunks = extracted.found.get(document.doc_id, {})
        records[document.doc_id] = {
            "hash": content_hash(document.title, document.text), "extraction": mode.value,
            "passages": [PassagePropositions(u.unit_id, tuple(chunks.get(n, ()))).as_dict()
                         for n, u in enumerate(passages_of[document.doc_id])]}
    if records:
        state.put_records(index, PROPOSITIONS, records)
    propositions = read_propositions(context, [d.doc_id for d in documents
                                               if d.doc_id not in failures])
    for document in documents:
        if document.doc_id in failures:
            continue
        result.units.extend(passages_of[document.doc_id])
        result.touch(AGGREGATES, _replace_mentions(
            context, document.doc_id, propositions.get(document.doc_id, [])))
    return result


def _replace_mentions(context: PhaseContext, doc_id: str,
                      passages: Sequence[PassagePropositions]) -> set[str]:
    """Store the document's entities; returns the aggregates to rebuild: those it fed
    before and every entity it names now."""
    counts: dict[str, int] = {}
    for passage in passages:
        for proposition in passage.propositions:
            for name in proposition.entities:
                key = entity_key(name)
                if key:
                    counts[key] = counts.get(key, 0) + 1
    mentions = [EntityMention(entity=e, doc_id=doc_id, source=MentionSource.LLM, count=c)
                for e, c in sorted(counts.items())]
    state = context.state
    touched = state.groups_of_documents(context.index, AGGREGATES, [doc_id])
    touched |= state.replace_mentions(context.index, doc_id, mentions, (MentionSource.LLM,))
    return touched | set(counts)
