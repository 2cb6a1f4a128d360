"""Every job of an LLM method counts the corpus it reads (``Job.corpus_tokens``), at the
dry run's 0.25 tokens per character of title and text: an ingest its new and changed
documents, a repair its outstanding ones, a rebuild every document of its index; a job
of a method without an LLM counts nothing. Embedded, against the local test server."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import pytest
from prometheus_client import REGISTRY

from hopindex.backends.protocols import IndexInfo
from hopindex.backends.state.sqlite_store import SqliteStateStore
from hopindex.core.ids import content_hash, doc_id_from_title
from hopindex.core.models import Document, JobKind, JobState
from hopindex.methods.registry import get_index_method
from hopindex.readers import RawDocument
from hopindex.scheduler.corpus import index_corpus_tokens
from hopindex.testing.llm_server import LlmTestServer
from tests.conftest import CURIE_CORPUS, ingest_documents, llm_settings, local_client, raw
from tests.workers.conftest import embedder_settings

pytestmark = pytest.mark.integration

INDEX = "curie"


def tokens_of(documents: Sequence[RawDocument]) -> int:
    """The count the job must make, written out: characters of title and text, a
    quarter token each, rounded once over the lot."""
    return round(sum(len(d.title) + len(d.text) for d in documents) / 4)


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_an_ingest_counts_its_new_and_changed_documents(
        tmp_path: Path, start_server: Callable[..., LlmTestServer]) -> None:
    """An IndexRAG ingest of three documents counts their tokens and divides each
    phase's LLM tokens by them; the next, of all six, counts only the three new ones;
    one of the six unchanged counts 0 and has no multiplier. The stored record says the
    same, and the finished jobs' corpus tokens reach Prometheus once each."""
    server = start_server()
    settings = llm_settings(tmp_path / "data", server, **embedder_settings(server))
    counted = sample("hopindex_ingest_corpus_tokens_total", method="indexrag")
    with local_client(settings) as client:
        first = ingest_documents(client, INDEX, CURIE_CORPUS[:3], method="indexrag")
        assert first.state is JobState.SUCCEEDED, first.reason
        assert first.corpus_tokens == tokens_of(CURIE_CORPUS[:3])
        stage1 = first.llm["indexrag.stage1"]
        assert first.as_dict()["token_multiplier"]["stages"]["indexrag.stage1"] == {
            "prompt": round(stage1.prompt_tokens / first.corpus_tokens, 4),
            "completion": round(stage1.completion_tokens / first.corpus_tokens, 4),
            "total": round((stage1.prompt_tokens + stage1.completion_tokens)
                           / first.corpus_tokens, 4)}
        second = ingest_documents(client, INDEX, CURIE_CORPUS)
        assert second.corpus_tokens == tokens_of(CURIE_CORPUS[3:])
        again = ingest_documents(client, INDEX, CURIE_CORPUS)
        assert (again.corpus_tokens, again.as_dict()["token_multiplier"]) == (0, None)
        stored = client.jobs.get_job(second.job_id)
        assert stored.corpus_tokens == second.corpus_tokens
        assert stored.as_dict()["token_multiplier"] == second.as_dict()["token_multiplier"]
    # Each finished job's own count, once: the three jobs read 0 tokens the third time.
    assert sample("hopindex_ingest_corpus_tokens_total", method="indexrag") - counted == \
        first.corpus_tokens + second.corpus_tokens


def test_a_repair_counts_the_documents_it_redoes(
        tmp_path: Path, start_server: Callable[..., LlmTestServer]) -> None:
    """A document whose text is marked not fully indexed is what a repair reads again:
    the repair's corpus is that document's tokens alone."""
    server = start_server()
    settings = llm_settings(tmp_path / "data", server, **embedder_settings(server))
    with local_client(settings) as client:
        built = ingest_documents(client, INDEX, CURIE_CORPUS[:3], method="indexrag")
        assert built.state is JobState.SUCCEEDED, built.reason
        state = client.service.backends.state
        [warsaw] = state.get_documents(INDEX, [doc_id_from_title(CURIE_CORPUS[2].title)])
        state.put_documents([replace(warsaw, content_hash="")])
        repair = client.indexes.repair_index(INDEX)
        assert (repair.kind, repair.state) == (JobKind.REPAIR, JobState.SUCCEEDED)
        assert repair.corpus_tokens == tokens_of(CURIE_CORPUS[2:3])


def test_a_rebuild_counts_the_whole_index(
        tmp_path: Path, start_server: Callable[..., LlmTestServer]) -> None:
    """A SiReRAG rebuild builds its trees over every document the index holds: its
    corpus is all of them, the changed one at its new length, though the ingest before
    it counted that document alone."""
    server = start_server()
    settings = llm_settings(tmp_path / "data", server, **embedder_settings(server))
    changed = raw(CURIE_CORPUS[4].title, CURIE_CORPUS[4].text + " Its currency is the zloty.")
    corpus = [*CURIE_CORPUS[:4], changed, *CURIE_CORPUS[5:]]
    with local_client(settings) as client:
        assert ingest_documents(client, INDEX, CURIE_CORPUS,
                                method="sirerag").state is JobState.SUCCEEDED
        edit = ingest_documents(client, INDEX, corpus)
        assert edit.corpus_tokens == tokens_of([changed])
        rebuilt = client.indexes.rebuild_index(INDEX)
        assert (rebuilt.kind, rebuilt.state) == (JobKind.REBUILD, JobState.SUCCEEDED)
        assert rebuilt.corpus_tokens == tokens_of(corpus)


def test_a_method_without_an_llm_counts_no_corpus(
        tmp_path: Path, start_server: Callable[..., LlmTestServer]) -> None:
    """An extractive job calls no LLM, though one is configured: no corpus count, no
    multiplier."""
    server = start_server()
    settings = llm_settings(tmp_path / "data", server, **embedder_settings(server))
    with local_client(settings) as client:
        job = ingest_documents(client, INDEX, CURIE_CORPUS[:2], method="extractive")
        assert job.state is JobState.SUCCEEDED
        assert job.corpus_tokens is None
        assert client.jobs.get_job(job.job_id).as_dict()["token_multiplier"] is None


def test_a_whole_index_is_counted_in_batches_as_one_sum(tmp_path: Path) -> None:
    """1,203 stored documents, more than one read holds: the count is the one rounding
    of all their characters, not a sum of each batch's rounding."""
    store = SqliteStateStore(tmp_path / "state.sqlite3")
    try:
        store.create_index(IndexInfo(name=INDEX, method="indexrag", created_at=0.0))
        # 7 characters each: 1.75 tokens, which rounded per batch would drift.
        documents = [Document(doc_id=f"d{n}", index=INDEX, title="T", text=f"{n:06d}",
                              content_hash=content_hash("T", f"{n:06d}"))
                     for n in range(1_203)]
        store.put_documents(documents)
        assert index_corpus_tokens(store, INDEX, get_index_method("indexrag")) == \
            round(1_203 * 7 / 4)
        assert index_corpus_tokens(store, INDEX, get_index_method("extractive")) is None
    finally:
        store.close()
