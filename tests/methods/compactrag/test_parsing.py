"""CompactRAG's reply parsers: QA pairs (strict shape, rules enforced by dropping) and the
decomposition (read from any text, never failing).

Proves: ``parse_qa_pairs`` keeps the pairs that follow the prompt's rules with the
passage's own answer span, counts every dropped pair under its reason (empty, pronoun,
too long, not verbatim, duplicate) and raises an ``LlmOutputError`` that is also a
``ValueError`` on a wrong shape; ``parse_decomposition`` reads every reply shape the
authors' code handles (array, wrapper, fence, prose, near-JSON, 0-based indices, plain
strings), repairs refs, repeats and order, noting each repair, and falls back to the
question itself when nothing is usable; ``normalise_question`` folds case, punctuation
and whitespace.
"""

from __future__ import annotations

from typing import Any

import pytest

from hopindex.backends.llm.reply_shapes import collecting_notes
from hopindex.core.errors import LlmOutputError, ReplyShapeError
from hopindex.methods.compactrag.parsing import (
    MAX_QUESTION_WORDS,
    Decomposition,
    DropReason,
    QaPair,
    SubQuestion,
    normalise_question,
    parse_decomposition,
    parse_qa_pairs,
)

PASSAGE = ("Marie Curie\nMarie  Curie was born in Warsaw in 1867.\nShe shared the Nobel Prize "
           "in Physics\nwith Pierre Curie, her husband.")
QUESTION = "Where was the discoverer of polonium born?"


def _pair(question: Any, answer: Any) -> dict[str, Any]:
    return {"question": question, "answer": answer}


def _drops(**counts: int) -> dict[DropReason, int]:
    return {reason: counts.get(reason.value, 0) for reason in DropReason}


def _texts(decomposition: Decomposition) -> list[tuple[int, str, int | None]]:
    return [(s.index, s.text, s.ref) for s in decomposition.sub_questions]


# --- QA pairs ---------------------------------------------------------------------------


def test_kept_answers_are_the_passages_own_span_on_one_line() -> None:
    """Matching ignores case and whitespace runs (a line break included), and edge
    punctuation the passage lacks; the kept answer is the passage's text, one line."""
    extraction = parse_qa_pairs([
        _pair("Where was Marie Curie born?", "born in warsaw"),
        _pair("Which prize did Marie Curie share?", "the nobel prize in physics with pierre"),
        _pair("Who was Marie Curie's husband?", '"Pierre Curie."'),
        _pair("When was Marie Curie born?", 1867),
    ], PASSAGE)
    assert extraction.pairs == (
        QaPair("Where was Marie Curie born?", "born in Warsaw"),
        QaPair("Which prize did Marie Curie share?", "the Nobel Prize in Physics with Pierre"),
        QaPair("Who was Marie Curie's husband?", "Pierre Curie"),
        QaPair("When was Marie Curie born?", "1867"))
    assert extraction.dropped == _drops() and extraction.dropped_total == 0
    assert extraction.pairs[0].unit_text == "Where was Marie Curie born?\nborn in Warsaw"


@pytest.mark.parametrize("wrapped", [
    {"qa": [_pair("Where was Marie Curie born?", "Warsaw")]},
    {"qa_pairs": [_pair("Where was Marie Curie born?", "Warsaw")]},
    {"atomic_facts": ["Marie Curie was born in Warsaw."],
     "qa": [_pair("Where was Marie Curie born?", "Warsaw")]},
])
def test_the_array_may_come_wrapped_in_an_object(wrapped: dict[str, Any]) -> None:
    """JSON mode's wrapper, the key models reach for, and the authors' own reply with
    its atomic facts all give the pairs."""
    assert parse_qa_pairs(wrapped, PASSAGE).pairs == (
        QaPair("Where was Marie Curie born?", "Warsaw"),)


@pytest.mark.parametrize(("pair", "reason"), [
    (_pair("  ", "Warsaw"), DropReason.EMPTY),
    (_pair("Where was Marie Curie born?", ""), DropReason.EMPTY),
    (_pair("Where was Marie Curie born?", None), DropReason.EMPTY),
    (_pair(None, "Warsaw"), DropReason.EMPTY),
    (_pair("She was born where?", "Warsaw"), DropReason.PRONOUN),
    (_pair("Its founder was born where?", "Warsaw"), DropReason.PRONOUN),
    (_pair("Where was he born?", "Warsaw"), DropReason.PRONOUN),
    (_pair("Who did she share it with?", "Pierre Curie"), DropReason.PRONOUN),
    (_pair(" ".join(["Where"] + ["really"] * MAX_QUESTION_WORDS) + "?", "Warsaw"),
     DropReason.TOO_LONG),
    (_pair("Where was Marie Curie born?", "Krakow"), DropReason.NOT_VERBATIM),
    (_pair("Where was Marie Curie born?", "born in Warsaw in 1868"), DropReason.NOT_VERBATIM),
])
def test_each_rule_violation_drops_the_pair_and_counts_its_reason(
        pair: dict[str, Any], reason: DropReason) -> None:
    """A pair breaking one rule is dropped and counted under that reason alone; the
    valid pair beside it is kept."""
    extraction = parse_qa_pairs([pair, _pair("Who shared the Nobel Prize?", "Pierre Curie")],
                                PASSAGE)
    assert extraction.pairs == (QaPair("Who shared the Nobel Prize?", "Pierre Curie"),)
    assert extraction.dropped == _drops(**{reason.value: 1})
    assert extraction.dropped_total == 1


