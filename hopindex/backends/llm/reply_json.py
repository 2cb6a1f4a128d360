"""Reading JSON out of a model's reply as real providers give it.

Real models wrap what they were asked for: a fenced block (with or without a language
tag), a sentence of prose before or after, a ``<think>`` block first (reasoning models
served by Ollama, vLLM or llama.cpp), smart quotes, trailing commas, a bracket missing
at the end. :func:`json_candidates` yields every JSON value a reply plausibly holds, most
likely first; the caller takes the first its reply shape accepts, so "the first complete
value of the expected type" is decided by the shape, not guessed here.

What cannot be decoded as written is handed to ``json-repair`` (a maintained lenient
parser made for LLM output) rather than to home-made fixes; its answers are guarded,
since it turns prose with no JSON at all into an empty string, which is not a reply.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import json_repair

# Reasoning blocks some models put before (or around) the answer; never the answer.
_REASONING = re.compile(
    r"<(think|thinking|reasoning|reflection|thought)>.*?</\1>", re.DOTALL | re.IGNORECASE)
# A reasoning block whose opening tag the server stripped (some vLLM and Ollama
# templates): everything up to the last closing tag is reasoning.
_CLOSING_ONLY = re.compile(r"^.*</(?:think|thinking|reasoning|reflection|thought)>",
                           re.DOTALL | re.IGNORECASE)
# A reasoning block cut off before it closed: nothing after it is an answer.
_UNCLOSED = re.compile(r"<(?:think|thinking|reasoning|reflection|thought)>.*\Z",
                       re.DOTALL | re.IGNORECASE)
# The final channel of a harmony-format reply, up to its end marker (or the end).
_HARMONY_FINAL = re.compile(
    r"<\|channel\|>final<\|message\|>(.*?)(?:<\|(?:return|end|call)\|>|\Z)", re.DOTALL)
# ```json … ``` or ``` … ``` or ~~~ … ~~~; an unclosed last fence runs to the end (a
# reply cut by its token budget).
_FENCE = re.compile(r"(```|~~~)[ \t]*[\w+-]*[ \t]*\n?(.*?)(?:\1|\Z)", re.DOTALL)
_OPENING = re.compile(r"[\[{]")
# Typographic double quotes some models (and some languages' keyboards) put around keys
# and strings; straightened only when the text does not decode as written. Single ones
# are left alone: they are apostrophes in names far more often than delimiters
# ("Arthur’s Magazine"), and straightening them would change the text.  # noqa: RUF003  # the apostrophe is the example
_SMART_QUOTES = str.maketrans({"“": '"', "”": '"', "„": '"', "«": '"', "»": '"'})
# How many opening brackets inside prose are tried, and how much text is handed to the
# repairer: a 2 MB reply must fail quickly, not spend a worker's minute in a parser.
MAX_SCAN_STARTS = 32
MAX_REPAIR_CHARS = 200_000


@dataclass(frozen=True, slots=True)
class JsonCandidate:
    """One JSON value found in a reply, with what had to be forgiven to read it."""

    value: Any
    notes: tuple[str, ...] = field(default_factory=tuple)


def answer_text(content: str) -> str:
    """The reply without its reasoning blocks: what the model meant as its answer."""
    final = _HARMONY_FINAL.search(content)
    if final is not None:
        # A harmony-format model (gpt-oss) served without its parser: the analysis
        # channel is reasoning, the final channel the answer.
        content = final.group(1)
    text = _REASONING.sub("", content)
    if _CLOSING_ONLY.match(text):
        text = _CLOSING_ONLY.sub("", text, count=1)
    return _UNCLOSED.sub("", text).strip()


def json_candidates(content: str) -> Iterator[JsonCandidate]:
    """Every JSON object or array ``content`` plausibly holds, most likely first:
    fenced blocks, then the whole answer, then the value at each opening bracket inside
    prose; each as written, else as repaired. Nothing when there is no JSON at all."""
    text = answer_text(content)
    notes = ("reasoning block ignored",) if text != content.strip() else ()
    seen: list[Any] = []
    for candidate in _candidates(text):
        if any(candidate.value == earlier for earlier in seen):
            continue
        seen.append(candidate.value)
        yield JsonCandidate(candidate.value, (*notes, *candidate.notes))


def _candidates(text: str) -> Iterator[JsonCandidate]:
    for fenced in _FENCE.finditer(text):
        yield from _decoded(fenced.group(2), ("read from a fenced block",))
    yield from _decoded(text, ())


def _decoded(text: str, notes: tuple[str, ...]) -> Iterator[JsonCandidate]:
    """The whole text as JSON, then the value starting at each bracket; each as written,
    and the text from the first bracket as repaired when it does not decode as written.

    The repair comes before the values at later brackets: when the outermost value is
    near-JSON (a closing bracket missing, a trailing comma), those are fragments nested
    in it, and the caller's shape may well accept a fragment (a list of strings) where
    the whole was meant."""
    stripped = text.strip()
    found = False
    try:
        value = json.loads(stripped)
    except ValueError:
        pass
    else:
        if isinstance(value, dict | list):
            found = True
            yield JsonCandidate(value, notes)
    decoder = json.JSONDecoder()
    starts = [m.start() for m in _OPENING.finditer(stripped)][:MAX_SCAN_STARTS]
    for position, start in enumerate(starts):
        try:
            value, _ = decoder.raw_decode(stripped, start)
        except ValueError:
            if position == 0 and not found:
                yield from _repaired(stripped[start:], notes)
            continue
        yield JsonCandidate(value, (*notes, "read from inside prose") if start else notes)


def _repaired(text: str, notes: tuple[str, ...]) -> Iterator[JsonCandidate]:
    """What ``json-repair`` makes of near-JSON, when it makes a non-empty object or
    array of it (an empty one is its answer to text with no JSON in it)."""
    if len(text) > MAX_REPAIR_CHARS:
        return
    for source, note in ((text, "repaired"),
                         (text.translate(_SMART_QUOTES), "repaired (typographic quotes)")):
        try:
            value = json_repair.loads(source)
        except (ValueError, RecursionError):
            continue
        if isinstance(value, dict | list) and value:
            # Both readings are offered (the same one once): the shape decides.
            yield JsonCandidate(value, (*notes, note))


def no_json_reason(content: str) -> str:
    """Why a reply gave no usable JSON, in a few words for the job record."""
    if not content.strip():
        return "the reply was empty"
    text = answer_text(content)
    if not text:
        return "the reply held only a reasoning block"
    if len(text) > MAX_REPAIR_CHARS and not _OPENING.search(text[:MAX_REPAIR_CHARS]):
        return f"the reply ({len(text):,} characters) holds no JSON"
    if not _OPENING.search(text):
        return "the reply holds no JSON object or array"
    return "the reply's JSON could not be read, even leniently"
