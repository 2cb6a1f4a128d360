"""The LLM test server answers CompactRAG's QA-extraction, decomposition and synthesis
prompts, and still classifies every older prompt as before.

Proves: the three kinds are counted in ``by_kind`` and are JSON whatever the request
asks (wrapped under a key in JSON mode where the reply is an array); QA extraction gives
one pair per sentence with a verbatim answer and a short question that leads with no
pronoun, even for sentences without names or about a subject already asked about;
decomposition gives two sub-questions, the second ref'ing the first, for two names or
an "and"/"of the" question, else the question itself; synthesis answers yes/no
questions with yes, else the last sub-question's extracted answer, else a name from its
retrieved answers that neither question holds, never the prompt's example; the
invalid-JSON marker corrupts the three; the older prompts keep their kinds.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import openai
import pytest

from hopindex.backends.llm.client import ChatRequest
from hopindex.methods.bridgerag.prompts import entities_request, judge_request, svo_request
from hopindex.methods.compactrag.parsing import MAX_QUESTION_WORDS, QaPair, parse_qa_pairs
from hopindex.methods.compactrag.prompts import (
    SynthesisStep,
    decompose_request,
    qa_request,
    shown_passage,
    synthesize_request,
)
from hopindex.methods.indexrag.parsing import DocFacts
from hopindex.methods.indexrag.parsing import QaPair as IndexRagPair
from hopindex.methods.indexrag.prompts import stage1_request, stage2_request
from hopindex.methods.ircot import reasoning_request
from hopindex.methods.retrieval.answer import answer_request
from hopindex.methods.sirerag.prompts import propositions_request, summary_request
from hopindex.testing.llm_compactrag import QUESTION_TEMPLATE, UNKNOWN_ANSWER
from hopindex.testing.llm_limits import LlmServerConfig
from hopindex.testing.llm_responses import JSON_KINDS, TaskKind, classify, compute_reply
from hopindex.testing.llm_server import LlmTestServer, running_llm_server

CURIE = ("Marie Curie", "Marie Curie was born in Warsaw. She studied at the University of "
                        "Paris and shared the Nobel Prize with Pierre Curie.\n"
                        "Marie Curie   died in 1934 at Passy.")
JSON_MODE = {"type": "json_object"}


@pytest.fixture
def server() -> Iterator[LlmTestServer]:
    with running_llm_server(LlmServerConfig()) as running:
        yield running


def ask(server: LlmTestServer, request: ChatRequest, **options: object) -> str:
    client = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
    reply = client.chat.completions.create(
        model="m", messages=request.as_messages(), temperature=0, **options)  # type: ignore[call-overload]
    content = reply.choices[0].message.content
    assert isinstance(content, str)
    return content


def _reply(request: ChatRequest, *, json_mode: bool = False) -> object:
    return json.loads(compute_reply([c for _, c in request.messages], json_mode=json_mode).content)


def _about(subject: str) -> str:
    return QUESTION_TEMPLATE.format(subject=subject)


# --- QA extraction ---------------------------------------------------------------------


def test_qa_pairs_are_one_per_sentence_with_verbatim_answers(server: LlmTestServer) -> None:
    """Wrapped in JSON mode, a bare array otherwise; each sentence asks about its first
    name not asked about yet and answers with its last other name (the whitespace run
    folded); all pairs pass the parser."""
    wrapped = json.loads(ask(server, qa_request(*CURIE, [], []), response_format=JSON_MODE))
    bare = json.loads(ask(server, qa_request(*CURIE, [], [])))
    assert wrapped == {"qa": bare}
    assert bare == [
        {"question": _about("Marie Curie"), "answer": "Warsaw"},
        {"question": _about("University of Paris"), "answer": "Pierre Curie"},
        {"question": _about("Passy"), "answer": "Marie Curie"}]
    extraction = parse_qa_pairs(bare, shown_passage(*CURIE))
    assert len(extraction.pairs) == 3 and extraction.dropped_total == 0
    assert server.stats.by_kind == {"qa_pairs": 2}


def test_sentences_without_names_ask_about_their_content_words() -> None:
    """No capitalised name: the question is about the first content words (never a
    pronoun), the answer the sentence's last three words, still verbatim and kept."""
    text = "It was built by them in 1990 for local workers. They later moved it."
    pairs = _reply(qa_request("", text, [], []))
    assert pairs == [
        {"question": _about("was built 1990"), "answer": "for local workers"},
        {"question": _about("later moved"), "answer": "later moved it"}]
    extraction = parse_qa_pairs(pairs, text)
    assert extraction.dropped_total == 0
    assert all(len(p.question.split()) <= MAX_QUESTION_WORDS for p in extraction.pairs)


def test_long_subjects_are_cut_to_keep_questions_short() -> None:
    """A name of many words is cut so that the question stays within twelve words."""
    text = "The Royal Academy Of Sciences Of The Kingdom Of Sweden honoured Curie."
    pairs = _reply(qa_request("", text, [], []))
    assert isinstance(pairs, list)
    assert parse_qa_pairs(pairs, text).dropped_total == 0


# --- decomposition ---------------------------------------------------------------------


