"""What a streamed reply hands on (``stream_text.AnswerEmitter``): only settled answer
text, so that the pieces join to ``answer_text`` of the whole reply however the reply
is split into chunks, and never a piece of a reasoning block."""

from __future__ import annotations

import random

import pytest

from hopindex.backends.llm.reply_json import answer_text
from hopindex.backends.llm.stream_text import (
    AnswerEmitter,
    begins_inside_reasoning,
    settled_answer,
)

HARMONY = ("<|channel|>analysis<|message|>The user wants the city.<|end|><|start|>assistant"
           "<|channel|>final<|message|>Paris is the answer.<|return|>")

REPLIES = {
    "bare": "Paris is the capital of France.",
    "think": "<think>\nThe user asks for a city.\n</think>\n\nParis is the capital.",
    "tag kin, upper case": "<THINKING>a</THINKING>  <reflection>b</reflection>\n Paris  ",
    "block inside the answer": "Paris <think>an aside</think> is the capital.",
    "unclosed at the end": "Paris is the capital. <think>and then I wondered",
    "cut inside the leading block": "<think>never closed, cut at the budget",
    "harmony": HARMONY,
    "comparisons": "a < b and c <= d, <b>bold</b> stays, x<y",
    "empty": "",
    "whitespace only": " \n ",
}


def fed(raw: str, sizes: list[int], *, inside_reasoning: bool = False, settled: bool = True,
        ) -> tuple[list[str], str, AnswerEmitter]:
    """``raw`` fed in chunks of ``sizes`` (cycled); the pieces, the final answer and the
    emitter. ``settled``: check after every chunk that what was handed on is what is
    settled so far, and the start of the final answer."""
    pieces: list[str] = []
    emitter = AnswerEmitter(pieces.append, inside_reasoning=inside_reasoning)
    final = answer_text(raw)
    position = 0
    for size in _cycle(sizes):
        if position >= len(raw):
            break
        emitter.feed(raw[position:position + size])
        position += size
        if settled:  # all that is settled is handed on, and nothing else
            assert "".join(pieces) == settled_answer(raw[:position],
                                                     inside_reasoning=inside_reasoning)
            assert final.startswith("".join(pieces)), (raw[:position], pieces)
    return pieces, emitter.finish(), emitter


def _cycle(sizes: list[int]) -> list[int]:
    return sizes * 10_000


@pytest.mark.parametrize("name", list(REPLIES))
@pytest.mark.parametrize("sizes", [[1], [3], [7, 1, 2], [10_000]],
                         ids=["by-char", "by-3", "mixed", "whole"])
def test_pieces_join_to_the_answer_however_the_reply_is_split(name: str,
                                                              sizes: list[int]) -> None:
    raw = REPLIES[name]
    pieces, final, emitter = fed(raw, sizes)
    assert not emitter.revised
    assert final == answer_text(raw)
    assert "".join(pieces) == final
    assert all(pieces)


@pytest.mark.parametrize("seed", range(20))
def test_random_splits_of_every_reply(seed: int) -> None:
    chance = random.Random(seed)  # which chunk sizes; no secrecy
    for raw in REPLIES.values():
        sizes = [chance.randint(1, 12) for _ in range(50)]
        pieces, final, _emitter = fed(raw, sizes)
        assert "".join(pieces) == final == answer_text(raw)


def test_nothing_of_a_leading_block_is_handed_on_before_it_closes() -> None:
    raw = REPLIES["think"]
    end = raw.index("</think>")
    for cut in range(end + len("</think>")):
        assert settled_answer(raw[:cut]) == ""
    assert settled_answer(raw[:raw.index("Paris") + 3]) == "Par"


def test_reasoning_content_is_counted_never_handed_on() -> None:
    pieces: list[str] = []
    emitter = AnswerEmitter(pieces.append)
    emitter.feed("", "I should think first.")
    emitter.feed("Paris", "")
    assert emitter.finish() == "Paris" and pieces == ["Paris"]
    assert emitter.reasoning_chars == len("I should think first.")


def test_a_closing_tag_without_its_opening_revises_the_answer_once() -> None:
    """The server stripped the opening tag: the words before the closing tag were handed
    on as answer, then are found to be reasoning. Nothing more is handed on, the final
    answer is ``answer_text``'s, and the reply is known to begin inside reasoning; a
    stream read so (the client remembers it) hands on the answer alone."""
    raw = "The user wants a city.\n</think>\n\nParis."
    pieces, final, emitter = fed(raw, [4], settled=False)
    assert emitter.revised and final == "Paris."
    assert "".join(pieces) == "The user wants a city."
    assert begins_inside_reasoning(raw) and not begins_inside_reasoning(REPLIES["think"])

    pieces, final, emitter = fed(raw, [4], inside_reasoning=True)
    assert not emitter.revised and "".join(pieces) == final == "Paris."
    pieces, final, emitter = fed("No reasoning at all.", [4], inside_reasoning=True)
    assert pieces == [final] == ["No reasoning at all."]  # held to the end, then whole


def test_every_reasoning_tag_of_answer_text_is_one_the_emitter_holds() -> None:
    for tag in ("think", "thinking", "reasoning", "reflection", "thought"):
        raw = f"<{tag}>x</{tag}>Answer"
        assert answer_text(raw) == "Answer"
        assert settled_answer(raw[:-len("Answer")]) == ""
        assert settled_answer(f"<{tag[:3]}") == ""
