"""Deterministic replies of the test LLM: the task is recognised by markers in the prompt.

hopindex's prompts must contain these markers for the test server to answer them as the
real model would be asked to (shape, not quality). Classification, first match wins:

1. ``SUMMARY_MARKER`` (SiReRAG's summary instruction) → ``Summary:`` and the first sentence
   of each text between the two ``SUMMARY_RULE`` lines (texts are one blank line apart).
2. ``PROPOSITIONS_MARKER`` (the JSON key ``"proposition"``) → one proposition per sentence
   of the passage after ``PARAGRAPH_LABEL``, its capitalised names as entities: a JSON
   array, or ``{"propositions": [...]}`` in JSON mode (``llm_sirerag``). These two come
   first because their prompts carry whole passages, which may hold other markers.
   SiReRAG's three paper steps follow them, for the same reason (``llm_sirerag``):
   ``COREFERENCE_MARKER`` → the paragraph with its pronouns resolved (text);
   ``NAMED_ENTITIES_MARKER`` → its names keyed ``n1, ...``; ``FACTS_MARKER`` → its
   sentences keyed ``f1, ...`` with triplets joining the listed entities.
3. CompactRAG's three prompts (``llm_compactrag``), whose passages and retrieved pairs
   may hold later kinds' markers: ``QA_MARKER`` (``[Entity List]:``) → QA pairs, one per
   sentence; ``SYNTHESIZE_MARKER`` (``"thought"``) → ``{"thought", "answer"}``;
   ``DECOMPOSE_MARKER`` (``"ref"``) → one or two sub-questions. The first and the last
   are wrapped under a key in JSON mode, bare arrays otherwise.
4. The partitioned-KG prompts (``llm_kgbridge``), whose passages and entity summaries
   may hold later kinds' markers: ``KG_GLEAN_MARKER`` → the chunk's quoted phrases
   its extraction did not list (before ``KG_EXTRACT_MARKER``, which the gleaning
   prompt also holds); ``KG_EXTRACT_MARKER`` (``"relations"``) → the
   chunk's names as entities, related when they share a sentence;
   ``KG_SUMMARIES_MARKER`` (``"summaries"``) → each entity's first description
   sentence; ``KG_DOC_SUMMARY_MARKER`` → the first sentence of each entity summary (a
   text reply); ``KG_ADJUDICATE_MARKER`` (``"same"``) → ``{"same", "score", "reason"}``,
   the same entity when the two summaries share a content word beyond the name; the
   query's ``KG_PLAN_MARKER`` (``"primary"``) → ``{"primary", "auxiliary", "reason"}``,
   the routed documents sharing the most words with the question; and
   ``KG_SUFFICIENCY_MARKER`` (``"sufficient"``) → ``{"sufficient", "findings",
   "sub_question"}``, sufficient once the context names a name of the question and
   holds two documents (the query's answer prompt is the ``Question:`` kind below).
5. ``STAGE2_SECTION_MARKER`` (``=== Document: {title} ===`` sections with ``Q: … A: …``
   lines) → a JSON array of bridging facts, each joining facts of two documents.
6. ``STAGE1_MARKER`` (the JSON key ``"qa_pairs"``) → ``{"qa_pairs": [...], "entities": [...]}``
   from the passage after ``DOCUMENT_LABEL``.
7. ``SCORES_MARKER`` (``"scores"``) with candidate lines ``[ID] text`` → ``{"scores": {ID: 0-10}}``
   (BridgeRAG's judge; ``Bridge entity N:`` lines count toward the scores).
8. ``QUERIES_MARKER`` (``"queries"``) → ``{"queries": [three strings]}``, plus
   ``"entities": [e1, e2]`` when the prompt also names ``"entities"``.
9. ``ENTITY_PAIR_MARKER`` (``e1 | e2``) → ``Entity One | Entity Two``.
10. ``IRCOT_ANSWER_PHRASE`` (``So the answer is``) or ``IRCOT_SEARCH_LABEL`` (``Search:``) →
   one reasoning step; see :func:`_ircot_reply`.
11. ``QUESTION_LABEL`` (``Question:``) → a short answer from the context.
12. Anything else → a two-sentence summary, or ``{"result": …}`` when JSON is expected.
"""

