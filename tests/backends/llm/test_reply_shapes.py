"""Reply shapes read with item-level tolerance, and what they forgave is counted.

Proves: ``read_shape`` takes a strict fit as is and a lax fit (numbers as strings) as
coerced, counted once per value, and names the field of a misfit; ``read_items`` drops
``null`` elements and misfits with their reasons counted, keeps the rest, and raises
``ReplyShapeError`` only when nothing usable remains (or the value is no list); the
reasons kept verbatim are capped, the counts never; ``scores_on_scale`` rescales 0-1
answers only when every score is in [0, 1] and one is a fraction; notes are collected
per block and are no-ops outside one; ``parse_reply`` reports how the JSON was found.
"""

from __future__ import annotations

from typing import Any

import pydantic
import pytest

from hopindex.backends.llm.reply_shapes import (
    ReplyNotes,
    Score,
    collecting_notes,
    read_items,
    read_shape,
    scores_on_scale,
)
from hopindex.backends.llm.structured import parse_reply
from hopindex.core.errors import LlmOutputError, ReplyShapeError


class Verdict(pydantic.BaseModel):
    same: bool
    score: float
    reason: str = ""


class Pair(pydantic.BaseModel):
    question: str
    answer: str


def test_strict_fit_is_not_coerced() -> None:
    """A value of the declared types reads strictly: nothing is noted."""
    with collecting_notes() as notes:
        verdict = read_shape({"same": True, "score": 8.0, "reason": "r"}, Verdict, what="v")
    assert verdict == Verdict(same=True, score=8.0, reason="r")
    assert notes.is_clean


def test_lax_fit_is_read_and_counted_as_coerced() -> None:
    """Numbers and booleans as strings fit in lax mode: read, and counted once per value."""
    with collecting_notes() as notes:
        verdict = read_shape({"same": "true", "score": "8", "reason": "r"}, Verdict, what="v")
        read_shape({"same": True, "score": "7.5"}, Verdict, what="v")
    assert verdict.score == 8.0 and verdict.same is True
    assert notes.coerced == 2 and notes.dropped == 0


def test_misfit_names_what_and_the_field() -> None:
    """A value that fits neither way raises ReplyShapeError (an LlmOutputError and a
    ValueError) naming the call kind, the field and how many more problems there are."""
    with pytest.raises(ReplyShapeError) as caught:
        read_shape({"same": "perhaps", "score": "high"}, Verdict, what="adjudicate")
    message = str(caught.value)
    assert message.startswith("adjudicate: same: ") and "(and 1 more)" in message
    assert isinstance(caught.value, LlmOutputError) and isinstance(caught.value, ValueError)


def test_notes_outside_a_collecting_block_are_dropped_silently() -> None:
    """Reading outside ``collecting_notes`` works and notes nothing anywhere."""
    assert read_shape({"same": "1", "score": "3"}, Verdict, what="v").score == 3.0
    with collecting_notes() as notes:
        pass
    assert notes.is_clean


def test_read_items_drops_nulls_and_misfits_with_counted_reasons() -> None:
    """Nulls and misfits are dropped, each counted with its reason (grouped across
    positions); fitting elements are kept in order, coerced ones counted."""
    values: list[Any] = [None, {"question": "Q1", "answer": "A1"}, None,
                         {"question": "Q2"}, {"question": "Q3", "answer": 3}, "junk",
                         {"question": "Q4"}]
    with collecting_notes() as notes:
        kept = read_items(values, Pair, what="qa_pairs")
    assert kept == [Pair(question="Q1", answer="A1")]
    assert notes.dropped == 6 and notes.coerced == 0
    assert notes.reasons["qa_pairs: null element"] == 2
    assert notes.reasons["qa_pairs: answer: Field required"] == 2
    assert sum(notes.reasons.values()) == 6


def test_read_items_keeps_coerced_elements() -> None:
    """An element that fits only in lax mode is kept and counted as coerced."""
    with collecting_notes() as notes:
        kept = read_items([{"same": "false", "score": "2"}, None], Verdict, what="verdicts")
    assert kept == [Verdict(same=False, score=2.0)]
    assert (notes.coerced, notes.dropped) == (1, 1)


def test_read_items_raises_only_when_nothing_usable_remains() -> None:
    """All elements dropped, or no list at all: ReplyShapeError; an empty list is an
    answer unless ``allow_empty`` is False."""
    with pytest.raises(ReplyShapeError, match="no usable element among 3"):
        read_items([None, None, {"question": 1}], Pair, what="qa_pairs")
    with pytest.raises(ReplyShapeError, match="expected a list, got dict"):
        read_items({"question": "Q", "answer": "A"}, Pair, what="qa_pairs")
    with pytest.raises(ReplyShapeError, match="expected a list, got null"):
        read_items(None, Pair, what="qa_pairs")
    assert read_items([], Pair, what="qa_pairs") == []
    with pytest.raises(ReplyShapeError, match="the list is empty"):
        read_items([], Pair, what="qa_pairs", allow_empty=False)


