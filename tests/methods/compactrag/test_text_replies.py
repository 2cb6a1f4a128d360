"""Reading the synthesis' answer from its text.

Proves: ``parse_synthesis`` never raises and recovers the answer from a JSON object
(bare, fenced, in prose, after a reasoning block, repaired), a broken one, an
``Answer:`` line or the bare reply, noting each fallback; a reasoning block is never
taken for the answer.
"""

from __future__ import annotations

import pytest

from hopindex.methods.compactrag.text_replies import Synthesis, parse_synthesis


@pytest.mark.parametrize(("content", "expected"), [
    ('{"thought": "Paris is in France.", "answer": "France"}',
     Synthesis("France", "Paris is in France.", [])),
    ('```json\n{"thought": "x",\n "answer": " Marie\\nCurie "}\n```',
     Synthesis("Marie Curie", "x", [])),
    ('The answer follows. {"answer": 1867}', Synthesis("1867", "", [])),
    ('{"thought": "x", "answer": ""}', Synthesis("", "x", ["empty answer in reply"])),
    ('{"thought": "Paris lies in \\"France\\"", "answer": "Fra\\"nce',
     Synthesis("Fra\"nce", 'Paris lies in "France"', [])),
    ('{"thought": "x", "answer": "France"', Synthesis("France", "x", [])),
    ('<think>Answer: Berlin, surely.</think>\n{"thought": "x", "answer": "Paris"}',
     Synthesis("Paris", "x", [])),
    ('<think>The reply is {"answer": "Berlin"}</think>\nAnswer: Paris',
     Synthesis("Paris", "", ["reply is not JSON: answer read from its Answer: line"])),
    ("Reasoning first.\nAnswer: Warsaw\nFinal answer: Poland",
     Synthesis("Poland", "", ["reply is not JSON: answer read from its Answer: line"])),
    ("  Warsaw\n", Synthesis("Warsaw", "", ["reply is not JSON: the whole reply is the answer"])),
    ("", Synthesis("", "", ["empty reply"])),
    ('{"answer": ["a", "b"]}', Synthesis('{"answer": ["a", "b"]}', "",
                                         ["reply is not JSON: the whole reply is the answer"])),
])
def test_parse_synthesis_recovers_the_answer_from_any_reply(content: str,
                                                            expected: Synthesis) -> None:
    """The JSON answer (one line, numbers as text; a broken or cut-off object repaired by
    the shared reader), else the last Answer: line, else the reply itself, never from a
    reasoning block; never an exception."""
    assert parse_synthesis(content) == expected