from __future__ import annotations

import base64
import enum
import hashlib
import itertools
import json
import math
import re
import struct
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from hopindex.testing.llm_compactrag import (
    DECOMPOSE_MARKER,
    QA_MARKER,
    SYNTHESIZE_MARKER,
    decompose_reply,
    qa_reply,
    synthesize_reply,
)
from hopindex.testing.llm_kgbridge import ADJUDICATE_MARKER as KG_ADJUDICATE_MARKER
from hopindex.testing.llm_kgbridge import DOC_SUMMARY_MARKER as KG_DOC_SUMMARY_MARKER
from hopindex.testing.llm_kgbridge import EXTRACT_MARKER as KG_EXTRACT_MARKER
from hopindex.testing.llm_kgbridge import GLEAN_MARKER as KG_GLEAN_MARKER
from hopindex.testing.llm_kgbridge import PLAN_MARKER as KG_PLAN_MARKER
from hopindex.testing.llm_kgbridge import SUFFICIENCY_MARKER as KG_SUFFICIENCY_MARKER
from hopindex.testing.llm_kgbridge import SUMMARIES_MARKER as KG_SUMMARIES_MARKER
from hopindex.testing.llm_kgbridge import (
    adjudicate_reply,
    doc_summary_reply,
    extract_reply,
    glean_reply,
    plan_reply,
    sufficiency_reply,
    summaries_reply,
)
from hopindex.testing.llm_sirerag import (
    COREFERENCE_MARKER,
    FACTS_MARKER,
    NAMED_ENTITIES_MARKER,
    coreference_reply,
    facts_reply,
    named_entities_reply,
    propositions_reply,
    summary_reply,
)
from hopindex.testing.llm_text import NOT_NAME_WORDS, capitalised_spans, split_sentences, unique

STAGE1_MARKER = '"qa_pairs"'
STAGE1_ENTITIES_KEY = '"entities"'
DOCUMENT_LABEL = "Document:"
STAGE2_SECTION_MARKER = "=== Document:"
SCORES_MARKER = '"scores"'
QUERIES_MARKER = '"queries"'
ENTITY_PAIR_MARKER = "e1 | e2"
IRCOT_ANSWER_PHRASE = "So the answer is"
# The cited answer prompt asks for markers with these words; its contexts are "[n] text".
CITE_REQUEST = "markers such as [2][5]"
_NUMBERED_CONTEXT = re.compile(r"^\[(\d+)\] ", re.M)
IRCOT_SEARCH_LABEL = "Search:"
IRCOT_DONE = "DONE"
REASONING_SO_FAR_LABEL = "Reasoning so far:"
SUMMARY_MARKER = "Summarize the provided text, including as many key details as needed"
SUMMARY_RULE = "-" * 21  # a line of its own before and after a summary's texts
PROPOSITIONS_MARKER = '"proposition"'
PARAGRAPH_LABEL = "Paragraph:"
QUESTION_LABEL = "Question:"
# Where the evidence of an answer or reasoning prompt starts (Fig. 7 and Fig. 8 labels).
CONTEXT_LABELS = ("Context:", "Retrieved Information:", "Passages:", "Bridge:")
# A line starting with one of these ends a passage or a document section: the
# instructions that follow them are not evidence.
SECTION_END_PREFIXES = ("Requirements:", "Return ", "Question:", "Reasoning so far:",
                        "Answer:", "Write ONE", "Format your response")
UNKNOWN_ANSWER = "unknown"