def test_pronoun_rule_spares_questions_that_name_their_subject() -> None:
    """A pronoun is fine beside a name (the search still knows the subject), a title in
    capitals is no pronoun, and a question of exactly twelve words is short enough."""
    questions = ["Which prize did Marie Curie share with her husband?",
                 "Who starred in It Follows?",
                 "Where in the city of Warsaw was the physicist Marie Curie born?"]
    assert len(questions[2].split()) == MAX_QUESTION_WORDS
    passage = "It Follows starred Maika Monroe. " + PASSAGE
    answers = ["Nobel Prize", "Maika Monroe", "Warsaw"]
    extraction = parse_qa_pairs([_pair(q, a) for q, a in zip(questions, answers, strict=True)],
                                passage)
    assert [p.question for p in extraction.pairs] == questions


def test_duplicates_are_judged_on_the_normalised_question_among_kept_pairs() -> None:
    """A repeat differing only in case, punctuation or spacing is dropped; a repeat of a
    question whose first pair was dropped is kept, since nothing was kept for it."""
    extraction = parse_qa_pairs([
        _pair("Where was Marie Curie born?", "Warsaw"),
        _pair("where was  marie curie born", "Warsaw in 1867"),
        _pair("Who shared the Nobel Prize?", "Krakow"),
        _pair("Who shared the Nobel Prize?", "Pierre Curie"),
    ], PASSAGE)
    assert [(p.question, p.answer) for p in extraction.pairs] == [
        ("Where was Marie Curie born?", "Warsaw"), ("Who shared the Nobel Prize?", "Pierre Curie")]
    assert extraction.dropped == _drops(duplicate=1, not_verbatim=1)


def test_questions_are_kept_on_one_line() -> None:
    """A line break inside a question would break the unit's two-line text."""
    extraction = parse_qa_pairs([_pair("Where was\nMarie Curie  born?", "Warsaw")], PASSAGE)
    assert extraction.pairs[0].unit_text == "Where was Marie Curie born?\nWarsaw"


@pytest.mark.parametrize(("bad", "named"), [
    ("Marie Curie was born in Warsaw.", r"compactrag\.qa: expected a JSON array .* got str"),
    ({"pairs_list": []}, r'object with the array under "qa"; got an object with keys'),
    ({"qa": {"question": "q"}}, r"compactrag\.qa: expected a JSON array of question-answer "
                                r"pairs, got dict"),
    (["Where was Marie Curie born?"], r"compactrag\.qa qa: no usable element among 1"),
    ([{"answer": "Warsaw"}], r"compactrag\.qa qa: no usable element among 1"),
    ([_pair(7, "Warsaw")], r"compactrag\.qa qa: no usable element"),
    ([_pair("Where?", ["Warsaw"]), None], r"compactrag\.qa qa: no usable element among 2"),
    ([_pair("Is it?", True)], r"compactrag\.qa qa: no usable element"),
])
def test_wrong_shapes_raise_an_error_the_client_repairs(bad: Any, named: str) -> None:
    """A reply that is not the array (or its wrapper), or whose pairs none fit the
    declared shape, is an LlmOutputError naming the reply kind and what is wrong, and a
    ValueError, on which the client makes its one repair attempt."""
    with pytest.raises(LlmOutputError, match=named) as caught:
        parse_qa_pairs(bad, PASSAGE)
    assert isinstance(caught.value, ReplyShapeError)
    assert isinstance(caught.value, ValueError)


