"""SiReRAG's three-step extraction (the paper's Figs. 6-8) against the local test server,
and the propositions phase's call bounds in both extraction modes.

Proves: with ``HOPINDEX_SIRERAG_EXTRACTION=three_step`` every chunk costs a coreference
rewrite, an entity call and a facts call, in that order (three rounds over the batch);
the rewritten text, not the chunk, is what the entity and facts prompts carry, a chunk
after the first is rewritten against the one before it, and the facts with their listed
entities become the aggregates; a reply unusable at one step fails that document alone,
named with the chunk and the step, and its later steps are not asked; and, with every
first reply cut at its budget, each call is asked exactly twice, so a chunk costs at most
2 requests in one call and 6 in three steps.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from hopindex.api.client.local import LocalClient
from hopindex.core.models import JobState, UnitKind
from hopindex.methods.chunking import chunk_document
from hopindex.methods.sirerag.paper_prompts import PREVIOUS_LABEL
from hopindex.methods.sirerag.propositions import AGGREGATES, PROPOSITIONS
from hopindex.readers import ReadResult
from hopindex.scheduler.dry_run import Planning
from hopindex.testing.llm_server import LlmTestServer
from hopindex.testing.reply_styles import ReplyStyle
from tests.conftest import CURIE_CORPUS, raw
from tests.methods.indexrag.conftest import LlmClientFactory
from tests.methods.sirerag.conftest import ChatLog

pytestmark = pytest.mark.integration

StartServer = Callable[..., LlmTestServer]
THREE_STEP = {"HOPINDEX_SIRERAG_EXTRACTION": "three_step"}
STEPS = ("coreference", "named_entities", "facts")
POISON = "zq-poison-5c1e"
# Long enough for two chunks; the second opens with a pronoun.
LOVELACE = raw("Ada Lovelace", " ".join(
    f"Ada Lovelace wrote note {n} on the Analytical Engine of Charles Babbage."
    for n in range(40)) + " She is often regarded as the first computer programmer.",
    doc_id="lovelace")

CURIE = ReadResult(documents=list(CURIE_CORPUS))


def chunk_count(client: LocalClient, index: str) -> int:
    doc_ids = sorted(client.service.backends.state.document_hashes(index))
    return sum(len(chunk_document(d)) for d in client.service.get_documents(index, doc_ids))


def aggregate_text(client: LocalClient, index: str, entity: str) -> str:
    state = client.service.backends.state
    [group] = state.get_groups(index, AGGREGATES, [entity]).values()
    [unit] = state.get_units(index, list(group.unit_ids))
    assert unit.kind is UnitKind.PROPOSITION_AGGREGATE
    return unit.text


def test_three_steps_per_chunk_in_order_the_rewrite_feeding_the_rest(
        start_server: StartServer, make_llm_client: LlmClientFactory,
        chat_log: ChatLog) -> None:
    """Three requests per chunk, every rewrite before any entity call before any facts
    call; the entity and facts prompts carry the rewritten chunk ("She worked" is now
    "Marie Curie worked"), the facts prompt the entities found; the second chunk of a
    long document is rewritten against the first; the facts are the aggregates' lines."""
    server = start_server()
    client = make_llm_client(server, method_env=THREE_STEP)
    job = client.ingest_read("paper", ReadResult(documents=[*CURIE_CORPUS, LOVELACE]),
                             method="sirerag")
    assert job.state is JobState.SUCCEEDED, job.reason
    chunks = chunk_count(client, "paper")
    assert chunks == len(CURIE_CORPUS) + 2
    steps = [kind for kind in chat_log.kinds() if kind in STEPS]
    assert steps == [kind for kind in STEPS for _ in range(chunks)]
    assert "propositions" not in server.stats.by_kind
    assert job.llm["sirerag.propositions"].calls == 3 * chunks

    rewritten = ("Marie Curie worked at the University of Paris and shared the Nobel Prize "
                 "with Pierre Curie.")
    [entities_prompt] = [p for p in chat_log.of_kind("named_entities") if rewritten in p]
    assert "She worked" not in entities_prompt.rsplit("Paragraph:", 1)[1]
    [facts_prompt] = [p for p in chat_log.of_kind("facts") if rewritten in p]
    listed = facts_prompt.rsplit("\nEntities:", 1)[1].split("\n", 1)[0]
    assert {"Marie Curie", "University of Paris", "Pierre Curie"} <= {
        name.strip() for name in listed.split(",")}

    first, second = chunk_document(client.service.get_documents("paper", ["lovelace"])[0])
    assert second.endswith("regarded as the first computer programmer.")
    [later] = [p for p in chat_log.of_kind("coreference") if "regarded as the first" in p]
    previous = later.rsplit(PREVIOUS_LABEL, 1)[1]
    assert previous.startswith(f" Ada Lovelace\n{first[:60]}")

    assert rewritten in aggregate_text(client, "paper", "marie curie").splitlines()
    assert ("Ada Lovelace is often regarded as the first computer programmer."
            in aggregate_text(client, "paper", "ada lovelace").splitlines())
    record = client.service.backends.state.get_records("paper", PROPOSITIONS, ["lovelace"])
    assert record["lovelace"]["extraction"] == "three_step"


