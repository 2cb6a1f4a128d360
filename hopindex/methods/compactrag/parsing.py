"""Readers of CompactRAG's replies: a passage's QA pairs and a question's
decomposition (the synthesis' answer is read in ``text_replies``).

``parse_qa_pairs`` is the ``parse`` callback of ``complete_json`` for the offline
extraction. Pairs are read one by one against ``shapes.QaItem``: a null or misfit pair
is dropped and noted, and the reply fails (``ReplyShapeError``, for the client's one
repair call) only when it is not the array or its wrapper, or none of its pairs fits.
A pair that fits but breaks one of the prompt's rules is dropped and counted.

``parse_decomposition`` reads the query's first call from its text and never raises:
there is no repair call to fall back on. What it had to repair, or why it fell back,
is listed in ``degraded`` for the query trace.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from typing import Any

from hopindex.backends.llm.reply_json import answer_text, json_candidates
from hopindex.backends.llm.reply_shapes import json_type_name, note_dropped, read_items
from hopindex.core.errors import ReplyShapeError
from hopindex.methods.compactrag.shapes import QA_WHAT, QaItem

# JSON mode (``response_format=json_object``) forbids a top-level array, so the prompts
# ask for the array wrapped under these keys there; the others are what models use.
QA_KEYS = ("qa", "qa_pairs", "pairs")
SUB_QUESTIONS_KEYS = ("sub_questions", "subquestions", "questions", "decomposition", "steps")
QUESTION_KEY = "question"
ANSWER_KEY = "answer"
SUB_QUESTION_TEXT_KEYS = ("q", "question", "sub_question", "subquestion")
MAX_QUESTION_WORDS = 12  # the authors' rule: a question of at most twelve words
MAX_SUB_QUESTIONS = 8  # departure: a runaway reply must not cost dozens of retrievals

# A question that starts with one of these is about something it does not name.
LEADING_PRONOUNS = frozenset({
    "he", "she", "it", "they", "we", "you", "i", "him", "her", "them", "his", "hers", "its",
    "their", "theirs", "this", "that", "these", "those"})
# In lower case inside a question, these stand for a name the question leaves out.
REFERRING_PRONOUNS = frozenset({"he", "she", "it", "they", "him", "her", "them", "his", "its",
                                "their"})
_NO_REF = frozenset({"", "none", "null", "nil", "n/a", "na", "-"})
_WORD = re.compile(r"[\w'’]+")  # noqa: RUF001
_EDGE_PUNCTUATION = " \t\n.,;:!?\"'“”‘’"  # noqa: RUF001


class DropReason(enum.StrEnum):
    """Why a QA pair of a well-shaped reply was not kept."""

    EMPTY = "empty"  # a blank question or answer
    PRONOUN = "pronoun"  # leads with a pronoun, or refers by pronoun and names nothing
    TOO_LONG = "too_long"  # a question of more than MAX_QUESTION_WORDS words
    NOT_VERBATIM = "not_verbatim"  # the answer is not a substring of the passage
    DUPLICATE = "duplicate"  # the same question as a pair kept before it


@dataclass(frozen=True, slots=True)
class QaPair:
    """One atomic fact; ``answer`` is the passage's own span, on one line."""

    question: str
    answer: str

    @property
    def unit_text(self) -> str:
        """The indexed text, question and answer embedded together as the paper does."""
        return f"{self.question}\n{self.answer}"


@dataclass(frozen=True, slots=True)
class QaExtraction:
    """A passage's kept pairs in reply order, and how many were dropped for each reason
    (every reason is a key, zero when none)."""

    pairs: tuple[QaPair, ...]
    dropped: dict[DropReason, int]

    @property
    def dropped_total(self) -> int:
        return sum(self.dropped.values())


@dataclass(frozen=True, slots=True)
class SubQuestion:
    """``index`` is 1-based in dependency order; ``ref`` is the index of the earlier
    sub-question whose answer this one needs, if any."""

    index: int
    text: str
    ref: int | None = None