_SECTION_HEADER = re.compile(r"^===\s*Document:\s*(.*?)\s*===\s*$", re.MULTILINE)
_CANDIDATE_LINE = re.compile(r"^\s*\[([^\]\n]+)\]\s*(.*)$", re.MULTILINE)
_BRIDGE_ENTITY_LINE = re.compile(r"^Bridge entity \d+:[ \t]*(.*)$", re.MULTILINE)
_QUOTED_ENTITY = re.compile(r"about\s+[\"“]([^\"”\n]+)[\"”]")  # Fig. 6 quotes
_WORD = re.compile(r"\w+")
_YES_NO_START = re.compile(
    r"^(?:is|are|was|were|did|do|does|can|could|has|have|had|will|would)\b", re.IGNORECASE)
_QUERY_COUNT = 3


class TaskKind(enum.StrEnum):
    SUMMARY = "summary"
    PROPOSITIONS = "propositions"
    COREFERENCE = "coreference"
    NAMED_ENTITIES = "named_entities"
    FACTS = "facts"
    STAGE1 = "stage1"
    STAGE2 = "stage2"
    ANSWER = "answer"
    IRCOT = "ircot"
    QUERIES = "queries"
    ENTITY_PAIR = "entity_pair"
    SCORES = "scores"
    QA_PAIRS = "qa_pairs"
    DECOMPOSE = "decompose"
    SYNTHESIZE = "synthesize"
    KG_EXTRACT = "kg_extract"
    KG_GLEAN = "kg_glean"
    KG_SUMMARIES = "kg_entity_summaries"
    KG_DOC_SUMMARY = "kg_doc_summary"
    KG_ADJUDICATE = "kg_adjudicate"
    KG_PLAN = "kg_plan"
    KG_SUFFICIENCY = "kg_sufficiency"
    OTHER = "other"


# Kinds whose reply is JSON whatever the request's response_format says.
JSON_KINDS = frozenset({TaskKind.STAGE1, TaskKind.STAGE2, TaskKind.QUERIES, TaskKind.SCORES,
                        TaskKind.PROPOSITIONS, TaskKind.NAMED_ENTITIES, TaskKind.FACTS,
                        TaskKind.QA_PAIRS, TaskKind.DECOMPOSE,
                        TaskKind.SYNTHESIZE, TaskKind.KG_EXTRACT, TaskKind.KG_GLEAN,
                        TaskKind.KG_SUMMARIES,
                        TaskKind.KG_ADJUDICATE, TaskKind.KG_PLAN,
                        TaskKind.KG_SUFFICIENCY})


_COMPACTRAG_REPLIES: dict[TaskKind, Callable[..., object]] = {
    TaskKind.QA_PAIRS: qa_reply, TaskKind.DECOMPOSE: decompose_reply,
    TaskKind.SYNTHESIZE: synthesize_reply}
_SIRERAG_REPLIES: dict[TaskKind, Callable[..., object]] = {
    TaskKind.NAMED_ENTITIES: named_entities_reply, TaskKind.FACTS: facts_reply}
_KGBRIDGE_REPLIES: dict[TaskKind, Callable[..., object]] = {
    TaskKind.KG_EXTRACT: extract_reply, TaskKind.KG_GLEAN: glean_reply,
    TaskKind.KG_SUMMARIES: summaries_reply,
    TaskKind.KG_ADJUDICATE: adjudicate_reply, TaskKind.KG_PLAN: plan_reply,
    TaskKind.KG_SUFFICIENCY: sufficiency_reply}


@dataclass(frozen=True, slots=True)
class Reply:
    kind: TaskKind
    content: str
    expects_json: bool
    truncated: bool = False  # cut at max_tokens: finish_reason "length"


def estimate_tokens(text: str) -> int:
    """Words times 4/3, rounded up: the one token estimate behind usage and the counters."""
    return math.ceil(len(text.split()) * 4 / 3)


