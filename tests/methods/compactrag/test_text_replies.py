"""Reading the query's text replies: JSON wherever the model put it, and the synthesis'
answer.

Proves: ``json_in_text`` finds the first usable value in a fence, the whole text or
prose, repairs near-JSON and says where and how; ``parse_synthesis`` never raises and
recovers the answer from a JSON object, a broken one, an ``Answer:`` line or the bare
reply, noting each fallback.
"""

from __future__ import annotations

from typing import Any

import pytest

from hopindex.methods.compactrag.text_replies import Synthesis, json_in_text, parse_synthesis


def _is_list(value: Any) -> bool:
    return isinstance(value, list)


@pytest.mark.parametrize(("content", "found"), [
    ('[1, 2]', ([1, 2], [])),
    ('  \n[1, 2]\n', ([1, 2], [])),
    ('Text {"a": 1} then [3]', ([3], ["read from inside prose"])),
    ('```\n[1, 2]\n```', ([1, 2], ["read from a fenced block"])),
    ('```json\n[1, 2,]\n```', ([1, 2], ["read from a fenced block", "trailing commas removed"])),
    ('{"a": None}', None),
    ('[{"a": None},]', ([{"a": None}], ["trailing commas removed", "None read as null"])),
    ("no json here", None),
])
def test_json_in_text_finds_the_first_usable_value(content: str,
                                                   found: tuple[Any, list[str]] | None) -> None:
    """Values ``usable`` refuses (an object here) are passed over; each find names its
    source and repairs; a text with no usable value gives None."""
    assert json_in_text(content, _is_list) == found


def test_a_none_inside_a_string_value_is_left_alone_when_the_json_is_valid() -> None:
    """Repair is a fallback: a valid reply is read as written."""
    assert json_in_text('["ref: None"]', _is_list) == (["ref: None"], [])


@pytest.mark.parametrize(("content", "expected"), [
    ('{"thought": "Paris is in France.", "answer": "France"}',
     Synthesis("France", "Paris is in France.", [])),
    ('```json\n{"thought": "x",\n "answer": " Marie\\nCurie "}\n```',
     Synthesis("Marie Curie", "x", ["read from a fenced block"])),
    ('The answer follows. {"answer": 1867}', Synthesis("1867", "", ["read from inside prose"])),
    ('{"thought": "x", "answer": ""}', Synthesis("", "x", ["empty answer in reply"])),
    ('{"thought": "Paris lies in \\"France\\"", "answer": "Fra\\"nce',
     Synthesis("Fra\"nce", "", ["answer read from a reply that is not valid JSON"])),
    ('{"thought": "x", "answer": "France"',
     Synthesis("France", "", ["answer read from a reply that is not valid JSON"])),
    ("Reasoning first.\nAnswer: Warsaw\nFinal answer: Poland",
     Synthesis("Poland", "", ["reply is not JSON: answer read from its Answer: line"])),
    ("  Warsaw\n", Synthesis("Warsaw", "", ["reply is not JSON: the whole reply is the answer"])),
    ("", Synthesis("", "", ["empty reply"])),
    ('{"answer": ["a", "b"]}', Synthesis('{"answer": ["a", "b"]}', "",
                                         ["reply is not JSON: the whole reply is the answer"])),
])
def test_parse_synthesis_recovers_the_answer_from_any_reply(content: str,
                                                            expected: Synthesis) -> None:
    """The JSON answer (one line, numbers as text), else the answer field of a broken or
    cut-off object, else the last Answer: line, else the reply itself; never an exception."""
    assert parse_synthesis(content) == expected
