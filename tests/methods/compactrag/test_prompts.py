"""CompactRAG's three prompts: what they ask, how they lay out their inputs, and that the
local test server and the real client read them right.

Proves: each request has its stage name, temperature 0 and format (QA extraction JSON,
the query's calls text by default with a token bound); the QA prompt lists the
passage's entities and the noun chunks that add to them, and its example obeys the
parser's own rules; decomposition and synthesis put the question and the resolved
steps where the test server looks, one line per item; the test server classifies each
prompt to its kind even when the evidence holds other kinds' markers; and through the
real client a passage's pairs parse in one call and a query costs exactly two calls.
"""

from __future__ import annotations

import json

import pytest

from hopindex.backends.llm.client import ChatRequest, ResponseFormat
from hopindex.backends.llm.runner import LlmRunner
from hopindex.backends.llm.usage import UsageMeter
from hopindex.core.models import EntitySpan
from hopindex.methods.compactrag.parsing import QaPair, parse_decomposition, parse_qa_pairs
from hopindex.methods.compactrag.prompts import (
    DECOMPOSE,
    DECOMPOSE_MAX_TOKENS,
    MAX_NOUN_CHUNKS,
    NO_ENTITIES,
    QA,
    QA_EXAMPLE_PAIRS,
    QA_EXAMPLE_TEXT,
    SYNTHESIZE,
    SYNTHESIZE_MAX_TOKENS,
    SynthesisStep,
    decompose_request,
    qa_request,
    shown_passage,
    synthesize_request,
)
from hopindex.methods.compactrag.text_replies import parse_synthesis
from hopindex.testing.llm_compactrag import (
    DECOMPOSE_LABEL,
    DECOMPOSE_MARKER,
    QA_MARKER,
    SYNTHESIZE_LABEL,
    SYNTHESIZE_MARKER,
    qa_passage,
)
from hopindex.testing.llm_responses import TaskKind, classify, compute_reply
from hopindex.testing.llm_server import LlmTestServer
from tests.methods.conftest import LLM_POISON

TITLE = "Marie Curie"
TEXT = ("Marie Curie was born in Warsaw in 1867.\n"
        "Marie Curie won the Nobel Prize in Physics with Pierre Curie.")
ENTITIES = (EntitySpan("Marie Curie", "PERSON", 0, 11), EntitySpan("Warsaw", "GPE", 24, 30),
            EntitySpan("Marie Curie", "PERSON", 40, 51), EntitySpan("1867", "DATE", 34, 38))
QUESTION = "Where was the winner of the Nobel Prize in Physics born?"
STEPS = (
    SynthesisStep("Who won the Nobel\nPrize in Physics?", "Marie Curie", (
        QaPair("Who won the Nobel Prize in Physics?", "Marie Curie"),
        QaPair("What did Marie Curie win?", "the Nobel Prize in Physics"))),
    SynthesisStep("Where was Marie Curie born?", "", ()))
POISON = LLM_POISON


def _prompt(request: ChatRequest) -> str:
    return "\n\n".join(content for _, content in request.messages)


def _reply(request: ChatRequest, *, json_mode: bool = False) -> str:
    return compute_reply([content for _, content in request.messages],
                         json_mode=json_mode).content


# --- QA extraction ----------------------------------------------------------------------


def test_qa_request_lists_entities_and_the_noun_chunks_that_add_to_them() -> None:
    """JSON at temperature 0 under the phase's stage; entities once each as ``- text
    (LABEL)``; noun chunks that are not entities, once each, at most five."""
    chunks = ["marie curie", "the Nobel Prize", "the Nobel  Prize", *[f"chunk {n}" for n in
                                                                      range(8)]]
    request = qa_request(TITLE, TEXT, ENTITIES, chunks)
    assert (request.stage, request.temperature) == (QA, 0.0)
    assert request.response_format is ResponseFormat.JSON
    prompt = _prompt(request)
    tail = prompt[prompt.rindex(QA_MARKER):]
    assert tail.split("\n\n")[:2] == [
        "[Entity List]:\n- Marie Curie (PERSON)\n- Warsaw (GPE)\n- 1867 (DATE)",
        "[Important Noun Phrases]:\n- the Nobel Prize\n- chunk 0\n- chunk 1\n- chunk 2\n"
        "- chunk 3"]
    assert MAX_NOUN_CHUNKS == 5
    assert "at most 12 words" in prompt and "exact verbatim substring" in prompt