def classify(prompt: str) -> TaskKind:
    rules = (
        (SUMMARY_MARKER in prompt, TaskKind.SUMMARY),
        (PROPOSITIONS_MARKER in prompt, TaskKind.PROPOSITIONS),
        (COREFERENCE_MARKER in prompt, TaskKind.COREFERENCE),
        (NAMED_ENTITIES_MARKER in prompt, TaskKind.NAMED_ENTITIES),
        (FACTS_MARKER in prompt, TaskKind.FACTS),
        (QA_MARKER in prompt, TaskKind.QA_PAIRS),
        (SYNTHESIZE_MARKER in prompt, TaskKind.SYNTHESIZE),
        (DECOMPOSE_MARKER in prompt, TaskKind.DECOMPOSE),
        (KG_GLEAN_MARKER in prompt, TaskKind.KG_GLEAN),
        (KG_EXTRACT_MARKER in prompt, TaskKind.KG_EXTRACT),
        (KG_SUMMARIES_MARKER in prompt, TaskKind.KG_SUMMARIES),
        (KG_DOC_SUMMARY_MARKER in prompt, TaskKind.KG_DOC_SUMMARY),
        (KG_ADJUDICATE_MARKER in prompt, TaskKind.KG_ADJUDICATE),
        (KG_PLAN_MARKER in prompt, TaskKind.KG_PLAN),
        (KG_SUFFICIENCY_MARKER in prompt, TaskKind.KG_SUFFICIENCY),
        (STAGE2_SECTION_MARKER in prompt, TaskKind.STAGE2),
        (STAGE1_MARKER in prompt, TaskKind.STAGE1),
        (SCORES_MARKER in prompt and _CANDIDATE_LINE.search(prompt) is not None,
         TaskKind.SCORES),
        (QUERIES_MARKER in prompt, TaskKind.QUERIES),
        (ENTITY_PAIR_MARKER in prompt, TaskKind.ENTITY_PAIR),
        (IRCOT_ANSWER_PHRASE in prompt or IRCOT_SEARCH_LABEL in prompt, TaskKind.IRCOT),
        (QUESTION_LABEL in prompt, TaskKind.ANSWER),
    )
    return next((kind for matched, kind in rules if matched), TaskKind.OTHER)


def compute_reply(messages: Sequence[str], *, max_tokens: int | None = None,
                  json_mode: bool = False) -> Reply:
    """The reply to a chat whose message contents are ``messages``, in order.

    Free text is cut to ``max_tokens``; JSON is never cut, so that only the server's
    ``fail_invalid_json`` fault produces unparseable JSON and tests can count it.
    """
    prompt = "\n\n".join(messages)
    kind = classify(prompt)
    if kind in JSON_KINDS:
        return Reply(kind, _dumps(_json_reply(kind, prompt, json_mode=json_mode)),
                     expects_json=True)
    if kind is TaskKind.ENTITY_PAIR:
        text = " | ".join(_entity_pair(prompt))
    elif kind is TaskKind.IRCOT:
        text = _ircot_reply(prompt)
    elif kind is TaskKind.ANSWER:
        text = short_answer(prompt)
    elif kind is TaskKind.COREFERENCE:
        text = coreference_reply(prompt)
    elif kind is TaskKind.SUMMARY:
        text = summary_reply(summary_texts(prompt))
    elif kind is TaskKind.KG_DOC_SUMMARY:
        text = doc_summary_reply(prompt)
    else:
        text = _summary(messages[-1] if messages else "")
    if json_mode:
        return Reply(kind, _dumps({"result": text}), expects_json=True)
    cut, truncated = _truncate(text, max_tokens)
    return Reply(kind, cut, expects_json=False, truncated=truncated)


def _json_reply(kind: TaskKind, prompt: str, *, json_mode: bool) -> object:
    if kind is TaskKind.PROPOSITIONS:
        passage = _until_section_end(_after_first(prompt, PARAGRAPH_LABEL))
        return propositions_reply(passage, json_mode=json_mode)
    method_reply = (_COMPACTRAG_REPLIES.get(kind) or _KGBRIDGE_REPLIES.get(kind)
                    or _SIRERAG_REPLIES.get(kind))
    if method_reply is not None:
        return method_reply(prompt, json_mode=json_mode)
    if kind is TaskKind.STAGE1:
        return stage1_reply(prompt)
    if kind is TaskKind.STAGE2:
        return stage2_reply(prompt)
    if kind is TaskKind.SCORES:
        return _scores_reply(prompt)
    return _queries_reply(prompt)  # the last of JSON_KINDS


