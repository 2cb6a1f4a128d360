"""The answer call over selected units: IndexRAG's answer prompt (its Fig. 7), which
``indexrag`` and ``ircot`` share, and its cited form (option ``answer=cited``): the
contexts numbered, the answer ending in markers that the result maps to its passages,
and through them to their file, page and section."""

from __future__ import annotations

import enum
import re
from collections.abc import Sequence
from typing import Any

from hopindex.backends.llm.chat import ChatRequest
from hopindex.core.errors import InvalidInputError
from hopindex.core.models import Unit
from hopindex.methods.base import QueryOptions, RankedPassage

ANSWER = "answer"
ANSWER_MAX_TOKENS = 50

ANSWER_SYSTEM = (
    "You are a precise question answering assistant. Answer with ONLY the exact "
    "information requested, with no explanations or extra words. If the answer is a "
    "name, give only the name. If the answer is a number, give only the number. If the "
    "answer is yes/no, give only yes or no."
)


def answer_request(question: str, contexts: Sequence[str]) -> ChatRequest:
    """Fig. 7 over the selected units' texts; a short answer, deterministic."""
    context = "\n\n".join(c.strip() for c in contexts if c.strip())
    # A newline inside the question would break the prompt's two-line structure.
    asked = " ".join(question.split())
    user = f"Context: {context}\nQuestion: {asked}"
    return ChatRequest(stage=ANSWER, messages=(("system", ANSWER_SYSTEM), ("user", user)),
                       temperature=0.0, max_tokens=ANSWER_MAX_TOKENS)




class AnswerStyle(enum.StrEnum):
    """``answer`` option: the paper's short answer, or one citing its passages."""

    SHORT = "short"
    CITED = "cited"


# The option as the methods that answer through this prompt declare it.
ANSWER_STYLE_OPTION: dict[str, Any] = {
    "type": "string", "enum": [s.value for s in AnswerStyle],
    "description": "short (default): the paper's answer prompt, a bare answer; cited: the "
                   "contexts are numbered and the answer ends with [n] markers, which the "
                   "result renumbers to the ranks of its passages (and so to their file, "
                   "page and section)"}
OPTIONS_SCHEMA: dict[str, Any] = {"type": "object", "additionalProperties": False,
                                  "properties": {"answer": ANSWER_STYLE_OPTION}}

CITE_SYSTEM = (
    " Then, after the answer, give the numbers of the context passages it rests on as "
    "markers such as [2][5], and nothing else."
)
# The markers after a short answer: a few more tokens than the answer alone.
CITED_MAX_TOKENS = ANSWER_MAX_TOKENS + 30
_MARKER = re.compile(r"\[(\d{1,3})\]")


def answer_style_of(options: QueryOptions) -> AnswerStyle:
    raw = options.params.get("answer", AnswerStyle.SHORT.value)
    try:
        return AnswerStyle(str(raw).lower())
    except ValueError:
        raise InvalidInputError(f"answer must be one of {', '.join(AnswerStyle)}, got "
                                f"{raw!r}", where="params.answer") from None


def cited_answer_request(question: str, contexts: Sequence[str]) -> ChatRequest:
    """Fig. 7 with its contexts numbered ``[1]``, ``[2]``, … and markers asked for."""
    numbered = [f"[{n}] {c.strip()}" for n, c in enumerate(contexts, start=1) if c.strip()]
    asked = " ".join(question.split())
    user = "Context:\n" + "\n\n".join(numbered) + f"\nQuestion: {asked}"
    return ChatRequest(stage=ANSWER, messages=(("system", ANSWER_SYSTEM + CITE_SYSTEM),
                                               ("user", user)),
                       temperature=0.0, max_tokens=CITED_MAX_TOKENS)


def request_for(style: AnswerStyle, question: str, contexts: Sequence[str]) -> ChatRequest:
    if style is AnswerStyle.CITED:
        return cited_answer_request(question, contexts)
    return answer_request(question, contexts)


def cite_answer(reply: str, contexts: Sequence[Unit], passages: Sequence[RankedPassage]
                ) -> tuple[str, list[dict[str, Any]]]:
    """The answer with its context markers renumbered to the ranks of the result's
    passages (``[2]``: the second passage shown), and what each marker named.

    A context is a unit; its documents are found among the passages by id. A marker
    naming no context, or a context none of whose documents is shown, is dropped
    (listed with no ranks), so every marker left points at a passage on the page.
    """
    rank_of = {p.doc_id: p.rank for p in passages}
    cites: list[dict[str, Any]] = []

    def renumber(match: re.Match[str]) -> str:
        number = int(match.group(1))
        unit = contexts[number - 1] if 0 < number <= len(contexts) else None
        ranks = sorted({rank_of[d] for d in unit.source_doc_ids if d in rank_of}) if unit else []
        cites.append({"marker": number, "unit_id": unit.unit_id if unit else None,
                      "passage_ranks": ranks})
        return "".join(f"[{r}]" for r in ranks)

    text = _MARKER.sub(renumber, reply)
    # Markers renumbered side by side may repeat a rank: "[2][2]" reads as "[2]".
    text = re.sub(r"(\[\d+\])(?:\1)+", r"\1", text)
    return " ".join(text.split()), cites
