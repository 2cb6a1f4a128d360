"""The test server's kgbridge replies: recognised by the prompts' markers, shaped as
the parsers require, and telling two people of one name apart."""

from __future__ import annotations

import json

from hopindex.backends.llm.client import ChatRequest
from hopindex.methods.kgbridge import prompts
from hopindex.methods.kgbridge.parsing import (
    parse_doc_summary,
    parse_extraction,
    parse_gleaning,
    parse_summaries,
    parse_verdict,
)
from hopindex.methods.kgbridge.prompts import EntityBrief, PairSide
from hopindex.testing import llm_kgbridge
from hopindex.testing.llm_responses import TaskKind, classify, compute_reply


def _reply(request: ChatRequest) -> tuple[TaskKind, str]:
    reply = compute_reply([content for _, content in request.messages], json_mode=True)
    return reply.kind, reply.content


def test_the_server_knows_the_prompts_markers() -> None:
    """The markers the server classifies by are the ones the prompts carry."""
    assert (prompts.EXTRACT_MARKER, prompts.GLEAN_MARKER, prompts.LISTED_LABEL,
            prompts.SUMMARIES_MARKER, prompts.DOC_SUMMARY_MARKER,
            prompts.ADJUDICATE_MARKER) == (
        llm_kgbridge.EXTRACT_MARKER, llm_kgbridge.GLEAN_MARKER, llm_kgbridge.LISTED_LABEL,
        llm_kgbridge.SUMMARIES_MARKER, llm_kgbridge.DOC_SUMMARY_MARKER,
        llm_kgbridge.ADJUDICATE_MARKER)


def test_gleaning_reply_finds_the_quoted_phrases_the_extraction_missed() -> None:
    """The gleaning prompt is told apart from the extraction's (it holds its marker
    too); its reply lists the quoted phrase not listed already, related to the listed
    name sharing its sentence, and nothing when the phrase was listed."""
    passage = 'Ada Lovelace wrote "the notes" in London.'
    kind, content = _reply(prompts.glean_request("T", passage, ["Ada Lovelace", "London"]))
    assert kind is TaskKind.KG_GLEAN
    listed = parse_extraction({"entities": [{"name": "Ada Lovelace"}, {"name": "London"}],
                               "relations": []}).entities
    graph = parse_gleaning(json.loads(content), listed=listed)
    assert [e.name for e in graph.entities] == ["the notes"]
    assert {(r.source, r.target) for r in graph.relations} == {
        ("ada lovelace", "the notes"), ("london", "the notes")}
    _, again = _reply(prompts.glean_request("T", passage, ["Ada Lovelace", "the notes"]))
    assert json.loads(again) == {"entities": [], "relations": []}


def test_extraction_reply_lists_names_and_co_occurrences() -> None:
    """Each sentence's capitalised names, described by their sentences, related when
    they share one; the title is not evidence."""
    kind, content = _reply(prompts.extract_request(
        "Some Title", "Ada Lovelace met Charles Babbage. Ada Lovelace wrote notes."))
    assert kind is TaskKind.KG_EXTRACT
    graph = parse_extraction(json.loads(content))
    assert [(e.name, e.description) for e in graph.entities] == [
        ("Ada Lovelace", "Ada Lovelace met Charles Babbage. Ada Lovelace wrote notes."),
        ("Charles Babbage", "Ada Lovelace met Charles Babbage.")]
    assert [(r.source, r.target) for r in graph.relations] == [
        ("ada lovelace", "charles babbage")]


def test_summaries_reply_gives_each_entity_its_first_sentence() -> None:
    """One summary per entity, under its name, parsed by key."""
    kind, content = _reply(prompts.summaries_request("T", [
        EntityBrief("Ada Lovelace", "person", "She wrote notes. She met Babbage.",
                    (("Ada Lovelace", "met", "Charles Babbage"),)),
        EntityBrief("Charles Babbage", "person", "He built engines.", ())]))
    assert kind is TaskKind.KG_SUMMARIES
    assert parse_summaries(json.loads(content)) == {"ada lovelace": "She wrote notes.",
                                                    "charles babbage": "He built engines."}


def test_doc_summary_reply_is_text_from_the_entity_summaries_or_the_opening() -> None:
    """The first sentence of each entity summary; an empty graph's from its opening."""
    request = prompts.doc_summary_request("T", ["Ada (person): She wrote notes. More.",
                                                "Engine (work): A machine."], "")
    assert classify(request.messages[0][1]) is TaskKind.KG_DOC_SUMMARY
    reply = compute_reply([request.messages[0][1]])
    assert parse_doc_summary(reply.content) == "She wrote notes. A machine."
    empty = prompts.doc_summary_request("T", [], "the river flows past the mill.")
    assert compute_reply([empty.messages[0][1]]).content == "the river flows past the mill."


def test_adjudication_tells_namesakes_apart() -> None:
    """Two summaries sharing a word beyond the name: the same, score 9; sharing only
    the name: different, score 2, which is S_LLM 0 (the verdict is "not the same")."""
    same = prompts.adjudicate_request(
        PairSide("Ada Lovelace", "A", "Ada Lovelace wrote programs for a computer."),
        PairSide("Ada Lovelace", "B", "Ada Lovelace wrote programs as a mathematician."))
    kind, content = _reply(same)
    assert kind is TaskKind.KG_ADJUDICATE
    assert parse_verdict(json.loads(content)).same is True
    assert parse_verdict(json.loads(content)).score == 0.9
    namesakes = prompts.adjudicate_request(
        PairSide("John Smith", "John Smith (footballer)", "John Smith scored ninety goals."),
        PairSide("John Smith", "John Smith (painter)", "John Smith painted landscapes."))
    verdict = parse_verdict(json.loads(_reply(namesakes)[1]))
    assert (verdict.same, verdict.score) == (False, 0.0)
    assert json.loads(_reply(namesakes)[1])["score"] == llm_kgbridge.DIFFERENT_SCORE