def corrupt_json(content: str) -> str:
    """A reply no reader can use: the refusal in prose a real model gives instead of the
    JSON asked for. (A cut-off prefix of ``content`` would not do: a lenient reader
    closes its brackets, and a reply cut at its budget is told by ``finish_reason``.)"""
    return ("I'm sorry, but I can't produce that in the requested format. "
            f"The passage is {len(content)} characters long.")


# --- stage 1 -----------------------------------------------------------------------


def stage1_reply(prompt: str) -> dict[str, object]:
    passage = _passage_after(prompt, DOCUMENT_LABEL)
    pairs = [{"question": _question_for(sentence), "answer": sentence}
             for sentence in split_sentences(passage)]
    return {"qa_pairs": pairs, "entities": unique(capitalised_spans(passage))}


def _question_for(sentence: str) -> str:
    spans = capitalised_spans(sentence)
    subject = spans[0] if spans else " ".join(sentence.split()[:4])
    return f"What does the text state about {subject}?"


def _passage_after(prompt: str, label: str) -> str:
    start = prompt.rfind(label)
    body = prompt[start + len(label):] if start >= 0 else prompt
    return _until_section_end(body)


def _until_section_end(body: str) -> str:
    kept: list[str] = []
    for line in body.splitlines():
        if line.lstrip().startswith(SECTION_END_PREFIXES):
            break
        kept.append(line)
    return "\n".join(kept).strip()


# --- stage 2 -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Fact:
    question: str
    answer: str


def parse_stage2_sections(prompt: str) -> list[tuple[str, list[_Fact]]]:
    """(title, facts) of each ``=== Document: {title} ===`` section, in prompt order."""
    headers = list(_SECTION_HEADER.finditer(prompt))
    sections: list[tuple[str, list[_Fact]]] = []
    for position, header in enumerate(headers):
        end = headers[position + 1].start() if position + 1 < len(headers) else len(prompt)
        body = _until_section_end(prompt[header.end():end])
        sections.append((header.group(1), _parse_facts(body)))
    return sections


def _parse_facts(body: str) -> list[_Fact]:
    """``Q: … A: …`` on one line or two; a section without them holds one fact per line."""
    pairs: list[list[str]] = []
    loose: list[str] = []
    for raw_line in body.splitlines():
        line = raw_line.strip()
        if line.startswith("Q:"):
            question, _, answer = line[2:].partition(" A:")
            pairs.append([question.strip(), answer.strip()])
        elif line.startswith("A:") and pairs:
            pairs[-1][1] = (pairs[-1][1] + " " + line[2:].strip()).strip()
        elif line and pairs:
            slot = 1 if pairs[-1][1] else 0
            pairs[-1][slot] = (pairs[-1][slot] + " " + line).strip()
        elif line:
            loose.append(line)
    if pairs:
        return [_Fact(q, a or q) for q, a in pairs]
    return [_Fact("", line) for line in loose]


def stage2_reply(prompt: str) -> list[str]:
    """Bridging facts joining consecutive documents; ``[]`` with fewer than two documents."""
    entity_match = _QUOTED_ENTITY.search(prompt)
    entity = entity_match.group(1).lower() if entity_match else ""
    chosen: list[str] = []
    for _title, facts in parse_stage2_sections(prompt):
        if not facts:
            continue
        mentioning = [f for f in facts
                      if entity and entity in f"{f.question} {f.answer}".lower()]
        chosen.append((mentioning or facts)[0].answer)
    return [f"{first.rstrip('. ')}; and {second}"
            for first, second in itertools.pairwise(chosen)]


# --- SiReRAG's evidence ------------------------------------------------------------


