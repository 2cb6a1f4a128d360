"""The LLM test server answers SiReRAG's proposition and summary prompts over HTTP.

Proves: the two kinds are counted in ``by_kind``; propositions are one per sentence with
the capitalised names as entities (shared across documents), wrapped in JSON mode and a
bare array otherwise, and parse with SiReRAG's parser; summaries are the first sentence
of each text, bounded and without stacked prefixes; replies repeat; the invalid-JSON
marker and fault share corrupt propositions but leave summaries intact; an outage armed
by one kind refuses the other.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import openai
import pytest

from hopindex.backends.llm.client import ChatRequest
from hopindex.methods.sirerag.parsing import parse_propositions
from hopindex.methods.sirerag.prompts import propositions_request, summary_request
from hopindex.testing.llm_limits import Endpoint, LlmServerConfig, Outcome
from hopindex.testing.llm_server import LlmTestServer, running_llm_server
from hopindex.testing.llm_sirerag import MAX_SUMMARY_CHARS

CURIE = ("Marie Curie", "Marie Curie was born in Warsaw. She studied at the University of "
                        "Paris and shared the Nobel Prize with Pierre Curie.")
WARSAW = ("Warsaw", "Warsaw is the capital of Poland. The Vistula flows through Warsaw.")
JSON_MODE = {"type": "json_object"}


@pytest.fixture
def server() -> Iterator[LlmTestServer]:
    with running_llm_server(LlmServerConfig()) as running:
        yield running


def client(server: LlmTestServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)


def ask(server: LlmTestServer, request: ChatRequest, **options: object) -> str:
    reply = client(server).chat.completions.create(
        model="m", messages=request.as_messages(), temperature=0, **options)  # type: ignore[call-overload]
    content = reply.choices[0].message.content
    assert isinstance(content, str)
    return content


def test_propositions_are_sentences_with_their_names_as_entities(server: LlmTestServer) -> None:
    """JSON mode gets the wrapper object, which parses; the entity both documents name is
    listed in both, so aggregates form across documents."""
    curie = json.loads(ask(server, propositions_request(*CURIE), response_format=JSON_MODE))
    assert curie == {"propositions": [
        {"proposition": "Marie Curie was born in Warsaw.", "entities": ["Marie Curie", "Warsaw"]},
        {"proposition": "She studied at the University of Paris and shared the Nobel Prize "
                        "with Pierre Curie.",
         "entities": ["University of Paris", "Nobel Prize", "Pierre Curie"]}]}
    warsaw = parse_propositions(json.loads(ask(server, propositions_request(*WARSAW),
                                               response_format=JSON_MODE)))
    assert [p.entities for p in warsaw] == [("Warsaw", "Poland"), ("Vistula", "Warsaw")]
    assert {p.text for p in parse_propositions(curie)} == {
        item["proposition"] for item in curie["propositions"]}
    assert server.stats.by_kind == {"propositions": 2}


def test_propositions_without_json_mode_are_a_bare_array(server: LlmTestServer) -> None:
    """Asked without response_format, the reply is the array itself, which also parses."""
    reply = json.loads(ask(server, propositions_request(*WARSAW)))
    assert isinstance(reply, list)
    assert [p.text for p in parse_propositions(reply)] == [
        "Warsaw is the capital of Poland.", "The Vistula flows through Warsaw."]


def test_summary_is_the_first_sentence_of_each_text_bounded(server: LlmTestServer) -> None:
    """One first sentence per text, in order; a summary of summaries keeps one prefix; a
    large cluster stays within the bound; max_tokens cuts it like any free text."""
    texts = [f"{CURIE[0]}\n{CURIE[1]}", WARSAW[1]]
    summary = ask(server, summary_request(texts))
    assert summary == "Summary: Marie Curie was born in Warsaw. Warsaw is the capital of Poland."
    upper = ask(server, summary_request([summary, "Summary: Poland lies in Europe. More."]))
    assert upper == ("Summary: Marie Curie was born in Warsaw. Poland lies in Europe.")
    many = [f"Text number {n} mentions Warsaw and a great many other things." for n in range(60)]
    bounded = ask(server, summary_request(many))
    assert len(bounded) <= MAX_SUMMARY_CHARS and bounded.startswith("Summary: Text number 0 ")
    cut = client(server).chat.completions.create(
        model="m", messages=summary_request(many).as_messages(), max_tokens=5)  # type: ignore[arg-type]
    assert cut.choices[0].finish_reason == "length"
    assert server.stats.by_kind == {"summary": 4}


def test_replies_repeat_for_the_same_prompt(server: LlmTestServer) -> None:
    """The same passage gets the same propositions and the same cluster the same summary."""
    for request in (propositions_request(*CURIE), summary_request([CURIE[1], WARSAW[1]])):
        assert ask(server, request) == ask(server, request)


def test_invalid_json_marker_and_share_corrupt_propositions_only() -> None:
    """A passage holding the marker gets unparseable JSON, the others do not; with every
    reply faulted, propositions break and a summary, free text, stays intact."""
    with running_llm_server(LlmServerConfig(invalid_json_marker="POISONED")) as server:
        with pytest.raises(json.JSONDecodeError):
            json.loads(ask(server, propositions_request("Bad", "A POISONED passage is here."),
                           response_format=JSON_MODE))
        json.loads(ask(server, propositions_request(*CURIE), response_format=JSON_MODE))
        assert server.stats.requests["chat.completions"] == {"invalid_json": 1, "ok": 1}
    with running_llm_server(LlmServerConfig(fail_invalid_json=1.0)) as server:
        with pytest.raises(json.JSONDecodeError):
            json.loads(ask(server, propositions_request(*WARSAW)))
        assert ask(server, summary_request([WARSAW[1]])).startswith("Summary: Warsaw")
        assert server.stats.by_kind == {"propositions": 1, "summary": 1}


def test_outage_armed_by_summaries_refuses_every_chat() -> None:
    """The first summary request opens the outage window; propositions asked before it
    pass, those asked inside it get the 503 as well."""
    config = LlmServerConfig(outage_on_kind="summary", outage_s=30.0)
    with running_llm_server(config) as server:
        ask(server, propositions_request(*CURIE))
        for request in (summary_request([WARSAW[1]]), propositions_request(*WARSAW)):
            with pytest.raises(openai.InternalServerError):
                ask(server, request)
        assert server.stats.count(Endpoint.CHAT, Outcome.OUTAGE) == 2
        assert server.stats.by_kind == {"propositions": 2, "summary": 1}
