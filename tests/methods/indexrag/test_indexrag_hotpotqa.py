"""IndexRAG in LLM mode on the bundled HotpotQA-100 corpus, against the local test server.

One ingest (module scope) feeds every test: the call counts are checked against what
the server itself counted, and against what the units in the store imply.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, replace
from importlib.resources import as_file, files

import pytest

from hopindex.api.client.local import LocalClient
from hopindex.core.models import Document, Job, JobState, UnitKind
from hopindex.methods.indexrag.indexing import plan_bridges
from hopindex.methods.indexrag.method import IndexRagSettings
from hopindex.methods.indexrag.parsing import ExtractedFacts, QaPair
from hopindex.methods.indexrag.units import (
    doc_facts_from_units,
    document_entities,
    stage1_inputs,
)
from hopindex.methods.registry import method_settings
from hopindex.readers import RawDocument
from hopindex.testing.llm_limits import Endpoint, LlmServerStats, Outcome
from hopindex.testing.llm_server import LlmServerConfig, LlmTestServer
from tests.conftest import ingest_documents, llm_settings, local_client

pytestmark = pytest.mark.integration

INDEX = "hotpot"
QUESTIONS = ("Which magazine was started first, Arthur's Magazine or First for Women?",
             "Were Scott Derrickson and Ed Wood of the same nationality?")


@dataclass
class Ingested:
    server: LlmTestServer
    client: LocalClient
    job: Job
    stats: LlmServerStats  # the server's counters right after the ingest
    documents: list[Document]


@pytest.fixture(scope="module")
def ingested(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Ingested]:
    server = LlmTestServer(LlmServerConfig()).start_in_thread()
    # Embeddings from the test server: these tests count LLM calls and tokens, which
    # the vectors do not change, and the CPU model over ~1,500 AKUs and bridges cost
    # this module over a minute (retrieval quality is tested on real vectors elsewhere).
    client = local_client(llm_settings(tmp_path_factory.mktemp("indexrag"), server,
                                       embedder_url=f"openai://{server.config.embedding_model}"))
    try:
        with as_file(files("hopindex") / "sample" / "hotpotqa-100" / "corpus.json") as corpus:
            job = client.ingest(INDEX, [corpus])
        state = client.service.backends.state
        doc_ids = sorted(state.document_hashes(INDEX))
        yield Ingested(server=server, client=client, job=job, stats=server.stats,
                       documents=state.get_documents(INDEX, doc_ids))
    finally:
        client.close()
        server.stop()


def test_ingest_succeeds_with_every_document_indexed(ingested: Ingested) -> None:
    """The job succeeds without errors, every document gets its content hash, and the
    index holds AKUs and bridging facts whose sources span two or more documents."""
    assert ingested.job.state is JobState.SUCCEEDED, ingested.job.reason
    assert ingested.job.errors == []
    hashes = ingested.client.service.backends.state.document_hashes(INDEX)
    assert len(hashes) == len(ingested.documents) > 900
    assert all(hashes.values())
    counts = ingested.client.service.backends.state.count_units(INDEX)
    assert counts[UnitKind.AKU] > 900
    assert counts[UnitKind.BRIDGE] > 500
    assert counts.get(UnitKind.PASSAGE, 0) == 0  # IndexRAG indexes facts, not passages
    bridges = ingested.client.service.backends.state.units_of_documents(
        INDEX, [d.doc_id for d in ingested.documents[:200]], kinds=(UnitKind.BRIDGE,))
    assert bridges and all(len(u.source_doc_ids) >= 2 for u in bridges)


def _inputs(documents: list[Document]) -> int:
    limit = IndexRagSettings().max_document_tokens
    return sum(len(stage1_inputs(d, limit)) for d in documents)


def test_stage1_makes_exactly_one_call_per_document(ingested: Ingested) -> None:
    """Stage-1 calls = the documents of the corpus, each sent whole as the paper does
    (even the five over 2,000 characters: all are under the token limit), as the
    server counted them and as the job reports them."""
    assert _inputs(ingested.documents) == len(ingested.documents)
    assert max(len(d.text) for d in ingested.documents) > 2000
    assert ingested.stats.by_kind["stage1"] == len(ingested.documents)
    assert ingested.job.llm["indexrag.stage1"].calls == len(ingested.documents)


def test_stage2_makes_exactly_one_call_per_bridge_entity(ingested: Ingested) -> None:
    """Stage-2 calls = entities with 2 <= df <= tau whose facts sit in two or more
    documents, recomputed here from the extractions stored with the AKUs."""
    state = ingested.client.service.backends.state
    units = state.units_of_documents(INDEX, [d.doc_id for d in ingested.documents],
                                     kinds=(UnitKind.AKU,))
    extractions: dict[str, list[ExtractedFacts]] = {}
    for unit in units:
        extractions.setdefault(unit.source_doc_ids[0], []).append(ExtractedFacts(
            qa_pairs=tuple(QaPair(q, a, tuple(e)) for q, a, e in unit.metadata["qa_pairs"]),
            entities=tuple(unit.metadata["entities"])))
    entities_of = {d: document_entities(chunks) for d, chunks in extractions.items()}
    df = Counter(e for entities in entities_of.values() for e in entities)
    tau = method_settings(ingested.client.settings, "indexrag").tau
    window = sorted(e for e, n in df.items() if 2 <= n <= tau)
    facts = doc_facts_from_units(units)
    holders = {e: [facts[d] for d in sorted(entities_of) if e in entities_of[d]]
               for e in window}
    planned = plan_bridges(window, holders)
    assert len(planned) > 500
    assert ingested.stats.by_kind["stage2"] == len(planned)
    assert ingested.job.llm["indexrag.stage2"].calls == len(planned)


def test_job_usage_equals_what_the_server_counted(ingested: Ingested) -> None:
    """Calls and prompt/completion tokens on the job record equal the server's counters,
    and the server answered every request it received."""
    total = ingested.job.llm_total
    stats = ingested.stats
    assert total.calls == stats.count(Endpoint.CHAT, Outcome.OK) == stats.count(Endpoint.CHAT)
    assert total.prompt_tokens == stats.prompt_tokens
    assert total.completion_tokens == stats.completion_tokens
    assert total.retries == 0 and total.cache_hits == 0


def test_query_makes_one_llm_call_and_reports_its_usage(ingested: Ingested) -> None:
    """An indexrag query: one answer call, usage equal to the server's delta, at most
    k_b = 3 bridging facts among at most k = 10 selected units, and passages found."""
    for question in QUESTIONS:
        before = ingested.server.stats
        result = ingested.client.query(INDEX, question, k=5)
        after = ingested.server.stats
        assert result.method == "indexrag"  # the index's own method is the default
        assert result.answer
        assert result.usage.llm_calls == 1
        assert after.count(Endpoint.CHAT) - before.count(Endpoint.CHAT) == 1
        assert after.by_kind["answer"] - before.by_kind.get("answer", 0) == 1
        assert result.usage.prompt_tokens == after.prompt_tokens - before.prompt_tokens
        assert result.usage.completion_tokens == (after.completion_tokens
                                                  - before.completion_tokens)
        kinds = result.trace["selected_kinds"]
        assert sum(kinds.values()) <= 10 and kinds.get("bridge", 0) <= 3
        assert len(result.passages) == 5


def test_ircot_makes_at_most_four_calls_and_reports_them(ingested: Ingested) -> None:
    """IRCoT over the IndexRAG index: reasoning steps plus one answer call, at most 4,
    with usage equal to the server's delta and the steps in the trace."""
    for question in QUESTIONS:
        before = ingested.server.stats
        result = ingested.client.query(INDEX, question, method="ircot", k=5)
        after = ingested.server.stats
        calls = after.count(Endpoint.CHAT) - before.count(Endpoint.CHAT)
        assert 2 <= result.usage.llm_calls == calls <= 4
        assert len(result.trace["steps"]) == calls - 1
        assert result.trace["over"] == "facts"
        assert result.usage.prompt_tokens == after.prompt_tokens - before.prompt_tokens
        assert result.answer and len(result.passages) == 5