def test_misfit_and_null_pairs_are_dropped_and_noted_the_rest_kept() -> None:
    """A null pair, a pair without its answer, a numeric question and a boolean answer
    are dropped with their reasons (not the reply); an answer given as a number is
    read as text and counted as coerced; the rules' drops are noted under their reason."""
    with collecting_notes() as notes:
        extraction = parse_qa_pairs({"qa": [
            None, {"question": "Where?"}, _pair(7, "Warsaw"), _pair("Is it?", True),
            _pair("When was Marie Curie born?", 1867),
            _pair("Who shared the Nobel Prize?", "Pierre Curie"),
            _pair("Where was Marie Curie born?", "Krakow")]}, PASSAGE)
    assert extraction.pairs == (QaPair("When was Marie Curie born?", "1867"),
                                QaPair("Who shared the Nobel Prize?", "Pierre Curie"))
    assert extraction.dropped == _drops(not_verbatim=1)
    assert (notes.coerced, notes.dropped) == (1, 5)
    assert notes.reasons["compactrag.qa qa: null element"] == 1
    assert notes.reasons["compactrag.qa qa: not_verbatim"] == 1
    assert sum(n for r, n in notes.reasons.items() if "answer" in r) == 2  # missing, bool


def test_an_empty_list_is_a_valid_reply_with_no_pairs() -> None:
    """A passage with nothing to ask about yields nothing, without a repair call."""
    extraction = parse_qa_pairs({"qa": []}, PASSAGE)
    assert extraction.pairs == () and extraction.dropped_total == 0


def test_normalise_question_folds_case_punctuation_and_whitespace() -> None:
    """The deduplication key: equal for questions a reader would call the same."""
    assert normalise_question("  Who directed\tLilli's Marriage?? ") == (
        "who directed lilli s marriage")
    assert normalise_question("WHO DIRECTED LILLI'S MARRIAGE") == normalise_question(
        "who directed lilli's marriage?")
    assert normalise_question("Who?") != normalise_question("Where?")


# --- decomposition ----------------------------------------------------------------------

TWO_STEPS = ('[{"index": 1, "q": "Who discovered polonium?", "ref": null}, '
             '{"index": 2, "q": "Where was this person born?", "ref": 1}]')
EXPECTED = [(1, "Who discovered polonium?", None), (2, "Where was this person born?", 1)]


@pytest.mark.parametrize(("content", "notes"), [
    (TWO_STEPS, []),
    (f'{{"sub_questions": {TWO_STEPS}}}', []),
    (f'{{"result": {TWO_STEPS}}}', []),
    (f"```json\n{TWO_STEPS}\n```", []),
    (f"Sure! Here is the decomposition [1]:\n{TWO_STEPS}\nHope it helps.",
     []),
    ('[{"index": 0, "q": "Who discovered polonium?", "ref": "None"},\n'
     ' {"index": "1", "q": "Where was this person born?", "ref": "0"}]', []),
    ('Output:\n[\n  {"index": 1, "q": "Who discovered polonium?", "ref": None},\n'
     '  {"index": 2, "q": "Where was this person born?", "ref": 1},\n]', []),
    (f"<think>Maybe [1, 2]? Or {{\"q\": \"x\"}}.</think>\n{TWO_STEPS}",
     []),
])
def test_decomposition_reads_every_shape_the_authors_code_handles(content: str,
                                                                  notes: list[str]) -> None:
    """Array, JSON-mode wrapper (or any single list value), fence, list after prose
    with a citation-like bracket, the authors' 0-based string indices and "None", their
    example's Python None and trailing comma (repaired by the shared reader), and a list
    after a reasoning block: the same two sub-questions, 1-based, with notes on what was
    forgiven."""
    decomposition = parse_decomposition(content, QUESTION)
    assert _texts(decomposition) == EXPECTED
    assert decomposition.degraded == notes


def test_a_single_object_is_one_sub_question() -> None:
    """A reply of one item, not wrapped in a list, is still that sub-question."""
    decomposition = parse_decomposition('{"index": 1, "q": "Who discovered polonium?"}',
                                        QUESTION)
    assert decomposition.sub_questions == (SubQuestion(1, "Who discovered polonium?"),)


@pytest.mark.parametrize(("content", "why"), [
    ("[]", "reply lists no sub-question"),
    ('{"sub_questions": []}', "reply lists no sub-question"),
    ("I cannot break this question down.", "reply holds no JSON list of sub-questions"),
    ("", "reply holds no JSON list of sub-questions"),
    ('[{"index": 1, "q": "Who discovered', "reply lists no sub-question"),
    ('{"answer": "Warsaw"}', "reply holds no JSON list of sub-questions"),
    ('[{"index": 1, "q": "  "}, {"index": 2}]', "reply lists no sub-question"),
])
def test_nothing_usable_falls_back_to_the_question_itself(content: str, why: str) -> None:
    """An empty list, prose, an empty or truncated reply, an object without a list, or
    items without text: the question becomes its one sub-question, and the note says why."""
    decomposition = parse_decomposition(content, f"  {QUESTION}\n")
    assert decomposition.sub_questions == (SubQuestion(1, QUESTION),)
    assert decomposition.degraded[-1] == f"{why}: asked the question itself"