@pytest.mark.parametrize(("question", "expected"), [
    ("Were Scott Derrickson and Ed Wood of the same nationality?",
     [(_about("Scott Derrickson"), None), (_about("Ed Wood"), None)]),
    ("Who was born first, Marie Curie or Pierre Curie?",
     [(_about("Marie Curie"), None), (_about("Pierre Curie"), None)]),
    ("Where was the director of the film Titanic born?",
     [(_about("Titanic"), None), ("Where was the director of the film Titanic born?", 1)]),
    ("what is the capital of the country of his birth",
     [(_about("country of his birth"), None),
      ("what is the capital of the country of his birth", 1)]),
    ("Where was Marie Curie born?", [("Where was Marie Curie born?", None)]),
])
def test_decomposition_splits_two_names_or_a_joined_question(
        question: str, expected: list[tuple[str, int | None]]) -> None:
    """Two names: one sub-question about each; one joined by "of the"/"and": the joined
    part (or its name), then the question itself; else the question alone. Indices from 1."""
    items = _reply(decompose_request(question))
    assert items == [{"index": n, "q": q, "ref": ref}
                     for n, (q, ref) in enumerate(expected, start=1)]


def test_decomposition_in_json_mode_is_wrapped(server: LlmTestServer) -> None:
    """JSON mode cannot return a bare array: the list comes under "sub_questions"."""
    reply = json.loads(ask(server, decompose_request("Where was Marie Curie born?"),
                           response_format=JSON_MODE))
    assert reply == {"sub_questions": [{"index": 1, "q": "Where was Marie Curie born?",
                                        "ref": None}]}
    assert server.stats.by_kind == {"decompose": 1}


# --- synthesis -------------------------------------------------------------------------

QUESTION = "Where was the director of Titanic born?"
DIRECTOR = SynthesisStep("Who directed Titanic?", "James Cameron", (
    QaPair("Who directed Titanic?", "James Cameron"),))


def test_synthesis_prefers_the_last_extracted_answer(server: LlmTestServer) -> None:
    """The last sub-question's extracted answer is the answer, an object in any mode."""
    born = SynthesisStep("Where was James Cameron born?", "Kapuskasing", ())
    for options in ({}, {"response_format": JSON_MODE}):
        reply = json.loads(ask(server, synthesize_request(QUESTION, [DIRECTOR, born]),
                               **options))
        assert reply["answer"] == "Kapuskasing" and reply["thought"]
    assert server.stats.by_kind == {"synthesize": 2}


def test_synthesis_without_an_extracted_answer_reads_the_retrieved_answers() -> None:
    """Without an extracted answer: the most frequent name in the last step's retrieved
    answers that neither question holds, else its first answer, else unknown; a yes/no
    question gets yes; the example's France never leaks."""
    born = SynthesisStep("Where was James Cameron born?", "", (
        QaPair("Where was James Cameron born?", "James Cameron was born in Kapuskasing, Ontario"),
        QaPair("Which town lies in Ontario?", "Kapuskasing")))
    assert _answer(QUESTION, [DIRECTOR, born]) == "Kapuskasing"
    year = SynthesisStep("When was James Cameron born?", "", (
        QaPair("When was James Cameron born?", "in 1954"),))
    assert _answer(QUESTION, [DIRECTOR, year]) == "in 1954"
    assert _answer(QUESTION, [SynthesisStep("Where?", "", ())]) == UNKNOWN_ANSWER
    assert _answer(QUESTION, []) == UNKNOWN_ANSWER
    assert _answer("Was Titanic directed by James Cameron?", [DIRECTOR]) == "yes"


def _answer(question: str, steps: list[SynthesisStep]) -> object:
    reply = _reply(synthesize_request(question, steps))
    assert isinstance(reply, dict)
    return reply["answer"]


# --- faults and the older kinds ----------------------------------------------------------


def test_invalid_json_marker_corrupts_the_three_kinds() -> None:
    """All three are JSON kinds, so a prompt holding the marker gets unparseable JSON."""
    assert {TaskKind.QA_PAIRS, TaskKind.DECOMPOSE, TaskKind.SYNTHESIZE} <= JSON_KINDS
    with running_llm_server(LlmServerConfig(invalid_json_marker="POISONED")) as server:
        for request in (qa_request("Bad", "A POISONED passage is here.", [], []),
                        decompose_request("Where was POISONED born?"),
                        synthesize_request("Where was POISONED born?", [DIRECTOR])):
            with pytest.raises(json.JSONDecodeError):
                json.loads(ask(server, request))
        assert server.stats.requests["chat.completions"] == {"invalid_json": 3}


def test_the_older_prompts_keep_their_kinds() -> None:
    """Adding the three kinds changes no other prompt's classification."""
    docs = [DocFacts("d1", "Curie", (IndexRagPair("Where?", "Warsaw"),)),
            DocFacts("d2", "Warsaw", (IndexRagPair("What?", "A city"),))]
    expected = [
        (summary_request(["Warsaw is a city."]), TaskKind.SUMMARY),
        (propositions_request(*CURIE), TaskKind.PROPOSITIONS),
        (stage1_request(*CURIE), TaskKind.STAGE1),
        (stage2_request("Warsaw", docs), TaskKind.STAGE2),
        (judge_request(QUESTION, ["Warsaw"], ["Curie"], ["c1 text"]), TaskKind.SCORES),
        (svo_request(QUESTION, "Warsaw"), TaskKind.QUERIES),
        (entities_request(QUESTION, "Warsaw"), TaskKind.ENTITY_PAIR),
        (reasoning_request(QUESTION, ["Warsaw is a city."], []), TaskKind.IRCOT),
        (answer_request(QUESTION, ["Warsaw is a city."]), TaskKind.ANSWER),
    ]
    for request, kind in expected:
        assert classify("\n\n".join(c for _, c in request.messages)) is kind, request.stage
