"""SiReRAG's prompts and reply parsers, read right by the local test server and the client.

Proves: the parsers accept the shapes the prompts ask for (a bare array, the JSON-mode
wrapper) and clean what does not change the meaning, reject every other shape with an
``LlmOutputError`` that names the problem and makes the client repair; the prompts
carry the markers and layout the test server keys on; and the real client, through
the runner, gets parseable propositions and a summary from the server, with a
poisoned document failing alone after its one repair.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from hopindex.backends.llm.client import ChatRequest, ResponseFormat
from hopindex.backends.llm.reply_shapes import collecting_notes
from hopindex.backends.llm.runner import LlmRunner
from hopindex.backends.llm.usage import UsageMeter
from hopindex.core.errors import LlmOutputError
from hopindex.methods.sirerag.parsing import (
    Proposition,
    ReplyShapeError,
    parse_propositions,
    parse_summary,
)
from hopindex.methods.sirerag.prompts import (
    PROPOSITIONS,
    SUMMARIES,
    SUMMARY_QUERY,
    propositions_request,
    summary_request,
)
from hopindex.testing.llm_responses import (
    PARAGRAPH_LABEL,
    PROPOSITIONS_MARKER,
    SUMMARY_MARKER,
    TaskKind,
    classify,
    compute_reply,
    summary_texts,
)
from hopindex.testing.llm_server import LlmTestServer
from tests.methods.conftest import LLM_POISON

CURIE = ("Marie Curie", "Marie Curie was born in Warsaw in 1867. Marie Curie won the "
                        "Nobel Prize in Physics with Pierre Curie.")
WARSAW = ("Warsaw", "Warsaw is the capital of Poland. Warsaw lies on the Vistula.")
POISON = LLM_POISON


def _prompt(messages: tuple[tuple[str, str], ...]) -> str:
    return "\n\n".join(content for _, content in messages)


# --- parsers ------------------------------------------------------------------------


def test_parse_propositions_accepts_the_array_and_the_json_mode_wrapper() -> None:
    """Both shapes the prompt asks for give the same propositions, in reply order."""
    items = [{"proposition": "Marie Curie was born in Warsaw.", "entities": ["Marie Curie"]},
             {"proposition": "Drug sales are reaching record highs.", "entities": []}]
    expected = [Proposition("Marie Curie was born in Warsaw.", ("Marie Curie",)),
                Proposition("Drug sales are reaching record highs.", ())]
    assert parse_propositions(items) == expected
    assert parse_propositions({"propositions": items}) == expected
    assert parse_propositions({"propositions": []}) == []


def test_parse_propositions_cleans_what_does_not_change_the_meaning() -> None:
    """Blank propositions go; whitespace collapses; entities are stripped, blank ones
    dropped and repeats (in any case) kept once; a missing or null entity list is empty;
    a repeated proposition is kept once with the entities of both."""
    parsed = parse_propositions([
        {"proposition": "  Warsaw is\nthe capital of Poland. ",
         "entities": [" Warsaw ", "warsaw", "", "Poland", "WARSAW", "Pol  and"]},
        {"proposition": "   ", "entities": ["Nobody"]},
        {"proposition": "It rained.", "entities": None},
        {"proposition": "It snowed."},
        {"proposition": "Warsaw is the capital of Poland.", "entities": ["Vistula", "poland"],
         "triplets": [["Warsaw", "capital of", "Poland"]]},
    ])
    assert parsed == [
        Proposition("Warsaw is the capital of Poland.",
                    ("Warsaw", "Poland", "Pol and", "Vistula")),
        Proposition("It rained.", ()),
        Proposition("It snowed.", ()),
    ]


@pytest.mark.parametrize(("bad", "named"), [
    ("not json structure", "expected a JSON array of propositions, got str"),
    (None, "got null"),
    ({"facts": []}, r"keys \['facts'\]"),
    ({"propositions": {"proposition": "x"}}, "got dict"),
    (["Marie Curie was born in Warsaw."], r"sirerag\.propositions propositions: no usable "
                                          r"element among 1"),
    ([{"fact": "x", "entities": []}, None], "no usable element among 2"),
    ([{"proposition": 7, "entities": []}], "no usable element among 1"),
])
def test_parse_propositions_rejects_other_shapes_naming_the_problem(bad: Any,
                                                                     named: str) -> None:
    """A reply that is not the array (or its wrapper), or whose elements none fit, is an
    LlmOutputError naming the reply kind and what is wrong, and a ValueError, on which
    the client makes its one repair attempt."""
    with pytest.raises(LlmOutputError, match=named) as caught:
        parse_propositions(bad)
    assert isinstance(caught.value, ReplyShapeError)
    assert isinstance(caught.value, ValueError)


def test_parse_propositions_drops_misfits_and_bad_names_not_the_reply() -> None:
    """A null, a proposition without its text or with a number for it, and a blank one
    are dropped and noted; a name that is not text costs that name only; one name given
    bare is a list of one (coerced); the propositions that fit are kept in order."""
    with collecting_notes() as notes:
        parsed = parse_propositions({"propositions": [
            None, {"fact": "x"}, {"proposition": 7}, {"proposition": " "},
            {"proposition": "Marie Curie was born in Warsaw.",
             "entities": ["Marie Curie", None, 1867, "Warsaw"]},
            {"proposition": "Warsaw is in Poland.", "entities": "Warsaw"}]})
    assert parsed == [Proposition("Marie Curie was born in Warsaw.", ("Marie Curie", "Warsaw")),
                      Proposition("Warsaw is in Poland.", ("Warsaw",))]
    assert (notes.dropped, notes.coerced) == (6, 1)
    assert notes.reasons["sirerag.propositions propositions: null element"] == 1
    assert notes.reasons["sirerag.propositions propositions: blank proposition"] == 1
    assert notes.reasons["sirerag.propositions propositions entities: null element"] == 1
    assert notes.reasons["sirerag.propositions propositions entities: int element"] == 1


def test_parse_summary_strips_and_rejects_an_empty_reply() -> None:
    """A summary is the reply without surrounding space; nothing but space is an error."""
    assert parse_summary("  Warsaw is the capital of Poland.\n") == (
        "Warsaw is the capital of Poland.")
    for empty in ("", " \n\t "):
        with pytest.raises(LlmOutputError, match="empty"):
            parse_summary(empty)


# --- prompts, as the test server reads them -------------------------------------------


def test_propositions_request_carries_the_marker_and_the_passage() -> None:
    """JSON, temperature 0, the phase as stage; the server sees the propositions marker
    and reads the passage (title first) after its label, not the instructions."""
    request = propositions_request(*CURIE)
    assert (request.stage, request.temperature) == (PROPOSITIONS, 0.0)
    assert request.response_format is ResponseFormat.JSON
    prompt = _prompt(request.messages)
    assert PROPOSITIONS_MARKER in prompt and '"propositions"' in prompt
    assert prompt.count(PARAGRAPH_LABEL) == 1
    assert f"{PARAGRAPH_LABEL} Marie Curie\nMarie Curie was born" in prompt
    assert classify(prompt) is TaskKind.PROPOSITIONS
    for json_mode in (True, False):
        reply = compute_reply([c for _, c in request.messages], json_mode=json_mode)
        propositions = parse_propositions(json.loads(reply.content))
        assert [p.text for p in propositions] == [
            "Marie Curie was born in Warsaw in 1867.",
            "Marie Curie won the Nobel Prize in Physics with Pierre Curie."]
        assert propositions[0].entities == ("Marie Curie", "Warsaw")
    assert propositions_request("", "Only text here.").messages[0][1].count(
        f"{PARAGRAPH_LABEL} Only text here.") == 1


def test_summary_request_lays_out_the_cluster_between_rules() -> None:
    """Plain text, temperature 0; the server finds the summary instruction and recovers
    each non-blank text, in order, from between the rule lines."""
    texts = ["Warsaw is the capital of Poland.\nWarsaw lies on the Vistula.", "  ",
             "Marie Curie was born in Warsaw."]
    request = summary_request(texts)
    assert (request.stage, request.temperature) == (SUMMARIES, 0.0)
    assert request.response_format is ResponseFormat.TEXT
    prompt = _prompt(request.messages)
    assert SUMMARY_QUERY in prompt and SUMMARY_MARKER in prompt
    assert classify(prompt) is TaskKind.SUMMARY
    assert summary_texts(prompt) == [texts[0], texts[2]]
    # A passage may hold other tasks' markers: the summary instruction still decides.
    tricky = summary_request(['Question: who? The reply had "qa_pairs" and "proposition".'])
    assert classify(_prompt(tricky.messages)) is TaskKind.SUMMARY


# --- the real client against the test server ------------------------------------------


def test_runner_gets_propositions_and_a_summary_from_the_test_server(
        poisoned_runner: tuple[LlmRunner, LlmTestServer]) -> None:
    """Two documents naming Warsaw share that entity; a poisoned document fails alone,
    after one repair; the summary parses; the usage and the server's counts agree."""
    llm, server = poisoned_runner
    usage = UsageMeter()
    outcomes = llm.complete_json_many(
        [propositions_request(*CURIE), propositions_request(*WARSAW),
         propositions_request("Bad", f"This passage is {POISON} on purpose.")],
        parse_propositions, usage)
    curie, warsaw, poisoned = outcomes
    assert isinstance(curie, list) and isinstance(warsaw, list)
    assert isinstance(poisoned, LlmOutputError)
    assert "warsaw" in {e.lower() for p in curie for e in p.entities}
    assert "warsaw" in {e.lower() for p in warsaw for e in p.entities}
    summary = parse_summary(llm.complete(
        summary_request(["\n".join(p.text for p in curie), "\n".join(p.text for p in warsaw)]),
        usage).content)
    assert summary == ("Summary: Marie Curie was born in Warsaw in 1867. "
                       "Warsaw is the capital of Poland.")
    assert usage.stages[PROPOSITIONS].calls == 4  # 2 + the poisoned one and its repair
    assert usage.stages[SUMMARIES].calls == 1
    assert server.stats.by_kind == {"propositions": 4, "summary": 1}


def test_a_reply_the_parser_rejects_is_repaired_once_then_fails(
        poisoned_runner: tuple[LlmRunner, LlmTestServer]) -> None:
    """A prompt without the marker gets the server's generic JSON ({"result": ...}): the
    parser's rejection makes the client ask once more, then give up with LlmOutputError."""
    llm, server = poisoned_runner
    request = propositions_request(*CURIE)
    unmarked = request.messages[0][1].replace(PROPOSITIONS_MARKER, '"statement"')
    usage = UsageMeter()
    with pytest.raises(LlmOutputError, match='"propositions"'):
        llm.complete_json(ChatRequest(stage=PROPOSITIONS, messages=(("user", unmarked),)),
                          parse_propositions, usage)
    assert usage.stages[PROPOSITIONS].calls == 2
    assert server.stats.by_kind == {"other": 2}
