"""The query's replies read as text: JSON found wherever the model put it, and the
synthesis call's answer.

A query makes exactly two LLM calls, so its replies get no repair call: what a model
wraps in a fenced block, buries in prose or writes as near-JSON is read all the same,
and each reader says what it had to forgive (``degraded`` notes, for the query trace).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

ANSWER_KEY = "answer"
THOUGHT_KEY = "thought"

_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\n?(.*?)```", re.DOTALL)
_TRAILING_COMMA = re.compile(r",\s*([\]}])")
_PYTHON_NONE = re.compile(r"(:\s*)None\b")  # the authors' decomposition prompt taught "None"
# The answer string of a broken object, also one cut off by max_tokens.
_ANSWER_FIELD = re.compile(r'"answer"\s*:\s*"((?:[^"\\]|\\.)*)(?:"|\\?\s*\Z)')
_ANSWER_LINE = re.compile(r"^\s*(?:final\s+)?answer\s*:\s*(.+?)\s*$", re.IGNORECASE | re.MULTILINE)
_MAX_SCAN_STARTS = 64  # brackets tried inside prose before giving up


@dataclass(frozen=True, slots=True)
class Synthesis:
    """The final answer (``""`` when the reply has none), the model's reasoning and
    notes on how the answer was recovered when the reply was not the JSON asked for."""

    answer: str
    thought: str
    degraded: list[str]


def parse_synthesis(content: str) -> Synthesis:
    """The synthesis call's reply → its answer: the ``"answer"`` of a JSON object (bare,
    fenced or inside prose), else of a broken or truncated object, else the last
    ``Answer:`` line, else the whole reply on one line. Never raises."""
    found = json_in_text(content, lambda v: isinstance(v, dict) and ANSWER_KEY in v)
    if found is not None:
        value, notes = found
        answer, thought = value[ANSWER_KEY], value.get(THOUGHT_KEY)
        if isinstance(answer, int | float) and not isinstance(answer, bool):
            answer = str(answer)
        if isinstance(answer, str):
            if not answer.strip():
                notes.append("empty answer in reply")
            return Synthesis(answer=_one_line(answer),
                             thought=_one_line(thought) if isinstance(thought, str) else "",
                             degraded=notes)
    field = _ANSWER_FIELD.search(content)
    if field is not None:
        try:
            answer = json.loads(f'"{field.group(1)}"')
        except ValueError:  # an escape cut in half
            answer = field.group(1)
        return Synthesis(answer=_one_line(answer), thought="",
                         degraded=["answer read from a reply that is not valid JSON"])
    lines = _ANSWER_LINE.findall(content)
    if lines:
        return Synthesis(answer=_one_line(lines[-1]), thought="",
                         degraded=["reply is not JSON: answer read from its Answer: line"])
    text = _one_line(content)
    return Synthesis(answer=text, thought="", degraded=[
        "reply is not JSON: the whole reply is the answer" if text else "empty reply"])


def json_in_text(content: str, usable: Callable[[Any], bool]) -> tuple[Any, list[str]] | None:
    """The first JSON value in ``content`` that ``usable`` accepts, with notes on where it
    was found and what was repaired; None when there is none.

    Fenced blocks are tried first, then the whole text, then the value starting at each
    ``[``/``{`` inside prose; each as written, else as repaired near-JSON (trailing
    commas, Python's ``None``).
    """
    sources = [(body, ["read from a fenced block"]) for body in _FENCE.findall(content)]
    sources.append((content, []))
    for text, where in sources:
        for value, inside, repairs in _decoded(text):
            if usable(value):
                return value, [*where, *(["read from inside prose"] if inside else []),
                               *repairs]
    return None


def _decoded(text: str) -> Iterator[tuple[Any, bool, list[str]]]:
    """The whole text as JSON, then the JSON value starting at each ``[``/``{``; each as
    written, else repaired. Repairing per start keeps a list broken only by a trailing
    comma from losing to the first intact object inside it."""
    decoder = json.JSONDecoder()
    starts = [0, *(m.start() for m in re.finditer(r"[\[{]", text))][:_MAX_SCAN_STARTS]
    for position, start in enumerate(starts):
        whole = position == 0
        rest = text.strip() if whole else text[start:]
        repaired, repairs = _repaired(rest)
        for candidate, notes in [(rest, []), *([(repaired, repairs)] if repairs else [])]:
            try:
                value = json.loads(candidate) if whole else decoder.raw_decode(candidate)[0]
            except ValueError:
                continue
            yield value, not whole, notes
            break


def _repaired(text: str) -> tuple[str, list[str]]:
    """Near-JSON made JSON: trailing commas dropped, a Python ``None`` made ``null``."""
    notes: list[str] = []
    for pattern, replacement, note in ((_TRAILING_COMMA, r"\1", "trailing commas removed"),
                                       (_PYTHON_NONE, r"\1null", "None read as null")):
        changed = pattern.sub(replacement, text)
        if changed != text:
            text = changed
            notes.append(note)
    return text, notes


def _one_line(text: str) -> str:
    return " ".join(text.split())