@pytest.mark.parametrize(("config", "step", "why"), [
    ({"invalid_json_marker": POISON}, "entities", "(after one repair call)"),
    ({"empty_text_marker": POISON}, "coreference", "rewritten paragraph is empty"),
], ids=["entities", "coreference"])
def test_a_bad_reply_at_one_step_fails_that_document_alone(
        start_server: StartServer, make_llm_client: LlmClientFactory,
        config: dict[str, str], step: str, why: str) -> None:
    """The job names the document, the chunk and the step; the document's later steps
    are never asked (a JSON step gets its one repair, a text step none); every other
    document is indexed."""
    server = start_server(**config)
    client = make_llm_client(server, method_env=THREE_STEP)
    bad = raw("Broken", f"This passage makes the model reply {POISON} badly.", doc_id="broken")
    job = client.ingest_read("paper", ReadResult(documents=[*CURIE_CORPUS, bad]),
                             method="sirerag")
    assert job.state is JobState.SUCCEEDED_WITH_ERRORS
    assert [(e.item, e.stage) for e in job.errors] == [("broken", "sirerag.propositions")]
    reason = job.errors[0].reason
    assert reason.startswith(f"proposition extraction failed at chunk 0 ({step} step): ")
    assert why in reason
    good = len(CURIE_CORPUS)
    asked = server.stats.by_kind
    if step == "entities":
        assert (asked["coreference"], asked["named_entities"], asked["facts"]) == (
            good + 1, good + 2, good)
    else:
        assert (asked["coreference"], asked["named_entities"], asked["facts"]) == (
            good + 1, good, good)
    state = client.service.backends.state
    assert state.units_of_documents("paper", ["broken"]) == []
    assert len(state.document_hashes("paper")) == good + 1
    assert "Marie Curie" in aggregate_text(client, "paper", "marie curie")


@pytest.mark.parametrize(("mode", "kinds"), [
    ("one_call", ("propositions",)), ("three_step", STEPS)])
def test_each_extraction_call_is_asked_at_most_twice(
        start_server: StartServer, make_llm_client: LlmClientFactory,
        mode: str, kinds: tuple[str, ...]) -> None:
    """Every first reply cut at its budget: each call is asked once more with a larger
    one, and no more. The phase's requests are then the bound, 2 per call: 2 per chunk
    in one call, 6 in three steps; the job's usage counts them the same."""
    server = start_server(reply_styles=(ReplyStyle.TRUNCATED,), truncated_default_max_tokens=1)
    client = make_llm_client(server, llm_cache="off",
                             method_env={"HOPINDEX_SIRERAG_EXTRACTION": mode})
    job = client.ingest_read("bound", CURIE, method="sirerag")
    assert job.state is JobState.SUCCEEDED, job.reason
    chunks = chunk_count(client, "bound")
    assert {kind: server.stats.by_kind.get(kind, 0) for kind in kinds} == dict.fromkeys(
        kinds, 2 * chunks)
    usage = job.llm["sirerag.propositions"]
    assert usage.calls == 2 * len(kinds) * chunks
    assert usage.repairs == len(kinds) * chunks


def test_a_three_step_dry_run_plans_the_rewrites_and_bounds_the_rest(
        start_server: StartServer, make_llm_client: LlmClientFactory) -> None:
    """The plan holds each chunk's rewrite exactly and two more calls per chunk: a bound
    of 3 per chunk, which the ingest then meets; planned again into a new index, every
    rewrite is a cache hit (the plan's requests are the ones sent)."""
    server = start_server()
    client = make_llm_client(server, method_env=THREE_STEP)
    plan = client.plan_read("dry", CURIE, method="sirerag")
    [propositions] = [p for p in plan.phases if p["phase"] == "sirerag.propositions"]
    assert (propositions["planning"], propositions["calls"]) == (Planning.BOUND,
                                                                 3 * len(CURIE_CORPUS))
    assert sum(server.stats.by_kind.values()) == 0
    client.ingest_read("dry", CURIE, method="sirerag")
    assert sum(server.stats.by_kind.get(kind, 0) for kind in STEPS) == 3 * len(CURIE_CORPUS)
    again = client.plan_read("dry2", CURIE, method="sirerag")
    [propositions] = [p for p in again.phases if p["phase"] == "sirerag.propositions"]
    assert propositions["cache_hits"] == len(CURIE_CORPUS)