def summary_texts(prompt: str) -> list[str]:
    """The texts between the first and the last ``SUMMARY_RULE`` line, split at blank lines."""
    lines = prompt.splitlines()
    rules = [i for i, line in enumerate(lines) if line.strip() == SUMMARY_RULE]
    if len(rules) < 2:
        return []
    evidence = "\n".join(lines[rules[0] + 1:rules[-1]])
    return [text.strip() for text in re.split(r"\n\s*\n", evidence) if text.strip()]


def _after_first(prompt: str, label: str) -> str:
    # The first label, not the last: the passage after it may contain the label too.
    start = prompt.find(label)
    return prompt[start + len(label):] if start >= 0 else prompt


# --- answers and reasoning -----------------------------------------------------------


def short_answer(prompt: str) -> str:
    """The context's most frequent capitalised span absent from the question, else unknown;
    when the contexts are numbered and markers are asked for (the cited answer
    prompt), followed by the markers of the contexts naming it, as a model cites."""
    question = _labelled_line(prompt, QUESTION_LABEL)
    if _YES_NO_START.match(question):
        return "yes"
    context = _context(prompt)
    candidates = _answer_candidates(context, question)
    answer = candidates[0] if candidates else UNKNOWN_ANSWER
    if CITE_REQUEST not in prompt:
        return answer
    parts = _NUMBERED_CONTEXT.split(context)  # ["", "1", text, "2", text, ...]
    markers = "".join(f"[{n}]" for n, text in zip(parts[1::2], parts[2::2], strict=True)
                      if answer in text)
    return f"{answer} {markers}".strip()


def _answer_candidates(context: str, question: str) -> list[str]:
    """Spans by descending frequency, ties by first appearance."""
    lowered_question = question.lower()
    spans = [s for s in capitalised_spans(context) if s.lower() not in lowered_question]
    counts = Counter(spans)
    first_seen = {span: i for i, span in reversed(list(enumerate(spans)))}
    return sorted(counts, key=lambda span: (-counts[span], first_seen[span]))


def _ircot_reply(prompt: str) -> str:
    """First step: the context sentence closest to the question, searching for its lead name.

    Later steps (or no evidence) conclude with ``So the answer is X.`` (and ``Search: DONE``
    in the Fig. 8 format), so a loop takes two steps deterministically.
    """
    question = _labelled_line(prompt, QUESTION_LABEL)
    context = _context(prompt)
    answer = short_answer(prompt)
    sentences = split_sentences(context)
    search_format = IRCOT_SEARCH_LABEL in prompt
    if _reasoning_steps(prompt) == 0 and sentences:
        question_words = set(_content_words(question))
        best = max(sentences, key=lambda s: (len(question_words & set(_content_words(s))),
                                             -sentences.index(s)))
        if not search_format:
            return best
        follow_up = " ".join([*(_answer_candidates(best, question)[:1]), question]).strip()
        return f"Reasoning: {best}\n{IRCOT_SEARCH_LABEL} {follow_up}"
    conclusion = f"{IRCOT_ANSWER_PHRASE} {answer}."
    if not search_format:
        return conclusion
    return f"Reasoning: {conclusion}\n{IRCOT_SEARCH_LABEL} {IRCOT_DONE}"


def _reasoning_steps(prompt: str) -> int:
    start = prompt.find(REASONING_SO_FAR_LABEL)
    if start < 0:
        return 0
    body = _until_section_end(prompt[start + len(REASONING_SO_FAR_LABEL):].split("\n\n", 1)[0])
    lines = [ln for ln in body.splitlines()
             if ln.strip() and ln.strip().lower() not in {"none", "(none)", "-", "n/a"}]
    return len(lines)


# --- BridgeRAG-style calls -------------------------------------------------------------


