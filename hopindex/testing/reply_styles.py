"""Reply styles: the forms in which real providers give the test LLM's answers.

The test server's replies are computed by ``llm_responses`` as bare, well-formed JSON
(or plain text). Real providers wrap the same answer: a fenced block, a sentence of
prose around it, a ``<think>`` block first, the reasoning in a separate
``reasoning_content`` field, numbers as strings, a 0-1 score where 0-10 was asked,
``null`` elements beside the real ones, a reply cut at its token budget; and some
refuse ``response_format`` outright. A style changes the *form* of a reply, never its
content: a lenient reader recovers exactly the value the bare reply holds (a cut reply
is told by ``finish_reason``; its retry with a larger budget gets it whole).

Selection (``LlmServerConfig.reply_styles``): each reply picks one style from the
tuple, deterministically from a hash of the seed and the request's messages, so a run
repeats and an identical request (a larger-budget retry, a step down in output mode)
gets the same style. A style listed twice is picked twice as often. The empty tuple is
:attr:`ReplyStyle.BARE` alone. :attr:`ReplyStyle.FORMAT_REFUSED`,
:attr:`ReplyStyle.SCHEMA_REFUSED` and :attr:`ReplyStyle.STREAM_OPTIONS_REFUSED` are not
drawn per reply: they are properties of the server and, when listed, apply to every
request (see :func:`format_refusal`, :func:`stream_options_refusal`).

A style with nothing to change in a reply (numbers as strings in a reply without
numbers, unit scores in a reply without 0-10 scores, a fence around plain text) leaves
it bare, and the reply is counted as bare: the server's ``by_style`` counts say which
styles a run really exercised. Only TRUNCATED cuts a JSON reply; a think block or a
``reasoning_content`` field is added whatever the budget (it is billed, in ``usage``).
"""

from __future__ import annotations

import enum
import hashlib
import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from hopindex.core.errors import ConfigError
from hopindex.testing.llm_responses import Reply, TaskKind, estimate_tokens

# A reply under TRUNCATED with no max_tokens in its request is cut at this many tokens
# (``LlmServerConfig.truncated_default_max_tokens``): a provider's small default
# completion budget, which the client's larger-budget retry (4096 at least) clears.
DEFAULT_TRUNCATION_TOKENS = 64


class ReplyStyle(enum.StrEnum):
    """How a reply is formed; the values are what ``--reply-styles`` takes."""

    BARE = "bare"
    FENCED = "fenced"
    PROSE = "prose"
    THINK = "think"
    REASONING_CONTENT = "reasoning_content"
    FORMAT_REFUSED = "format_refused"
    SCHEMA_REFUSED = "schema_refused"
    # A server without ``stream_options`` (some OpenAI-compatible ones): a 400 naming it.
    STREAM_OPTIONS_REFUSED = "stream_options_refused"
    NUMBERS_AS_STRINGS = "numbers_as_strings"
    UNIT_SCORES = "unit_scores"
    NULL_ELEMENTS = "null_elements"
    TRUNCATED = "truncated"

    @classmethod
    def mixed(cls, *, refusals: bool = True) -> tuple[ReplyStyle, ...]:
        """Every style, mixed by seed; without the server's refusals when ``refusals``
        is False (a server that accepts every output mode and ``stream_options``)."""
        return tuple(style for style in cls if refusals or style not in SERVER_STYLES)

    @classmethod
    def parse_list(cls, text: str) -> tuple[ReplyStyle, ...]:
        """``"fenced,prose"`` (or ``"all"``) as styles; ``ConfigError`` naming an
        unknown one."""
        names = [name.strip().lower().replace("-", "_") for name in text.split(",")]
        if names == ["all"]:
            return cls.mixed()
        try:
            return tuple(cls(name) for name in names if name)
        except ValueError as exc:
            raise ConfigError(f"unknown reply style in {text!r}; known: "
                              f"{', '.join(s.value for s in cls)}, or all") from exc


