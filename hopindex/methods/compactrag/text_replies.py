"""The synthesis call's answer, read from its text.

A query makes exactly two LLM calls, so its replies get no repair call: what a model
wraps in a fenced block, buries in prose or writes as near-JSON is read all the same
(``reply_json.json_candidates``, the reader of every reply). Only an answer read
from something other than the JSON asked for is noted (``degraded``, for the query).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from hopindex.backends.llm.reply_json import answer_text, json_candidates

ANSWER_KEY = "answer"
THOUGHT_KEY = "thought"

# The answer string of a broken object, also one cut off by max_tokens.
_ANSWER_FIELD = re.compile(r'"answer"\s*:\s*"((?:[^"\\]|\\.)*)(?:"|\\?\s*\Z)')
_ANSWER_LINE = re.compile(r"^\s*(?:final\s+)?answer\s*:\s*(.+?)\s*$", re.IGNORECASE | re.MULTILINE)


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
    found = next((c for c in json_candidates(content)
                  if isinstance(c.value, dict) and ANSWER_KEY in c.value), None)
    if found is not None:
        # Where the JSON was found (fenced, in prose, after a reasoning block) is the
        # reply's form, not a degradation: only an answer that is not there is.
        notes: list[str] = []
        answer, thought = found.value[ANSWER_KEY], found.value.get(THOUGHT_KEY)
        if isinstance(answer, int | float) and not isinstance(answer, bool):
            answer = str(answer)
        if isinstance(answer, str):
            if not answer.strip():
                notes.append("empty answer in reply")
            return Synthesis(answer=_one_line(answer),
                             thought=_one_line(thought) if isinstance(thought, str) else "",
                             degraded=notes)
    # A reasoning block is never the answer, nor holds the Answer: line meant.
    content = answer_text(content)
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


def _one_line(text: str) -> str:
    return " ".join(text.split())
