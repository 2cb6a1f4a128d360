"""IndexRAG's LLM calls against the local test server, at their bounds (docs/methods.md,
"IndexRAG", "Call bounds"): stage 1 answers each document in one request, or one per
chunk over the token limit, each at most doubled by a repair or a larger-budget
retry; a query makes one request, even when its selection searches deeper."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from hopindex.core.models import Document, JobState
from hopindex.methods.indexrag.units import stage1_inputs
from hopindex.testing.llm_limits import Endpoint
from hopindex.testing.llm_server import LlmTestServer
from hopindex.testing.reply_styles import ReplyStyle
from tests.conftest import CURIE_CORPUS, LlmClientFactory, ingest_documents, raw

pytestmark = pytest.mark.integration

StartServer = Callable[..., LlmTestServer]
POISON = "zq-poison-91c2"
LIMIT = 100  # tokens: 400 characters
SMALL_LIMIT = {"HOPINDEX_INDEXRAG_MAX_DOCUMENT_TOKENS": str(LIMIT)}
LONG_TEXT = " ".join(f"Ada Lovelace wrote note {n} on the Analytical Engine." for n in range(25))


def _embedder(server: LlmTestServer) -> str:
    # The test server's embeddings: the calls counted here do not depend on the model.
    return f"openai://{server.config.embedding_model}"


def _inputs(text: str, limit: int) -> int:
    return len(stage1_inputs(Document(doc_id="d", index="i", title="t", text=text,
                                      content_hash="h"), limit))


def test_stage1_sends_one_request_per_document_or_chunk_and_one_repair_at_most(
        start_server: StartServer, make_llm_client: LlmClientFactory) -> None:
    """Under a 100-token limit: a short document costs one request; a long one (1,300
    characters) one per chunk; a short one the model always answers badly two (the
    call and its one repair), after which it fails alone. The server's count, the
    job's calls and the job's repairs agree."""
    chunks = _inputs(LONG_TEXT, LIMIT)
    assert chunks > 1
    server = start_server(invalid_json_marker=POISON)
    client = make_llm_client(server, method_env=SMALL_LIMIT, embedder_url=_embedder(server))
    job = ingest_documents(client, "bounds", [
        raw("Short", "Ada Lovelace wrote the first program."),
        raw("Long", LONG_TEXT),
        raw("Broken", f"Charles Babbage replies {POISON} badly.", doc_id="broken")])
    assert job.state is JobState.SUCCEEDED_WITH_ERRORS
    assert [e.item for e in job.errors] == ["broken"]
    assert server.stats.by_kind["stage1"] == 1 + chunks + 2
    assert job.llm["indexrag.stage1"].calls == 1 + chunks + 2
    assert job.llm["indexrag.stage1"].repairs == 1


def test_the_default_limit_sends_the_long_document_whole(
        start_server: StartServer, make_llm_client: LlmClientFactory) -> None:
    """The same 1,300-character document under the default limit: one request, whose
    prompt the server saw with the whole text (the AKU holds every sentence)."""
    server = start_server()
    client = make_llm_client(server, embedder_url=_embedder(server))
    job = ingest_documents(client, "whole", [raw("Long", LONG_TEXT)])
    assert job.state is JobState.SUCCEEDED, job.reason
    assert server.stats.by_kind["stage1"] == 1
    (doc_id,) = client.service.backends.state.document_hashes("whole")
    akus = client.service.backends.state.units_of_documents("whole", [doc_id])
    assert len(akus) == 1
    assert all(f"note {n} " in akus[0].text for n in range(25))


def test_every_call_is_at_most_doubled_by_a_larger_budget_retry(
        start_server: StartServer, make_llm_client: LlmClientFactory) -> None:
    """Every reply cut at a small default budget: each stage-1 and stage-2 call gets
    one larger-budget retry and no more (at most 2 requests per call), and a query,
    whose answer may be cut too, still makes exactly one request."""
    server = start_server(reply_styles=(ReplyStyle.TRUNCATED,))
    client = make_llm_client(server, embedder_url=_embedder(server))
    job = ingest_documents(client, "curie", CURIE_CORPUS)
    assert job.state is JobState.SUCCEEDED, job.reason
    stage1 = job.llm["indexrag.stage1"]
    assert stage1.calls == server.stats.by_kind["stage1"] <= 2 * len(CURIE_CORPUS)
    assert 1 <= stage1.repairs == stage1.calls - len(CURIE_CORPUS)
    for phase, usage in job.llm.items():
        assert usage.calls <= 2 * (usage.calls - usage.repairs), phase
    before = server.stats.count(Endpoint.CHAT)
    result = client.query("curie", "Who did Marie Curie marry?", k=3)
    assert result.usage.llm_calls == 1
    assert server.stats.count(Endpoint.CHAT) - before == 1