def test_second_identical_ingest_makes_no_llm_calls(ingested: Ingested) -> None:
    """Re-ingesting the same corpus skips every document by content hash: 0 calls."""
    before = ingested.server.stats.count(Endpoint.CHAT)
    with as_file(files("hopindex") / "sample" / "hotpotqa-100" / "corpus.json") as corpus:
        job = ingested.client.ingest(INDEX, [corpus])
    assert job.state is JobState.SUCCEEDED
    assert job.count("indexrag.stage1").skipped == len(ingested.documents)
    assert job.llm_total.calls == 0
    assert ingested.server.stats.count(Endpoint.CHAT) == before


def test_same_documents_in_a_new_index_come_from_the_response_cache(
        ingested: Ingested) -> None:
    """Another index over 40 of the documents repeats their stage-1 prompts exactly: every
    one is a cache hit and the server sees no stage-1 request."""
    subset = ingested.documents[:40]
    before = ingested.server.stats
    raw = [_raw(d) for d in subset]
    job = ingest_documents(ingested.client, "hotpot-subset", raw)
    after = ingested.server.stats
    assert job.state is JobState.SUCCEEDED
    assert job.llm["indexrag.stage1"].cache_hits == _inputs(subset)
    assert job.llm["indexrag.stage1"].calls == 0
    assert after.by_kind["stage1"] == before.by_kind["stage1"]


def test_changed_document_recomputes_only_what_it_touches(ingested: Ingested) -> None:
    """Changing one document costs its own stage-1 calls and stage-2 calls for the
    entities it touches, not a rebuild; the server's delta equals the job's usage."""
    document = ingested.documents[0]
    changed = replace(document, text=document.text + " It was later renamed Hopindex Hall.")
    before = ingested.server.stats
    job = ingest_documents(ingested.client, INDEX, [_raw(changed)])
    after = ingested.server.stats
    assert job.state is JobState.SUCCEEDED
    assert job.llm["indexrag.stage1"].calls == 1
    stage2_calls = job.llm["indexrag.stage2"].calls if "indexrag.stage2" in job.llm else 0
    assert stage2_calls <= job.count("indexrag.stage2").total < 60
    assert after.count(Endpoint.CHAT) - before.count(Endpoint.CHAT) == job.llm_total.calls
    assert ingested.client.service.backends.state.document_hashes(INDEX)[document.doc_id]


def _raw(document: Document) -> RawDocument:
    return RawDocument(doc_id=document.doc_id, title=document.title, text=document.text,
                       metadata={}, origin=document.doc_id)