def test_qa_request_without_entities_says_so_and_omits_noun_phrases() -> None:
    """No entity: the authors' placeholder line; no noun chunk: no empty section."""
    prompt = _prompt(qa_request("", "Only text here.", [], []))
    tail = prompt[prompt.rindex(QA_MARKER):]
    assert tail.startswith(f"{QA_MARKER}\n{NO_ENTITIES}\n\nReturn only valid JSON")
    assert "Phrases]:\n-" not in tail


def test_the_server_reads_the_passage_not_the_example() -> None:
    """The passage (title line first) is what sits between the last ``[Original Text]:``
    and the entity list after it, newlines kept; the example comes before it."""
    prompt = _prompt(qa_request(TITLE, TEXT, ENTITIES, []))
    assert qa_passage(prompt) == shown_passage(TITLE, TEXT) == f"{TITLE}\n{TEXT}"
    assert QA_EXAMPLE_TEXT in prompt and classify(prompt) is TaskKind.QA_PAIRS
    assert shown_passage("", f"  {TEXT}\n") == TEXT


def test_the_prompts_example_keeps_the_parsers_rules() -> None:
    """Every example pair would be kept: the model is shown only what the parser accepts."""
    pairs = [{"question": p.question, "answer": p.answer} for p in QA_EXAMPLE_PAIRS]
    extraction = parse_qa_pairs(pairs, QA_EXAMPLE_TEXT)
    assert extraction.pairs == QA_EXAMPLE_PAIRS and extraction.dropped_total == 0


@pytest.mark.parametrize("json_mode", [True, False])
def test_the_servers_pairs_parse_and_are_all_kept(json_mode: bool) -> None:
    """In JSON mode (wrapped) or not (a bare array), one pair per sentence, none dropped:
    the second sentence about Marie Curie asks about its next name instead."""
    request = qa_request(TITLE, TEXT, ENTITIES, [])
    extraction = parse_qa_pairs(json.loads(_reply(request, json_mode=json_mode)),
                                shown_passage(TITLE, TEXT))
    assert extraction.pairs == (
        QaPair("What does the text state about Marie Curie?", "Warsaw"),
        QaPair("What does the text state about Nobel Prize?", "Pierre Curie"))
    assert extraction.dropped_total == 0


# --- decomposition ----------------------------------------------------------------------


def test_decompose_request_is_text_bounded_with_the_question_last() -> None:
    """Text by default (the client caches text, and no repair call is spent), JSON on
    request; the question, on one line, follows the label after the example."""
    request = decompose_request(f"  {QUESTION[:20]}\n{QUESTION[20:]} ")
    assert (request.stage, request.temperature) == (DECOMPOSE, 0.0)
    assert request.response_format is ResponseFormat.TEXT
    assert request.max_tokens == DECOMPOSE_MAX_TOKENS
    prompt = _prompt(request)
    assert prompt.endswith(f"{DECOMPOSE_LABEL}\n{QUESTION}")
    assert DECOMPOSE_MARKER in prompt and classify(prompt) is TaskKind.DECOMPOSE
    assert decompose_request(QUESTION, response_format=ResponseFormat.JSON).response_format is (
        ResponseFormat.JSON)


@pytest.mark.parametrize("json_mode", [True, False])
def test_the_servers_decomposition_parses_without_repairs(json_mode: bool) -> None:
    """Wrapped in JSON mode or a bare array: two sub-questions, the second ref'ing the
    first, nothing degraded."""
    question = "Where was the director of the film Titanic born?"
    reply = _reply(decompose_request(question), json_mode=json_mode)
    decomposition = parse_decomposition(reply, question)
    assert [(s.index, s.ref) for s in decomposition.sub_questions] == [(1, None), (2, 1)]
    assert decomposition.degraded == []


