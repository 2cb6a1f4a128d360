"""The link phase reads the index's titles once per job in a process, not once per task:
read per task, a link phase costs the square of the corpus. What it links is the same
either way, and the next job reads the titles again (they may have changed)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from hopindex.backends.protocols import StateStore
from hopindex.core.models import JobState, MentionSource
from hopindex.methods.extractive import linking
from tests.conftest import CURIE_CORPUS, ClientFactory, ingest_documents

INDEX = "linked"


def _counting(state: StateStore, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The indexes whose title lexicon ``state`` is asked for, in order."""
    asked: list[str] = []
    read: Callable[[str], Any] = state.title_lexicon

    def title_lexicon(index: str) -> Any:
        asked.append(index)
        return read(index)

    monkeypatch.setattr(state, "title_lexicon", title_lexicon)
    return asked


def _lexicon_mentions(state: StateStore, doc_ids: list[str]) -> set[tuple[str, str]]:
    return {(m.doc_id, m.entity) for found in state.mentions_of_documents(INDEX, doc_ids).values()
            for m in found if m.source is MentionSource.LEXICON}


def test_one_lexicon_read_per_job_links_what_a_read_per_task_links(
        make_client: ClientFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """An ingest whose link phase runs one task per document reads the titles once, and
    links what the same ingest links with the lexicon read anew for every task (as
    before); the next job, changing a document, reads them again."""
    # Each client binds the process's task runtime when it opens: the one read from
    # last is opened last.
    uncached = make_client("uncached", stage1_batch_docs=1)
    built = linking.job_lexicon

    def read_every_time(context: Any) -> linking.TitleLexicon:
        linking._last_lexicon.clear()
        return built(context)

    monkeypatch.setattr("hopindex.methods.extractive.method.job_lexicon", read_every_time)
    assert ingest_documents(uncached, INDEX, CURIE_CORPUS).state is JobState.SUCCEEDED
    monkeypatch.setattr("hopindex.methods.extractive.method.job_lexicon", built)

    client = make_client("cached", stage1_batch_docs=1)
    state = client.service.backends.state
    asked = _counting(state, monkeypatch)
    assert ingest_documents(client, INDEX, CURIE_CORPUS).state is JobState.SUCCEEDED
    assert asked == [INDEX]
    doc_ids = sorted(state.document_hashes(INDEX))
    assert len(doc_ids) > 1
    linked = _lexicon_mentions(state, doc_ids)
    assert linked
    assert _lexicon_mentions(uncached.service.backends.state, doc_ids) == linked

    asked.clear()
    first = CURIE_CORPUS[0]
    changed = replace(first, text=first.text + " She met Pierre Curie in Paris.")
    assert ingest_documents(client, INDEX, [changed]).state is JobState.SUCCEEDED
    assert INDEX in asked