# Properties of the server, applied to every request; never drawn for one reply.
SERVER_STYLES = frozenset({ReplyStyle.FORMAT_REFUSED, ReplyStyle.SCHEMA_REFUSED,
                           ReplyStyle.STREAM_OPTIONS_REFUSED})
ALL_STYLES = ReplyStyle.mixed()


def normalised_styles(styles: Iterable[ReplyStyle | str]) -> tuple[ReplyStyle, ...]:
    """``styles`` as a tuple of :class:`ReplyStyle`; ``ConfigError`` for an unknown one."""
    try:
        return tuple(ReplyStyle(style) for style in styles)
    except ValueError as exc:
        raise ConfigError(f"LlmServerConfig.reply_styles holds an unknown style: {exc}") from exc


@dataclass(frozen=True, slots=True)
class StylePick:
    """The style drawn for one request, and a number that varies its details (which
    fence, which sentences) as deterministically as the style itself."""

    style: ReplyStyle
    variant: int


def pick_style(styles: Sequence[ReplyStyle], seed: int,
               messages: Sequence[tuple[str, str]]) -> StylePick:
    """One per-reply style from ``styles`` for a request of ``messages`` (role, text)."""
    forms = [style for style in styles if style not in SERVER_STYLES] or [ReplyStyle.BARE]
    digest = hashlib.sha256(json.dumps([seed, [list(m) for m in messages]],
                                       ensure_ascii=False).encode("utf-8")).digest()
    return StylePick(forms[int.from_bytes(digest[:8], "big") % len(forms)],
                     int.from_bytes(digest[8:16], "big"))


def format_refusal(styles: Sequence[ReplyStyle],
                   response_format: object) -> tuple[ReplyStyle, str] | None:
    """The refusing style and the 400's message when the server refuses the request's
    ``response_format``: any at all under FORMAT_REFUSED (a server without the
    parameter), ``json_schema`` only under SCHEMA_REFUSED; else None."""
    if response_format is None:
        return None
    if ReplyStyle.FORMAT_REFUSED in styles:
        return ReplyStyle.FORMAT_REFUSED, "response_format is not supported by this model"
    kind = response_format.get("type") if isinstance(response_format, dict) else None
    if ReplyStyle.SCHEMA_REFUSED in styles and kind == "json_schema":
        return (ReplyStyle.SCHEMA_REFUSED, "Invalid parameter: 'response_format' of type "
                "'json_schema' is not supported with this model.")
    return None


def stream_options_refusal(styles: Sequence[ReplyStyle], stream_options: object) -> str | None:
    """The 400's message when the server refuses a request's ``stream_options``
    (STREAM_OPTIONS_REFUSED listed and the request carries them); else None."""
    if stream_options is None or ReplyStyle.STREAM_OPTIONS_REFUSED not in styles:
        return None
    return "Unrecognized request argument supplied: stream_options"


@dataclass(frozen=True, slots=True)
class StyledReply:
    """A reply as sent: its content, the style that shaped it (BARE when the one drawn
    had nothing to change), the separate reasoning field and whether it was cut."""

    content: str
    style: ReplyStyle
    reasoning_content: str | None = None
    truncated: bool = False


def styled_reply(reply: Reply, pick: StylePick, *, max_tokens: int | None,
                 default_max_tokens: int = DEFAULT_TRUNCATION_TOKENS) -> StyledReply:
    """``reply`` in the form ``pick`` draws; its content unchanged."""
    style, variant = pick.style, pick.variant
    bare = StyledReply(reply.content, ReplyStyle.BARE, truncated=reply.truncated)
    if style is ReplyStyle.REASONING_CONTENT:
        return StyledReply(reply.content, style, reasoning_content=reasoning(reply, variant),
                           truncated=reply.truncated)
    if style is ReplyStyle.THINK:
        # Text answers get the block too: a reasoning model thinks before prose as well.
        return StyledReply(f"<think>\n{reasoning(reply, variant)}\n</think>\n\n{reply.content}",
                           style, truncated=reply.truncated)
    if style is ReplyStyle.TRUNCATED:
        cut = cut_to_tokens(reply.content,
                            default_max_tokens if max_tokens is None else max_tokens)
        return bare if cut is None else StyledReply(cut, style, truncated=True)
    # The remaining styles reshape JSON; plain-text answers stay plain (a model answers
    # prose in prose).
    if not reply.expects_json or style not in _JSON_FORMS:
        return bare
    content = _JSON_FORMS[style](json.loads(reply.content), reply.kind, variant)
    return bare if content is None else StyledReply(content, style)


