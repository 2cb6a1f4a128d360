"""The link phase reads the index's titles once per job in a process, not once per task:
read per task, a link phase costs the square of the corpus. What it links is the same
either way, and the next job reads the titles again (they may have changed)."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from hopindex.backends.protocols import StateStore
from hopindex.core.models import JobState, MentionSource
from hopindex.core.text import word_tokens
from hopindex.methods.extractive import linking
from hopindex.methods.extractive.linking import TitleLexicon
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


def _every_title_everywhere(titles: dict[str, list[str]], doc_id: str,
                            text: str) -> dict[str, int]:
    """The plain reading of the rule: each title whose words occur at a position of the
    text counts there, unless the document is its only holder."""
    tokens = word_tokens(text)
    counts: dict[str, int] = {}
    for entity, owners in titles.items():
        words = word_tokens(entity)
        if not words or not set(owners) - {doc_id}:
            continue
        found = sum(1 for i in range(len(tokens))
                    if tokens[i:i + len(words)] == words)
        if found:
            counts[entity] = found
    return counts


def test_the_lexicon_finds_what_a_scan_of_every_title_finds() -> None:
    """Over titles sharing first words, of several lengths, nested ("anna", "anna
    berg", "anna berg hall"), a title its reading document alone holds, and texts
    naming them in every way, the lexicon counts exactly what trying every title at
    every position counts."""
    rng = random.Random(7)
    firsts = ["anna", "karl", "the", "saint"]
    rests = ["berg", "hall", "river", "of", "lund", "berg hall"]
    titles: dict[str, list[str]] = {}
    for n in range(60):
        words = [rng.choice(firsts), *rng.choice(rests).split()[:rng.randint(0, 2)]]
        titles.setdefault(" ".join(words).title(), []).append(f"d{n}")
    titles["Anna"] = ["d0"]
    vocabulary = [*firsts, *rests, "and", "met"]
    for n in range(40):
        text = " ".join(rng.choice(vocabulary) for _ in range(60))
        doc_id = f"d{n}"
        found = TitleLexicon(titles).find_mentions(doc_id, text)
        assert {m.entity: m.count for m in found} == _every_title_everywhere(
            titles, doc_id, text)
