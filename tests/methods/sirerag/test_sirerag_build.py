"""A SiReRAG build over HotpotQA-100 documents against the local test server.

One build (module scope) feeds most tests: the server's own call counts are checked
against the chunks and the planned clusters, and a second build from scratch checks
that the same seed gives the same trees.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from hopindex.api.client.local import LocalClient
from hopindex.core.models import Document, Job, JobState, Unit, UnitKind
from hopindex.methods.base import QueryOptions
from hopindex.methods.chunking import chunk_document
from hopindex.methods.sirerag.trees import PLANS, Tree, plan_key
from hopindex.readers import ReadResult
from hopindex.testing.llm_server import LlmServerConfig, LlmTestServer
from tests.conftest import raw
from tests.methods.indexrag.conftest import llm_settings, local_client

pytestmark = pytest.mark.integration

INDEX = "hotpot"
DOCS = 80
QUESTION = "If Gallu is a demon Lilu is what?"  # its gold passages: Alû, Lilu (mythology)
SAMPLE = Path(__file__).parents[3] / "hopindex" / "sample" / "hotpotqa-100" / "corpus.json"


def hotpot_subset(folder: Path, limit: int) -> Path:
    """The first ``limit`` HotpotQA-100 documents."""
    corpus: dict[str, Any] = json.loads(SAMPLE.read_text(encoding="utf-8"))
    path = folder / "corpus.json"
    path.write_text(json.dumps(dict(list(corpus.items())[:limit])), encoding="utf-8")
    return path


@dataclass
class Built:
    server: LlmTestServer
    client: LocalClient
    job: Job
    corpus: Path
    documents: list[Document]
    propositions: int  # proposition calls the server answered for the build
    summaries: int  # summary calls likewise
    trees: list[tuple[str, int, str, tuple[str, ...]]]  # the trees right after the build


def _build(folder: Path, server: LlmTestServer, corpus: Path) -> tuple[LocalClient, Job]:
    client = local_client(llm_settings(folder, server))
    return client, client.ingest(INDEX, [corpus], method="sirerag")


def summaries(client: LocalClient) -> list[Unit]:
    state = client.service.backends.state
    units: list[Unit] = []
    for tree in Tree:
        groups = state.get_groups(INDEX, tree.namespace, state.list_group_keys(
            INDEX, tree.namespace))
        units.extend(state.get_units(INDEX, [u for g in groups.values() for u in g.unit_ids]))
    return sorted(units, key=lambda u: u.source_key)


def tree_shape(client: LocalClient) -> list[tuple[str, int, str, tuple[str, ...]]]:
    return [(u.source_key, u.level, u.text, tuple(u.metadata["children"]))
            for u in summaries(client)]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    server = LlmTestServer(LlmServerConfig()).start_in_thread()
    folder = tmp_path_factory.mktemp("sirerag")
    corpus = hotpot_subset(folder, DOCS)
    client, job = _build(folder / "data", server, corpus)
    try:
        doc_ids = sorted(client.service.backends.state.document_hashes(INDEX))
        yield Built(server=server, client=client, job=job, corpus=corpus,
                    documents=client.service.get_documents(INDEX, doc_ids),
                    propositions=server.stats.by_kind["propositions"],
                    summaries=server.stats.by_kind["summary"], trees=tree_shape(client))
    finally:
        client.close()
        server.stop()


def test_the_build_succeeds_and_the_pool_holds_every_node_kind(built: Built) -> None:
    """Passages, aggregates and summaries of both trees over more than one level."""
    assert built.job.state is JobState.SUCCEEDED, built.job.reason
    assert built.job.errors == []
    counts = built.client.service.backends.state.count_units(INDEX)
    assert counts[UnitKind.PASSAGE] == sum(len(chunk_document(d)) for d in built.documents)
    assert counts[UnitKind.PROPOSITION_AGGREGATE] > 100
    found = summaries(built.client)
    assert counts[UnitKind.SUMMARY] == len(found)
    levels = {(u.metadata["tree"], u.level) for u in found}
    assert {("similarity", 1), ("similarity", 2), ("relatedness", 1),
            ("relatedness", 2)} <= levels
    assert max(level for _, level in levels) <= 3


def test_one_proposition_call_per_chunk(built: Built) -> None:
    """The server answered exactly one proposition request per chunk, and the job's
    usage for the phase says the same."""
    chunks = sum(len(chunk_document(d)) for d in built.documents)
    assert built.propositions == chunks
    assert built.job.llm["sirerag.propositions"].calls == chunks


def test_one_summary_call_per_cluster(built: Built) -> None:
    """Every planned cluster of every level of both trees cost one summary request, and
    each has its summary unit."""
    state = built.client.service.backends.state
    plans = state.get_records(INDEX, PLANS, [plan_key(t, level) for t in Tree
                                             for level in range(3)])
    clusters = sum(len(p["clusters"]) for p in plans.values())
    assert built.summaries == clusters == len(summaries(built.client))
    done = built.job.count("sirerag.similarity").done + built.job.count(
        "sirerag.relatedness").done
    assert done == clusters


def test_a_summary_names_its_children_and_the_documents_beneath(built: Built) -> None:
    """A level-2 summary's children are level-1 summaries of its tree, and its sources
    are theirs."""
    found = {u.unit_id: u for u in summaries(built.client)}
    upper = next(u for u in found.values() if u.level == 2)
    children = [found[c] for c in upper.metadata["children"]]
    assert all(c.level == 1 and c.metadata["tree"] == upper.metadata["tree"] for c in children)
    assert set(upper.source_doc_ids) == {d for c in children for d in c.source_doc_ids}


def test_a_query_reads_the_flat_pool_and_reports_passages_through_provenance(
        built: Built) -> None:
    """``sirerag`` answers from its top 20 nodes and reports k distinct documents; the
    similarity pool is smaller and holds no aggregate or relatedness summary."""
    both = built.client.query(INDEX, QUESTION, method="sirerag", k=5)
    assert both.answer
    assert len(both.passages) == 5 and len({p.doc_id for p in both.passages}) == 5
    assert len(both.trace["nodes"]) == 20
    assert both.usage.llm_calls == 1
    similar = built.client.query(INDEX, QUESTION, method="sirerag", k=5,
                                 options=QueryOptions(params={"pool": "similarity"}))
    assert similar.trace["pool_size"] < both.trace["pool_size"]
    counts = built.client.service.backends.state.count_units(INDEX)
    assert both.trace["pool_size"] == sum(counts.values())
    assert all(n["kind"] == "passage" or n["tree"] == "similarity"
               for n in similar.trace["nodes"])
    titles = {p.title for p in both.passages} | {p.title for p in similar.passages}
    assert {"Alû", "Lilu (mythology)"} & titles


def test_reingesting_the_unchanged_corpus_calls_no_model(built: Built) -> None:
    """Unchanged documents are skipped by their content hash: no proposition or summary
    request reaches the server."""
    before = dict(built.server.stats.by_kind)
    job = built.client.ingest(INDEX, [built.corpus])
    assert job.state is JobState.SUCCEEDED
    assert built.server.stats.by_kind == before


def test_a_changed_document_marks_the_trees_stale_until_a_rebuild(built: Built) -> None:
    """Changing one document re-extracts it alone and leaves the trees as they were,
    marked stale with one changed document; a rebuild job builds them again, paying
    only for the clusters that changed (the others' summaries come from the cache)."""
    state = built.client.service.backends.state
    first = built.documents[0]
    before = dict(built.server.stats.by_kind)
    trees_before = tree_shape(built.client)
    job = built.client.ingest_read(INDEX, ReadResult(documents=[raw(
        first.title, first.text + " It was restored in 1999 by the Vale Trust.")]))
    assert job.state is JobState.SUCCEEDED, job.reason
    after = built.server.stats.by_kind
    assert after["propositions"] - before["propositions"] == len(chunk_document(first))
    assert after["summary"] == before["summary"]
    assert tree_shape(built.client) == trees_before
    levels = {s.phase: s for s in built.client.service.outstanding(INDEX).levels}
    assert set(levels) == {"sirerag.similarity", "sirerag.relatedness"}
    assert all(s.stale and s.changed_since == 1 for s in levels.values())

    rebuilt = built.client.indexes.rebuild_index(INDEX)
    assert rebuilt.state is JobState.SUCCEEDED, rebuilt.reason
    paid = built.server.stats.by_kind["summary"] - before["summary"]
    assert 0 < paid < built.summaries
    assert rebuilt.llm_total.cache_hits > 0
    assert not any(s.stale for s in built.client.service.outstanding(INDEX).levels)
    passage = state.units_of_documents(INDEX, [first.doc_id], kinds=(UnitKind.PASSAGE,))[0]
    assert any(passage.unit_id in u.metadata["children"] for u in summaries(built.client))


def test_the_same_seed_builds_the_same_trees(built: Built,
                                             tmp_path_factory: pytest.TempPathFactory) -> None:
    """A second build from scratch (its own state and LLM cache) of the same corpus
    gives the same summaries over the same children. Last: the second service takes
    over the process's runtime."""
    client, job = _build(tmp_path_factory.mktemp("again"), built.server, built.corpus)
    try:
        assert job.state is JobState.SUCCEEDED
        assert tree_shape(client) == built.trees
    finally:
        client.close()