# --- the JSON forms --------------------------------------------------------------------

_PROSE_BEFORE = ("Here is the JSON you asked for:",
                 "Sure! Based on the text provided, here is the result:",
                 "Certainly. The requested output follows.")
_PROSE_AFTER = ("Let me know if you need anything else.",
                "I hope this helps.",
                "Every entry is taken from the text above.")


def _fenced(value: Any, _kind: TaskKind, variant: int) -> str:
    # Models pretty-print inside a fence; most tag it json, some leave the tag off.
    tag = "" if variant % 3 == 2 else "json"
    return f"```{tag}\n{json.dumps(value, indent=2, ensure_ascii=False)}\n```"


def _prose(value: Any, _kind: TaskKind, variant: int) -> str:
    before = _PROSE_BEFORE[variant % len(_PROSE_BEFORE)]
    after = _PROSE_AFTER[(variant // len(_PROSE_BEFORE)) % len(_PROSE_AFTER)]
    return f"{before}\n\n{_dumps(value)}\n\n{after}"


def _numbers_as_strings(value: Any, _kind: TaskKind, _variant: int) -> str | None:
    return None if _holds_no_number(value) else _dumps(_map_numbers(value))


def _map_numbers(value: Any) -> Any:
    if isinstance(value, bool):  # a bool is an int to Python, not a number to JSON
        return value
    if isinstance(value, int | float):
        return json.dumps(value)
    if isinstance(value, list):
        return [_map_numbers(item) for item in value]
    if isinstance(value, dict):
        return {key: _map_numbers(item) for key, item in value.items()}
    return value


def _holds_no_number(value: Any) -> bool:
    if isinstance(value, list):
        return all(_holds_no_number(item) for item in value)
    if isinstance(value, dict):
        return all(_holds_no_number(item) for item in value.values())
    return isinstance(value, bool) or not isinstance(value, int | float)


# The kinds whose replies carry scores asked on 0-10: BridgeRAG's judge
# (``llm_responses._scores_reply``: ``{"scores": {id: 0-10}}``) and the partitioned KG's
# adjudication (``llm_kgbridge.adjudicate_reply``: ``{"same", "score": 0-10, "reason"}``).
_SCORE_TOP = 10


def _unit_scores(value: Any, kind: TaskKind, _variant: int) -> str | None:
    if kind is TaskKind.SCORES and isinstance(value, dict) and isinstance(value.get("scores"),
                                                                          dict):
        scores = value["scores"]
        if not _recoverable(scores.values()):
            return None
        return _dumps({**value, "scores": {key: score / _SCORE_TOP
                                           for key, score in scores.items()}})
    if kind is TaskKind.KG_ADJUDICATE and isinstance(value, dict) \
            and _recoverable([value.get("score")]):
        return _dumps({**value, "score": value["score"] / _SCORE_TOP})
    return None


def _recoverable(scores: Iterable[object]) -> bool:
    """Whether the scores on 0-1 could be read back as 0-10: all numbers, one at least
    strictly between the ends (0 and 10 become 0.0 and 1.0, which a reader must take
    as the 0-10 scores they also are)."""
    given = list(scores)
    numbers = [s for s in given if isinstance(s, int | float) and not isinstance(s, bool)]
    return bool(numbers) and len(numbers) == len(given) \
        and any(0 < s < _SCORE_TOP for s in numbers)


def _null_elements(value: Any, _kind: TaskKind, variant: int) -> str | None:
    """``null`` beside the real elements of the reply's lists of items: the top-level
    array, and the arrays directly under the top-level object's keys. Deeper arrays
    (a proposition's entities) are left alone, and so are empty ones (``[null]``
    holds nothing usable, which is not the empty answer the bare reply gives)."""
    if isinstance(value, list):
        return _dumps(_with_nulls(value, variant)) if value else None
    if not isinstance(value, dict) or not any(isinstance(v, list) and v
                                              for v in value.values()):
        return None
    return _dumps({key: _with_nulls(item, variant) if isinstance(item, list) and item else item
                   for key, item in value.items()})


def _with_nulls(items: list[Any], variant: int) -> list[Any]:
    head = [None, *items] if variant % 2 else [*items[:1], None, *items[1:]]
    return [*head, None]


_JSON_FORMS: dict[ReplyStyle, Callable[[Any, TaskKind, int], str | None]] = {
    ReplyStyle.FENCED: _fenced, ReplyStyle.PROSE: _prose,
    ReplyStyle.NUMBERS_AS_STRINGS: _numbers_as_strings, ReplyStyle.UNIT_SCORES: _unit_scores,
    ReplyStyle.NULL_ELEMENTS: _null_elements}


# --- reasoning and cutting --------------------------------------------------------------

_TASKS: dict[TaskKind, str] = {
    TaskKind.STAGE1: "turn the document into question-answer pairs and list its entities",
    TaskKind.STAGE2: "find facts that bridge the documents",
    TaskKind.SCORES: "score each candidate passage from 0 to 10 against the question",
    TaskKind.QUERIES: "write search queries for the question",
    TaskKind.PROPOSITIONS: "split the paragraph into propositions with their entities",
    TaskKind.QA_PAIRS: "write question-answer pairs for the passage",
    TaskKind.DECOMPOSE: "break the question into sub-questions",
    TaskKind.SYNTHESIZE: "answer the question from the retrieved knowledge",
    TaskKind.KG_EXTRACT: "extract the entities of the passage and how they relate",
    TaskKind.KG_GLEAN: "find the entities the first extraction missed",
    TaskKind.KG_SUMMARIES: "summarise each entity from its descriptions",
    TaskKind.KG_ADJUDICATE: "decide whether the two descriptions are of one entity",
    TaskKind.KG_PLAN: "choose which documents to read for the question",
    TaskKind.KG_SUFFICIENCY: "judge whether the context is enough to answer the question",
    TaskKind.KG_DOC_SUMMARY: "summarise the document",
    TaskKind.SUMMARY: "summarise the texts",
    TaskKind.ANSWER: "answer the question from the context",
    TaskKind.IRCOT: "take the next reasoning step toward the answer",
    TaskKind.ENTITY_PAIR: "name the two entities the question turns on",
}


def reasoning(reply: Reply, variant: int) -> str:
    """A reasoning model's thoughts before its answer: plausible, deterministic, and
    without brackets (the reader must never need them, but a bracket-free block keeps
    a reader's bug from hiding behind a lucky parse)."""
    task = _TASKS.get(reply.kind, "respond to the request")
    form = "the JSON format that was asked for" if reply.expects_json else "a few words"
    if variant % 2:
        return (f"Okay, so I need to {task}. Let me read the input carefully first.\n"
                "Going through it piece by piece, I should keep only what the text "
                "supports and leave nothing out.\n"
                f"That looks complete. I will give the answer in {form}, and nothing else.")
    return (f"The user wants me to {task}. First, what does the input actually say?\n"
            "Let me check each part against the instructions again, so that nothing is "
            f"invented.\nRight, I have it. The answer goes in {form}.")


_WORD_END = re.compile(r"\S+")


def cut_to_tokens(content: str, max_tokens: int) -> str | None:
    """``content`` cut to fit ``max_tokens`` as the server counts tokens
    (``estimate_tokens``), its whitespace kept; None when it already fits."""
    if estimate_tokens(content) <= max_tokens:
        return None
    keep = max(1, max_tokens * 3 // 4)  # the most words whose estimate fits the budget
    end = 0
    for position, word in enumerate(_WORD_END.finditer(content), start=1):
        end = word.end()
        if position == keep:
            break
    return content[:end]


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)