def test_drop_reasons_are_capped_but_counts_are_whole() -> None:
    """Past 20 distinct reasons new ones are not kept verbatim; every drop is counted
    and a reason already kept keeps counting."""
    values: list[Any] = [{f"field_{n}": n} for n in range(30)] + [None, None]

    class Loose(pydantic.BaseModel):
        model_config = pydantic.ConfigDict(extra="forbid")

    with collecting_notes() as notes, pytest.raises(ReplyShapeError):
        read_items(values, Loose, what="items")
    assert notes.dropped == 32
    assert len(notes.reasons) == 20


@pytest.mark.parametrize(("scores", "top", "expected", "rescaled"), [
    ([0.8, 0.2, 1.0], 10, [8.0, 2.0, 10.0], 1),
    ([0.0, 0.5], 10, [0.0, 5.0], 1),
    ([0, 1], 10, [0.0, 1.0], 0),  # no fraction: 0 and 1 on 0-10 are answers too
    ([8, 0.5], 10, [8.0, 0.5], 0),  # not all in [0, 1]
    ([-0.2, 0.5], 10, [-0.2, 0.5], 0),
    ([], 10, [], 0),
    ([0.3, 0.7], 1, [0.3, 0.7], 0),  # asked on 0-1: nothing to rescale
], ids=["fractions", "zero-and-half", "no-fraction", "mixed", "negative", "empty",
        "top-one"])
def test_scores_on_scale_rescales_only_unambiguous_unit_answers(
        scores: list[float], top: float, expected: list[float], rescaled: int) -> None:
    """A reply on 0-1 is multiplied by ``top`` only when every score lies in [0, 1]
    and one is a fraction; the rescale is noted once per reply."""
    with collecting_notes() as notes:
        assert scores_on_scale(scores, top=top) == pytest.approx(expected)
    assert notes.rescaled == rescaled


def test_notes_add_up_and_tell_clean_from_forgiven() -> None:
    """``add`` sums counts and reasons and joins how the JSON was read."""
    total = ReplyNotes()
    assert total.is_clean
    with collecting_notes() as first:
        read_items([None, {"question": "Q", "answer": "A"}], Pair, what="p")
    second = ReplyNotes(coerced=2, rescaled=1, read=["read from a fenced block"])
    total.add(first)
    total.add(second)
    assert (total.coerced, total.dropped, total.rescaled) == (2, 1, 1)
    assert total.reasons["p: null element"] == 1
    assert total.read == ["read from a fenced block"] and not total.is_clean


def test_parse_reply_notes_how_the_json_was_found_and_what_was_forgiven() -> None:
    """A fenced reply with a null element and a numeric string: the value, with the
    fence, the drop and the coercion noted; a reply without JSON names its stage."""
    def parse(value: Any) -> list[Verdict]:
        return read_items(value, Verdict, what="verdicts")

    parsed = parse_reply("adjudicate",
                         '```json\n[{"same": true, "score": "9"}, null]\n```', parse)
    assert parsed.value == [Verdict(same=True, score=9.0)]
    assert parsed.notes.read == ["read from a fenced block"]
    assert (parsed.notes.coerced, parsed.notes.dropped) == (1, 1)
    with pytest.raises(ReplyShapeError, match=r"^adjudicate: the reply holds no JSON"):
        parse_reply("adjudicate", "I cannot decide.", parse)


class Scored(pydantic.BaseModel):
    score: Score


@pytest.mark.parametrize(("given", "read", "coerced"), [
    (8, 8.0, 0), (7.5, 7.5, 0), ("8", 8.0, 1), ("8/10", 8.0, 1), (" 7.5 / 10 ", 7.5, 1),
    ("6 out of 10", 6.0, 1)])
def test_a_score_is_read_as_people_write_one(given: object, read: float, coerced: int) -> None:
    """Numbers, numeric strings and "N/10" are scores (the strings counted as coerced)."""
    with collecting_notes() as notes:
        assert read_shape({"score": given}, Scored, what="verdict").score == read
    assert notes.coerced == coerced


@pytest.mark.parametrize("given", [True, "high", None, float("nan"), "8/100"])
def test_what_is_no_score_is_refused(given: object) -> None:
    with pytest.raises(ReplyShapeError, match="verdict"):
        read_shape({"score": given}, Scored, what="verdict")


class Queries(pydantic.BaseModel):
    queries: list[str]


def test_a_reply_wrapped_under_a_key_of_the_models_choosing_is_unwrapped() -> None:
    """``{"response": {...}}`` holds the reply: its inner value is offered when the outer
    one does not fit, and the notes say so; a value that fits as given is not unwrapped."""
    def queries(value: Any) -> list[str]:
        return read_shape(value, Queries, what="queries").queries

    wrapped = parse_reply("svo", '{"response": {"queries": ["a b c"]}}', queries)
    assert wrapped.value == ["a b c"] and "unwrapped from 'response'" in wrapped.notes.read
    plain = parse_reply("svo", '{"queries": ["x y z"]}', queries)
    assert plain.value == ["x y z"] and plain.notes.read == []


def test_keys_a_model_capitalised_are_read_in_lower_case() -> None:
    """``{"Queries": [...]}`` is the reply asked for; its values keep their case."""
    def queries(value: Any) -> list[str]:
        return read_shape(value, Queries, what="queries").queries

    read = parse_reply("svo", '{"Queries": ["Marie Curie born"]}', queries)
    assert read.value == ["Marie Curie born"] and "keys lower-cased" in read.notes.read
