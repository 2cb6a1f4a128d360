"""The corpus a job reads, in tokens: what its LLM use is divided by for the ingestion
multiplier (core/token_multiplier.py).

Counted once, when the job's turn comes and it knows its documents: an ingest's new and
changed documents (the unchanged ones cost no call), a repair's documents not fully
indexed, a rebuild's every document of the index (its trees are built over all of
them). Counted with the dry run's estimator (``document_tokens``) so a job's multiplier
sits beside the estimate its plan made of the same documents.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from hopindex.backends.protocols import StateStore
from hopindex.core.models import Document
from hopindex.methods.plugin import IndexMethod, LlmUse
from hopindex.scheduler.dry_run_tokens import document_tokens

# Documents read at a time to count a whole index: one store call each, and never the
# whole corpus in memory.
_COUNT_BATCH = 500


def corpus_tokens(method: IndexMethod, documents: Sequence[Document]) -> int | None:
    """Tokens of ``documents`` for a job of ``method``; None for a method that calls no
    LLM (nothing to divide, and no multiplier to show)."""
    if method.llm_use is LlmUse.NONE:
        return None
    return document_tokens(documents)


def index_corpus_tokens(state: StateStore, index: str, method: IndexMethod) -> int | None:
    """Tokens of every document ``index`` holds now (a rebuild's corpus), read in
    batches; None for a method that calls no LLM."""
    if method.llm_use is LlmUse.NONE:
        return None
    return document_tokens(_stored_documents(state, index))


def _stored_documents(state: StateStore, index: str) -> Iterator[Document]:
    ids = sorted(state.document_hashes(index))
    for start in range(0, len(ids), _COUNT_BATCH):
        yield from state.get_documents(index, ids[start:start + _COUNT_BATCH])