@dataclass(frozen=True, slots=True)
class Decomposition:
    """Sub-questions in dependency order (every ``ref`` names an earlier one) and notes
    on what was dropped or why the question itself became its one sub-question (where
    the JSON was found is the reply's form, not noted)."""

    sub_questions: tuple[SubQuestion, ...]
    degraded: list[str]


# --- QA pairs ---------------------------------------------------------------------------


def parse_qa_pairs(value: Any, passage: str) -> QaExtraction:
    """``[{"question": str, "answer": str}, ...]``, or that array under ``"qa"`` (or
    ``"qa_pairs"``) in an object → the pairs that keep the prompt's rules.

    The answer must occur in ``passage`` (compared case-insensitively with whitespace
    folded, edge punctuation forgiven); the kept answer is the passage's own span.
    Questions are deduplicated by :func:`normalise_question`.
    """
    dropped = dict.fromkeys(DropReason, 0)
    kept: list[QaPair] = []
    seen: set[str] = set()
    folded = _Folded(passage)
    for item in read_items(_qa_items(value), QaItem, what=QA_WHAT):
        # A null question or answer is a blank: a rule's drop, counted as one.
        question = _one_line(item.question or "")
        answer = _one_line(item.answer or "")
        reason, span = _judge(question, answer, folded, seen)
        if reason is not None:
            dropped[reason] += 1
            note_dropped(f"{QA_WHAT}: {reason.value}")
            continue
        seen.add(normalise_question(question))
        kept.append(QaPair(question=question, answer=span))
    return QaExtraction(pairs=tuple(kept), dropped=dropped)


def normalise_question(question: str) -> str:
    """The key questions are deduplicated by: case, punctuation and whitespace folded."""
    folded = "".join(ch if ch.isalnum() or ch.isspace() else " " for ch in question.casefold())
    return " ".join(folded.split())


def _qa_items(value: Any) -> list[Any]:
    if isinstance(value, dict):
        key = next((k for k in QA_KEYS if k in value), None)
        if key is None:
            raise ReplyShapeError(f'compactrag.qa: expected a JSON array, or an object with '
                                  f'the array under "{QA_KEYS[0]}"; got an object with keys '
                                  f"{sorted(value)}")
        value = value[key]
    if not isinstance(value, list):
        raise ReplyShapeError(f"compactrag.qa: expected a JSON array of question-answer "
                              f"pairs, got {json_type_name(value)}")
    return value


def _judge(question: str, answer: str, passage: _Folded,
           seen: set[str]) -> tuple[DropReason | None, str]:
    if not question or not answer:
        return DropReason.EMPTY, ""
    if _leans_on_pronoun(question):
        return DropReason.PRONOUN, ""
    if len(question.split()) > MAX_QUESTION_WORDS:
        return DropReason.TOO_LONG, ""
    span = passage.find(answer)
    if span is None:
        return DropReason.NOT_VERBATIM, ""
    if normalise_question(question) in seen:
        return DropReason.DUPLICATE, ""
    return None, span


def _leans_on_pronoun(question: str) -> bool:
    """Leads with a pronoun ("It was founded when?"), or uses one in lower case and
    names nothing after its first word ("Where was he born?"): either way a search
    cannot tell what the question is about."""
    words = _WORD.findall(question)
    if not words:
        return False
    if words[0].casefold() in LEADING_PRONOUNS:
        return True
    rest = words[1:]
    refers = any(word in REFERRING_PRONOUNS for word in rest)
    return refers and not any(word[0].isupper() for word in rest)


