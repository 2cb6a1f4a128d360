"""CompactRAG against the local test server: the QA knowledge base, and queries of
exactly two LLM calls whatever the number of sub-questions."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from hopindex.core.models import JobState, UnitKind
from hopindex.methods.chunking import chunk_document
from hopindex.testing.llm_server import LlmTestServer
from tests.conftest import CURIE_CORPUS, LlmClientFactory, ingest_documents, raw

pytestmark = pytest.mark.integration

StartServer = Callable[..., LlmTestServer]
POISON = "zq-poison-7f3a"
SHARED = "Marie Curie was born in Warsaw."
CORPUS = [*CURIE_CORPUS,
          raw("Warsaw notes", f"{SHARED} Warsaw is the capital of Poland."),
          raw("Curie facts", f"{SHARED} Curie won two Nobel Prizes.")]


def _calls(server: LlmTestServer, kind: str) -> int:
    return server.stats.by_kind.get(kind, 0)


def test_the_knowledge_base_holds_one_unit_per_document_and_question(
        start_server: StartServer, make_llm_client: LlmClientFactory) -> None:
    """One QA call per chunk; every unit is ``question\\nanswer`` and cites one
    document, which states each question once; a fact two documents state is a unit
    of each; an unchanged re-ingest calls nothing."""
    server = start_server()
    client = make_llm_client(server)
    job = ingest_documents(client, "curie", CORPUS, method="compactrag")
    assert job.state is JobState.SUCCEEDED, job.reason
    state = client.service.backends.state
    documents = state.get_documents("curie", sorted(state.document_hashes("curie")))
    assert _calls(server, "qa_pairs") == sum(len(chunk_document(d)) for d in documents)
    units = state.units_of_documents("curie", [d.doc_id for d in documents])
    assert units and all(u.kind is UnitKind.QA_PAIR for u in units)
    assert all(u.text == f"{u.metadata['question']}\n{u.metadata['answer']}" for u in units)
    assert all(len(u.source_doc_ids) == 1 for u in units)
    keys = [(u.source_doc_ids[0], u.metadata["question"].lower()) for u in units]
    assert len(keys) == len(set(keys))
    texts = Counter(u.text for u in units)
    shared = [u for u in units if texts[u.text] > 1]
    assert len({u.source_doc_ids[0] for u in shared}) >= 2, (
        "the sentence both documents state is a unit of each")
    before = dict(server.stats.by_kind)
    again = ingest_documents(client, "curie", CORPUS)
    assert again.state is JobState.SUCCEEDED
    assert server.stats.by_kind == before


@pytest.mark.parametrize("question", [
    "Where was Marie Curie born?",
    "Which country has the capital where Marie Curie was born, and who did she marry?",
])
def test_a_query_makes_exactly_two_llm_calls(
        question: str, start_server: StartServer, make_llm_client: LlmClientFactory) -> None:
    """One decomposition and one synthesis call, counted by the server, whatever the
    number of sub-questions; the answer, passages and token usage come back."""
    server = start_server()
    client = make_llm_client(server)
    ingest_documents(client, "curie", CORPUS, method="compactrag")
    before = sum(server.stats.by_kind.values())
    result = client.query("curie", question, method="compactrag", k=3)
    assert sum(server.stats.by_kind.values()) - before == 2
    assert _calls(server, "decompose") == 1 and _calls(server, "synthesize") == 1
    assert result.usage.llm_calls == 2
    assert result.usage.prompt_tokens > 0 and result.usage.completion_tokens > 0
    assert result.answer
    assert result.passages and len(result.passages) <= 3
    steps = result.trace["sub_questions"]
    assert steps and all(s["units"] for s in steps)
    assert result.trace["modules"] == {"extractor": "top-answer", "rewriter": "substitution"}


def test_independent_sub_questions_are_embedded_in_one_call(
        start_server: StartServer, make_llm_client: LlmClientFactory,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A comparison's two halves wait for no answer: both are embedded by one
    ``embed_texts`` call, and neither is embedded again on its own."""
    server = start_server()
    client = make_llm_client(server)
    ingest_documents(client, "curie", CORPUS, method="compactrag")
    embedder = client.service.backends.embedder
    batches: list[list[str]] = []
    singles: list[str] = []
    embed_texts, embed_query = embedder.embed_texts, embedder.embed_query
    monkeypatch.setattr(embedder, "embed_texts",
                        lambda texts: batches.append(list(texts)) or embed_texts(texts))
    monkeypatch.setattr(embedder, "embed_query",
                        lambda text: singles.append(text) or embed_query(text))
    result = client.query("curie", "Were Marie Curie and Pierre Curie both physicists?",
                          method="compactrag", k=3)
    steps = result.trace["sub_questions"]
    assert [s["ref"] for s in steps] == [None, None]
    assert batches == [[s["q"] for s in steps]]
    assert singles == []
    assert all(s["units"] for s in steps)


def test_a_passage_whose_pairs_stay_invalid_fails_alone(
        start_server: StartServer, make_llm_client: LlmClientFactory) -> None:
    """Invalid JSON after the one repair: that document alone fails, named under
    ``compactrag.qa``, and the next job (a repair with the model fixed) indexes it."""
    server = start_server(invalid_json_marker=POISON)
    client = make_llm_client(server)
    bad = raw("Broken", f"This passage makes the model reply {POISON} badly.", doc_id="broken")
    job = ingest_documents(client, "curie", [*CORPUS, bad], method="compactrag")
    assert job.state is JobState.SUCCEEDED_WITH_ERRORS
    assert [(e.item, e.stage) for e in job.errors] == [("broken", "compactrag.qa")]
    assert client.service.backends.state.document_hashes("curie")["broken"] == ""
    client.close()
    fixed = start_server()
    client = make_llm_client(fixed)
    job = client.indexes.repair_index("curie")
    assert job.state is JobState.SUCCEEDED, job.reason
    assert _calls(fixed, "qa_pairs") == 1
    assert client.service.backends.state.units_of_documents("curie", ["broken"])


def test_local_models_answer_the_sub_questions_between_the_two_calls(
        tiny_models: tuple[Path, Path], start_server: StartServer,
        make_llm_client: LlmClientFactory) -> None:
    """With the extractor and rewriter set to local model folders, a query still makes
    exactly two LLM calls, and each sub-question's answer is a span of its retrieved
    QA units (the tiny random models show the mechanics, not quality)."""
    extractor, rewriter = tiny_models
    server = start_server()
    client = make_llm_client(server, method_env={
        "HOPINDEX_COMPACTRAG_EXTRACTOR": str(extractor),
        "HOPINDEX_COMPACTRAG_REWRITER": str(rewriter)})
    ingest_documents(client, "curie", CORPUS, method="compactrag")
    before = sum(server.stats.by_kind.values())
    result = client.query("curie", "Where was Marie Curie born, and who did she marry?",
                          method="compactrag", k=5)
    assert sum(server.stats.by_kind.values()) - before == 2
    assert result.trace["modules"] == {"extractor": str(extractor), "rewriter": str(rewriter)}
    units = {u.unit_id: u for u in client.service.backends.state.get_units(
        "curie", [u for s in result.trace["sub_questions"] for u in s["units"]])}
    for step in result.trace["sub_questions"]:
        # A span may run from a unit's question line into its answer: read on one line.
        texts = " ".join(" ".join(units[u].text.split()) for u in step["units"]).lower()
        assert step["answer"].lower() in texts