def test_refs_to_itself_later_or_missing_indices_are_dropped_and_noted() -> None:
    """Only a ref to a lower index that exists survives; each dropped one is noted."""
    decomposition = parse_decomposition(
        '[{"index": 1, "q": "A?", "ref": 2}, {"index": 2, "q": "B?", "ref": 2},'
        ' {"index": 3, "q": "C?", "ref": 7}, {"index": 4, "q": "D?", "ref": 1}]', QUESTION)
    assert _texts(decomposition) == [(1, "A?", None), (2, "B?", None), (3, "C?", None),
                                     (4, "D?", 1)]
    assert decomposition.degraded == [
        "sub-question 1: ref to later index 2 dropped",
        "sub-question 2: ref to later index 2 dropped",
        "sub-question 3: ref to missing index 7 dropped"]


def test_items_are_put_in_dependency_order_and_renumbered() -> None:
    """Items listed out of order come out with every ref naming an earlier
    sub-question, numbered from 1 with the refs following the renumbering."""
    decomposition = parse_decomposition(
        '[{"index": 30, "q": "C?", "ref": 20}, {"index": 10, "q": "A?", "ref": null},'
        ' {"index": 20, "q": "B?", "ref": 10}]', QUESTION)
    assert _texts(decomposition) == [(1, "A?", None), (2, "B?", 1), (3, "C?", 2)]
    assert decomposition.degraded == []


def test_repeated_sub_questions_are_kept_once_with_refs_moved_to_the_first() -> None:
    """A repeat (after normalisation) is dropped; a ref to it now names the first."""
    decomposition = parse_decomposition(
        '[{"index": 1, "q": "Who discovered polonium?", "ref": null},'
        ' {"index": 2, "q": "who discovered polonium", "ref": null},'
        ' {"index": 3, "q": "Where was this person born?", "ref": 2}]', QUESTION)
    assert _texts(decomposition) == EXPECTED
    assert decomposition.degraded == ["1 repeated sub-question(s) dropped"]


def test_plain_strings_missing_indices_and_odd_refs_are_read_and_noted() -> None:
    """Plain strings (the authors' older prompt) are independent sub-questions; an
    item without a usable index is numbered after the others; several refs keep the
    last; an unreadable ref is dropped; an item without text is skipped."""
    strings = parse_decomposition('["Who discovered polonium?", "Where was this person born?"]',
                                  QUESTION)
    assert _texts(strings) == [(1, "Who discovered polonium?", None),
                               (2, "Where was this person born?", None)]
    assert strings.degraded == ["sub-questions given as plain strings: no refs"]
    odd = parse_decomposition(
        '[{"index": 1, "q": "A?"}, {"index": "first", "q": "B?", "ref": [1]},'
        ' {"index": 3, "q": "C?", "ref": [1, 2]}, {"index": 4, "q": "D?", "ref": "the one"},'
        ' {"q": 5}, 7]', QUESTION)
    assert _texts(odd) == [(1, "A?", None), (2, "B?", 1), (3, "C?", 2), (4, "D?", None)]
    assert odd.degraded == ["sub-question 3: several refs, kept the last",
                            "sub-question 4: unreadable ref 'the one' dropped",
                            "2 item(s) without a sub-question text skipped",
                            "1 sub-question(s) without a usable index numbered in order"]


def test_a_runaway_decomposition_is_cut_to_the_limit() -> None:
    """More sub-questions than the limit keep the first ones, in dependency order."""
    items = ", ".join(f'{{"index": {n}, "q": "Step {n}?", "ref": {n - 1 if n > 1 else "null"}}}'
                      for n in range(1, 6))
    decomposition = parse_decomposition(f"[{items}]", QUESTION, max_sub_questions=3)
    assert _texts(decomposition) == [(1, "Step 1?", None), (2, "Step 2?", 1), (3, "Step 3?", 2)]
    assert decomposition.degraded == ["5 sub-questions: kept the first 3"]


def test_a_reply_cut_at_its_budget_loses_only_its_cut_last_sub_question() -> None:
    """A list whose closing bracket never came is repaired by the shared reader; its
    last item, cut mid-text, is dropped and noted, the complete ones before it kept."""
    decomposition = parse_decomposition(
        '[{"index": 1, "q": "Who discovered polonium?", "ref": null},'
        ' {"index": 2, "q": "Where was this', QUESTION)
    assert _texts(decomposition) == [(1, "Who discovered polonium?", None)]
    assert decomposition.degraded == ["reply cut off: its last sub-question dropped"]
    intact = parse_decomposition(f"Here it is: {TWO_STEPS[:-1]}, ] Done.", QUESTION)
    assert _texts(intact) == EXPECTED
