"""IndexRAG ingest and queries when the model or its configuration misbehaves.

Each test runs the real pipeline against a local test server configured to fail in
one way: invalid JSON, a 429 storm, hanging requests, a refused key, injected faults
over the whole HotpotQA-100 corpus.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from importlib.resources import as_file, files

import pytest

from hopindex.core.errors import ConfigError, InvalidInputError, LlmAuthenticationError
from hopindex.core.ids import doc_id_from_title
from hopindex.core.models import JobState, UnitKind
from hopindex.core.settings import CacheMode
from hopindex.methods.indexrag.method import IndexRagSettings
from hopindex.methods.indexrag.units import stage1_inputs
from hopindex.testing.llm_limits import Endpoint, Outcome
from hopindex.testing.llm_server import LlmTestServer
from tests.conftest import (
    CURIE_CORPUS,
    ClientFactory,
    LlmClientFactory,
    ingest_documents,
    raw,
)

pytestmark = pytest.mark.integration

StartServer = Callable[..., LlmTestServer]
POISON = "zq-poison-7f3a"


def test_a_document_whose_extraction_fails_for_good_fails_alone(
        start_server: StartServer, make_llm_client: LlmClientFactory) -> None:
    """Invalid JSON for one document, repair included: that document alone fails with the
    reason on the job and outstanding on the index; the others are indexed and the job
    finishes ``succeeded_with_errors``."""
    server = start_server(invalid_json_marker=POISON)
    client = make_llm_client(server)
    bad = raw("Broken", f"This document makes the model reply {POISON} badly every time.",
              doc_id="broken")
    job = ingest_documents(client, "curie", [*CURIE_CORPUS, bad])
    assert job.state is JobState.SUCCEEDED_WITH_ERRORS
    assert job.missing() == {"indexrag.stage1": 1}
    assert [(e.item, e.stage) for e in job.errors] == [("broken", "indexrag.stage1")]
    failed = client.service.outstanding("curie").failed
    assert [(f.phase, f.item) for f in failed] == [("indexrag.stage1", "broken")]
    assert "holds no JSON object or array (after one repair call)" in job.errors[0].reason
    assert job.count("indexrag.stage1").failed == 1
    assert job.count("indexrag.stage1").done == len(CURIE_CORPUS)
    hashes = client.service.backends.state.document_hashes("curie")
    assert hashes["broken"] == ""  # retried by the next ingest
    assert all(h for d, h in hashes.items() if d != "broken")
    # one call per document, plus the single repair attempt for the broken one
    assert server.stats.by_kind["stage1"] == len(CURIE_CORPUS) + 2


def test_a_chunk_naming_no_entity_is_still_indexed(
        start_server: StartServer, make_llm_client: LlmClientFactory) -> None:
    """An empty entity list is a valid extraction: the AKU is indexed, no bridge is asked."""
    server = start_server()
    client = make_llm_client(server)
    job = ingest_documents(client, "plain", [raw("notes", "the water was cold and the wind "
                                                "was strong all through the long night.")])
    assert job.state is JobState.SUCCEEDED and job.errors == []
    assert client.service.backends.state.count_units("plain")[UnitKind.AKU] == 1
    assert "stage2" not in server.stats.by_kind


def test_a_429_storm_slows_the_ingest_but_loses_nothing(
        start_server: StartServer, make_llm_client: LlmClientFactory) -> None:
    """With 60% of requests refused with 429, every document is still indexed; the job
    counts the retries the server caused."""
    server = start_server(fail_429=0.6, fault_retry_after_s=0.01)
    client = make_llm_client(server, llm_max_attempts=40)
    job = ingest_documents(client, "curie", CURIE_CORPUS)
    assert job.state is JobState.SUCCEEDED and job.errors == []
    refused = server.stats.count(Endpoint.CHAT, Outcome.RATE_LIMITED)
    assert refused > 0
    assert job.llm_total.retries == refused
    assert job.llm_total.calls == server.stats.count(Endpoint.CHAT, Outcome.OK)


def test_a_server_that_hangs_fails_each_document_with_the_reason(
        start_server: StartServer, make_llm_client: LlmClientFactory) -> None:
    """Requests that never answer time out, are retried a bounded number of times, and
    the documents fail with a reason instead of hanging the job."""
    server = start_server(fail_timeout=1.0)
    client = make_llm_client(server, llm_timeout_s=0.3, llm_max_attempts=2)
    started = time.perf_counter()
    job = ingest_documents(client, "curie", CURIE_CORPUS[:2])
    # A hang check, not a speed one: a request not timed out hangs for the server's
    # timeout_hang_s (an hour). Timed out, the ingest waits for at most 2 documents x
    # 2 attempts x 0.3 s plus 2 backoffs of <= 0.05 s, about 1.3 s, and little CPU:
    # 1.25 s measured in a fresh test process (so no model load hides in it); 20 s
    # leaves more than ten times that for a busy machine.
    assert time.perf_counter() - started < 20
    assert job.state.is_final
    assert sorted(e.item for e in job.errors) == sorted(
        doc_id_from_title(d.title) for d in CURIE_CORPUS[:2])
    assert all("failed 2 times" in e.reason and "Timeout" in e.reason for e in job.errors)


def test_a_wrong_api_key_fails_at_once_without_retries(
        start_server: StartServer, make_llm_client: LlmClientFactory) -> None:
    """401: a configuration error raised at once, each request tried exactly once, and
    the job record says why it failed."""
    server = start_server(api_key="the-right-key")
    client = make_llm_client(server, llm_api_key="a-wrong-key")
    with pytest.raises(LlmAuthenticationError, match="refused the API key"):
        ingest_documents(client, "curie", CURIE_CORPUS)
    assert server.stats.count(Endpoint.CHAT, Outcome.UNAUTHORIZED) == len(CURIE_CORPUS)
    assert server.stats.count(Endpoint.CHAT) == len(CURIE_CORPUS)
    (job,) = client.jobs.list_jobs("curie")
    assert job.state is JobState.FAILED and "API key" in job.reason


def test_an_indexrag_index_needs_an_llm(make_client: ClientFactory) -> None:
    """Without HOPINDEX_LLM_MODEL the default is extractive; asking for indexrag, or
    querying with an LLM method that can read the index, names the setting to change."""
    client = make_client()
    with pytest.raises(ConfigError, match="HOPINDEX_LLM_MODEL"):
        ingest_documents(client, "llm", CURIE_CORPUS, method="indexrag")
    assert client.jobs.list_jobs() == []
    job = ingest_documents(client, "plain", CURIE_CORPUS[:2])
    assert client.service.backends.state.get_index("plain").method == "extractive"  # type: ignore[union-attr]
    assert job.state is JobState.SUCCEEDED
    for method in ("ircot", "bridgerag"):
        with pytest.raises(ConfigError, match="HOPINDEX_LLM_MODEL"):
            client.query("plain", "Where was Marie Curie born?", method=method, k=5)


def test_an_index_keeps_the_method_it_was_built_with(
        start_server: StartServer, make_llm_client: LlmClientFactory) -> None:
    """Ingesting into an IndexRAG index as extractive is refused, naming the field."""
    client = make_llm_client(start_server())
    ingest_documents(client, "curie", CURIE_CORPUS[:2])
    with pytest.raises(InvalidInputError, match="built with 'indexrag'") as caught:
        ingest_documents(client, "curie", CURIE_CORPUS[2:], method="extractive")
    assert caught.value.where == "method"


def test_deleting_a_document_rebuilds_the_bridges_it_fed(
        start_server: StartServer, make_llm_client: LlmClientFactory) -> None:
    """After a delete no unit cites the document, and the entities it shared were asked
    again (or dropped when they fell below two documents)."""
    server = start_server()
    client = make_llm_client(server)
    ingest_documents(client, "curie", CURIE_CORPUS)
    state = client.service.backends.state
    marie = doc_id_from_title("Marie Curie")
    fed = state.units_of_documents("curie", [marie], kinds=(UnitKind.BRIDGE,))
    assert fed
    job = client.delete_documents("curie", [marie])
    assert job.state is JobState.SUCCEEDED
    assert state.units_of_documents("curie", [marie]) == []
    assert all(marie not in u.source_doc_ids
               for u in state.get_units("curie", [u.unit_id for u in fed]))
    assert job.count("indexrag.stage2").total > 0


def test_ircot_alone_reads_passages_of_an_extractive_index(
        start_server: StartServer, make_llm_client: LlmClientFactory) -> None:
    """IRCoT over an index built without an LLM gathers passages, within 4 calls."""
    server = start_server()
    client = make_llm_client(server)
    ingest_documents(client, "plain", CURIE_CORPUS, method="extractive")
    assert "stage1" not in server.stats.by_kind  # extractive ingest asks the model nothing
    result = client.query("plain", "Where was the wife of Pierre Curie born?",
                          method="ircot", k=3)
    assert result.trace["over"] == "passages"
    assert 2 <= result.usage.llm_calls == server.stats.count(Endpoint.CHAT) <= 4
    assert {p.via_kind for p in result.passages} == {"passage"}


def test_twenty_percent_injected_faults_still_index_every_document(
        start_server: StartServer, make_llm_client: LlmClientFactory) -> None:
    """HotpotQA-100 with 10% 429s and 10% 500s (cache off, so every call reaches the
    server): the job succeeds, every document is indexed, stage 1 still answers each
    document once, and the retries on the job equal the faults the server injected."""
    server = start_server(fail_429=0.1, fail_500=0.1, fault_retry_after_s=0.01, seed=7)
    # Embeddings from the test server too: the point is the LLM calls (the embedding
    # requests meet the same faults and retry, which makes the test no easier), and
    # the CPU model over the whole corpus cost a minute.
    client = make_llm_client(server, llm_max_attempts=12, llm_cache=CacheMode.OFF,
                             embedder_url=f"openai://{server.config.embedding_model}")
    with as_file(files("hopindex") / "sample" / "hotpotqa-100" / "corpus.json") as corpus:
        job = client.ingest("hotpot", [corpus])
    assert job.state is JobState.SUCCEEDED, job.reason
    assert job.errors == []
    hashes = client.service.backends.state.document_hashes("hotpot")
    assert len(hashes) > 900 and all(hashes.values())
    documents = client.service.backends.state.get_documents("hotpot", sorted(hashes))
    limit = IndexRagSettings().max_document_tokens
    assert job.llm["indexrag.stage1"].calls == sum(len(stage1_inputs(d, limit))
                                                    for d in documents)
    stats = server.stats
    faults = (stats.count(Endpoint.CHAT, Outcome.RATE_LIMITED)
              + stats.count(Endpoint.CHAT, Outcome.SERVER_ERROR))
    assert faults > 0.15 * stats.count(Endpoint.CHAT)
    assert job.llm_total.retries == faults
    assert job.llm_total.calls == stats.count(Endpoint.CHAT, Outcome.OK)