class _Folded:
    """A passage lower-cased with whitespace runs folded to one space, remembering for
    each folded character where it came from, so a match maps back to the original."""

    def __init__(self, text: str) -> None:
        self.text = text
        chars: list[str] = []
        origins: list[int] = []
        in_space = False
        for position, char in enumerate(text):
            if char.isspace():
                if not in_space:
                    chars.append(" ")
                    origins.append(position)
                in_space = True
                continue
            in_space = False
            for lowered in char.lower():  # a few characters lower-case to two
                chars.append(lowered)
                origins.append(position)
        self.folded = "".join(chars)
        self.origins = origins

    def find(self, answer: str) -> str | None:
        """The passage's span for ``answer`` on one line, or None; an answer that only
        matches without its edge punctuation or quotes is looked up without them."""
        candidates = [answer, answer.strip(_EDGE_PUNCTUATION)]
        for candidate in candidates:
            target = " ".join(candidate.lower().split())
            start = self.folded.find(target) if target else -1
            if start >= 0:
                end = self.origins[start + len(target) - 1] + 1
                return _one_line(self.text[self.origins[start]:end])
        return None


# --- decomposition ----------------------------------------------------------------------


@dataclass(slots=True)
class _Draft:
    declared: int
    text: str
    ref: int | None


def parse_decomposition(content: str, question: str, *,
                        max_sub_questions: int = MAX_SUB_QUESTIONS) -> Decomposition:
    """The decomposition call's reply, as text, → sub-questions in dependency order.

    Reads a JSON array, an object wrapping it, a fenced block or a list inside prose
    (trailing commas forgiven); items may be objects ``{"index", "q", "ref"}`` (0- or
    1-based, numbers or digit strings, ``"None"``/``null`` for no ref) or plain strings.
    A ref to the item itself, a later or a missing index is dropped; repeated
    sub-questions are kept once. Nothing usable → ``question`` as its one sub-question.
    """
    notes: list[str] = []
    found = next((c for c in json_candidates(content) if _decomposition_like(c.value)), None)
    if found is None:
        return _fallback(question, notes, "reply holds no JSON list of sub-questions")
    value = found.value
    # Where the JSON was found is the reply's form, not a degradation of the query.
    items = _decomposition_items(value)
    if items is None:
        return _fallback(question, notes, f"reply is a JSON {json_type_name(value)} without a list "
                                          f"of sub-questions")
    if items and _cut_off(found.notes, content):
        notes.append("reply cut off: its last sub-question dropped")
        items = items[:-1]
    drafts = _ordered(_valid_refs(_drafts(items, notes), notes))
    drafts = _unique(drafts, notes)
    if not drafts:
        return _fallback(question, notes, "reply lists no sub-question")
    if len(drafts) > max_sub_questions:
        notes.append(f"{len(drafts)} sub-questions: kept the first {max_sub_questions}")
        drafts = drafts[:max_sub_questions]
    renumbered = {draft.declared: position for position, draft in enumerate(drafts, start=1)}
    return Decomposition(
        sub_questions=tuple(SubQuestion(index=renumbered[d.declared], text=d.text,
                                        ref=None if d.ref is None else renumbered[d.ref])
                            for d in drafts),
        degraded=notes)


def _cut_off(notes: tuple[str, ...], content: str) -> bool:
    """A list repaired because its closing bracket never came: the reply was cut at its
    token budget, and its last item most likely in the middle of its text."""
    text = answer_text(content)
    start = text.find("[")
    return any(n.startswith("repaired") for n in notes) and start >= 0 and "]" not in text[start:]


def _fallback(question: str, notes: list[str], why: str) -> Decomposition:
    return Decomposition(sub_questions=(SubQuestion(index=1, text=_one_line(question)),),
                         degraded=[*notes, f"{why}: asked the question itself"])


def _decomposition_like(value: Any) -> bool:
    if isinstance(value, dict):
        return _decomposition_items(value) is not None
    return isinstance(value, list) and (
        not value or any(isinstance(item, dict | str) for item in value))


def _decomposition_items(value: Any) -> list[Any] | None:
    if isinstance(value, list):
        return value
    if not isinstance(value, dict):
        return None
    if any(key in value for key in SUB_QUESTION_TEXT_KEYS):
        return [value]  # one sub-question, not wrapped
    key = next((k for k in SUB_QUESTIONS_KEYS if isinstance(value.get(k), list)), None)
    if key is not None:
        listed: list[Any] = value[key]
        return listed
    lists = [v for v in value.values() if isinstance(v, list)]
    return lists[0] if len(lists) == 1 else None