# --- synthesis --------------------------------------------------------------------------


def test_synthesize_request_lays_out_each_step_after_the_example() -> None:
    """Text by default and bounded; after the last label: the question, then per step
    its one-line text, extracted answer (or ``(none)``) and knowledge pairs."""
    request = synthesize_request(QUESTION, STEPS)
    assert (request.stage, request.temperature) == (SYNTHESIZE, 0.0)
    assert request.response_format is ResponseFormat.TEXT
    assert request.max_tokens == SYNTHESIZE_MAX_TOKENS
    prompt = _prompt(request)
    assert prompt[prompt.rindex(SYNTHESIZE_LABEL):] == (
        f"{SYNTHESIZE_LABEL}\n"
        f"Multi-hop question: {QUESTION}\n\n"
        "Sub-question 1: Who won the Nobel Prize in Physics?\n"
        "Extracted answer: Marie Curie\n"
        "Retrieved knowledge:\n"
        "Who won the Nobel Prize in Physics?\nMarie Curie\n\n"
        "What did Marie Curie win?\nthe Nobel Prize in Physics\n\n"
        "Sub-question 2: Where was Marie Curie born?\n"
        "Extracted answer: (none)\n"
        "Retrieved knowledge:\n(none)")
    assert SYNTHESIZE_MARKER in prompt and classify(prompt) is TaskKind.SYNTHESIZE


def test_the_servers_synthesis_parses_without_repairs() -> None:
    """The reply is the JSON object asked for, whatever the format, read undegraded."""
    for json_mode in (True, False):
        synthesis = parse_synthesis(_reply(synthesize_request(QUESTION, STEPS),
                                           json_mode=json_mode))
        assert synthesis.answer and synthesis.thought and synthesis.degraded == []


def test_evidence_holding_other_markers_does_not_change_the_kind() -> None:
    """Passages and retrieved pairs may hold other tasks' markers; the kind stays."""
    tricky = 'Question: who? "qa_pairs" "scores" [A] x === Document: t === So the answer is'
    assert classify(_prompt(qa_request(TITLE, tricky, [], []))) is TaskKind.QA_PAIRS
    step = SynthesisStep("Who?", "", (QaPair(f"{tricky} ref", f'"ref" {tricky}'),))
    assert classify(_prompt(synthesize_request(QUESTION, [step]))) is TaskKind.SYNTHESIZE
    assert classify(_prompt(decompose_request(tricky))) is TaskKind.DECOMPOSE


# --- the real client against the test server --------------------------------------------


def test_extraction_takes_one_call_and_a_query_exactly_two(
        poisoned_runner: tuple[LlmRunner, LlmTestServer]) -> None:
    """A passage's pairs parse in one call; a query's decomposition and synthesis are one
    call each, even when both replies are corrupted JSON: they degrade, never repair."""
    llm, server = poisoned_runner
    usage = UsageMeter()
    passage = shown_passage(TITLE, TEXT)
    extraction = llm.complete_json(qa_request(TITLE, TEXT, ENTITIES, []),
                                   lambda value: parse_qa_pairs(value, passage), usage)
    assert extraction.pairs and usage.stages[QA].calls == 1
    decomposition = parse_decomposition(
        llm.complete(decompose_request(QUESTION), usage).content, QUESTION)
    synthesis = parse_synthesis(llm.complete(synthesize_request(QUESTION, STEPS), usage).content)
    assert len(decomposition.sub_questions) == 2 and synthesis.answer
    poisoned = f"{QUESTION} {POISON}"
    broken = parse_decomposition(llm.complete(decompose_request(poisoned), usage).content,
                                 poisoned)
    assert [s.text for s in broken.sub_questions] == [poisoned] and broken.degraded
    degraded = parse_synthesis(llm.complete(synthesize_request(poisoned, STEPS), usage).content)
    assert degraded.degraded
    assert usage.stages[DECOMPOSE].calls == 2 and usage.stages[SYNTHESIZE].calls == 2
    assert server.stats.by_kind == {"qa_pairs": 1, "decompose": 2, "synthesize": 2}