def _scores_reply(prompt: str) -> dict[str, object]:
    """Score 0-10: the share of the question's content words each candidate contains.

    A bridge-conditioned prompt (``Bridge entity N:`` lines, BridgeRAG's condition C)
    adds the entities' words to the question's, so the bridge visibly changes scores.
    """
    question_words = set(_content_words(_labelled_line(prompt, QUESTION_LABEL)))
    for match in _BRIDGE_ENTITY_LINE.finditer(prompt):
        question_words |= set(_content_words(match.group(1)))
    scores: dict[str, int] = {}
    for match in _CANDIDATE_LINE.finditer(prompt):
        words = set(_content_words(match.group(2)))
        share = len(words & question_words) / len(question_words) if question_words else 0.0
        scores[match.group(1).strip()] = round(10 * share)
    return {"scores": scores}


def _queries_reply(prompt: str) -> dict[str, object]:
    question = _labelled_line(prompt, QUESTION_LABEL)
    first, second = _entity_pair(prompt)
    queries = unique([question, f"{first} {question}".strip(), f"{first} {second}"])
    queries += [question] * (_QUERY_COUNT - len(queries))
    reply: dict[str, object] = {"queries": queries[:_QUERY_COUNT]}
    if STAGE1_ENTITIES_KEY in prompt:
        reply["entities"] = [first, second]
    return reply


def _entity_pair(prompt: str) -> tuple[str, str]:
    """A name from the question, then the context's leading name it does not mention."""
    question = _labelled_line(prompt, QUESTION_LABEL)
    in_question = capitalised_spans(question)
    in_context = _answer_candidates(_context(prompt), question)
    names = [*in_question[:1], *in_context[:1]] or [UNKNOWN_ANSWER]
    return names[0], names[-1]


# --- shared helpers -------------------------------------------------------------------


def _labelled_line(prompt: str, label: str) -> str:
    """The text after the last ``label``: the rest of its line, else the next non-empty one."""
    start = prompt.rfind(label)
    if start < 0:
        return ""
    for line in prompt[start + len(label):].splitlines():
        if line.strip():
            return line.strip()
    return ""


def _context(prompt: str) -> str:
    """Evidence after the first context label, up to the next instruction line."""
    starts = [(prompt.find(label), label) for label in CONTEXT_LABELS if label in prompt]
    if not starts:
        return ""
    start, label = min(starts)
    return _until_section_end(prompt[start + len(label):])


def _summary(text: str) -> str:
    """The first two sentences of the longest paragraph: the evidence, not the instructions."""
    paragraphs = [p for p in re.split(r"\n\s*\n", text) if p.strip()] or [""]
    longest = max(paragraphs, key=len)
    return " ".join(split_sentences(longest)[:2])


def _truncate(text: str, max_tokens: int | None) -> tuple[str, bool]:
    if max_tokens is None or estimate_tokens(text) <= max_tokens:
        return text, False
    keep = max(1, math.floor(max_tokens * 3 / 4))
    return " ".join(text.split()[:keep]), True


def _content_words(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if len(w) > 2 and w not in NOT_NAME_WORDS]


def _dumps(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)


# --- embeddings ------------------------------------------------------------------------


def embed_text(text: str, dimension: int) -> list[float]:
    """Hashed bag of words, unit norm: equal texts give equal vectors, shared words raise cosine."""
    vector = [0.0] * dimension
    words = _WORD.findall(text.lower()) or [""]
    for word in words:
        digest = hashlib.sha256(word.encode("utf-8")).digest()
        slot = int.from_bytes(digest[:8], "big") % dimension
        vector[slot] += 1.0 if digest[8] & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in vector))
    if norm == 0.0:
        # Signs cancelled out; fall back to the first word's slot so the vector stays unit norm.
        digest = hashlib.sha256(words[0].encode("utf-8")).digest()
        vector[int.from_bytes(digest[:8], "big") % dimension] = 1.0
        return vector
    return [v / norm for v in vector]


def encode_base64(vector: Sequence[float]) -> str:
    """OpenAI's ``encoding_format="base64"``: little-endian float32, what the client decodes."""
    return base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode("ascii")