def _drafts(items: list[Any], notes: list[str]) -> list[_Draft]:
    """Items with a text, each with a distinct index (as declared, else the next free)."""
    drafts: list[_Draft] = []
    used: set[int] = set()
    skipped = renumbered = 0
    strings = False
    for item in items:
        if item is None:
            # A null beside the real items is the reply's form, not a lost sub-question:
            # counted as dropped, not a degradation of the query.
            note_dropped("sub_questions: null element")
            continue
        fields = item if isinstance(item, dict) else {}
        raw = item if isinstance(item, str) else next(
            (fields[k] for k in SUB_QUESTION_TEXT_KEYS if k in fields), None)
        text = _one_line(raw) if isinstance(raw, str) else ""
        if not text:
            skipped += 1
            continue
        strings = strings or isinstance(item, str)
        declared = _as_index(fields.get("index"))
        if declared is None or declared in used:
            renumbered += 1 if fields else 0
            declared = max(used, default=0) + 1
        used.add(declared)
        drafts.append(_Draft(declared=declared, text=text,
                             ref=_ref(fields.get("ref"), notes, declared)))
    if skipped:
        notes.append(f"{skipped} item(s) without a sub-question text skipped")
    if renumbered:
        notes.append(f"{renumbered} sub-question(s) without a usable index numbered in order")
    if strings:
        notes.append("sub-questions given as plain strings: no refs")
    return drafts


def _as_index(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("#").isdigit():
        return int(value.strip().lstrip("#"))
    return None


def _ref(value: Any, notes: list[str], declared: int) -> int | None:
    if value is None or (isinstance(value, str) and value.strip().casefold() in _NO_REF):
        return None
    if isinstance(value, list):
        refs = [r for r in (_as_index(v) for v in value) if r is not None]
        if len(refs) > 1:
            notes.append(f"sub-question {declared}: several refs, kept the last")
        return refs[-1] if refs else None
    ref = _as_index(value)
    if ref is None:
        notes.append(f"sub-question {declared}: unreadable ref {value!r} dropped")
    return ref


def _valid_refs(drafts: list[_Draft], notes: list[str]) -> list[_Draft]:
    """Refs name an earlier (lower) index of this decomposition, or are dropped."""
    declared = {draft.declared for draft in drafts}
    for draft in drafts:
        if draft.ref is None:
            continue
        if draft.ref not in declared:
            notes.append(f"sub-question {draft.declared}: ref to missing index {draft.ref} "
                         f"dropped")
            draft.ref = None
        elif draft.ref >= draft.declared:
            notes.append(f"sub-question {draft.declared}: ref to later index {draft.ref} "
                         f"dropped")
            draft.ref = None
    return drafts


def _ordered(drafts: list[_Draft]) -> list[_Draft]:
    # Every ref now points to a lower index, so index order is a dependency order.
    return sorted(drafts, key=lambda draft: draft.declared)


def _unique(drafts: list[_Draft], notes: list[str]) -> list[_Draft]:
    """Repeats dropped; a ref to a dropped repeat moves to the first, which is earlier."""
    first_of: dict[str, int] = {}
    alias: dict[int, int] = {}
    kept: list[_Draft] = []
    for draft in drafts:
        key = normalise_question(draft.text)
        if key in first_of:
            alias[draft.declared] = first_of[key]
            continue
        first_of[key] = draft.declared
        if draft.ref is not None:
            draft.ref = alias.get(draft.ref, draft.ref)
        kept.append(draft)
    if alias:
        notes.append(f"{len(alias)} repeated sub-question(s) dropped")
    return kept


# --- shared ---------------------------------------------------------------------------


def _one_line(text: str) -> str:
    return " ".join(text.split())
