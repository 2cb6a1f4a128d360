"""Which documents must be re-scanned for title mentions after documents change."""

from __future__ import annotations

from collections.abc import Sequence

from hopindex.backends.protocols import UnitFilter
from hopindex.backends.registry import Backends
from hopindex.core.models import MentionSource, UnitKind
from hopindex.core.text import word_tokens

_PASSAGES = UnitFilter(kinds=(UnitKind.PASSAGE,))


def documents_to_relink(backends: Backends, index: str, job_doc_ids: Sequence[str],
                        dropped_titles: Sequence[str], tau: int) -> list[str]:
    """The job's own documents, documents elsewhere that name one of their titles, and
    documents that named a title no document holds any more."""
    state = backends.state
    job_docs = set(job_doc_ids)
    rescan = set(job_docs)
    if job_docs and len(state.document_hashes(index)) > len(job_docs):
        # Only a mention count above tau matters beyond tau, so a bounded search suffices.
        limit = max(50, 4 * tau)
        for entity, owners in state.title_lexicon(index).items():
            if job_docs.isdisjoint(owners):
                continue
            phrase = " ".join(word_tokens(entity))
            hits = backends.keywords.search_phrase(index, phrase, limit, _PASSAGES)
            for unit in state.get_units(index, [h.unit_id for h in hits]):
                rescan.update(unit.source_doc_ids)
    if dropped_titles:
        for mentions in state.mentions_of_entities(index, dropped_titles).values():
            rescan.update(m.doc_id for m in mentions if m.source is MentionSource.LEXICON)
    return sorted(rescan)
