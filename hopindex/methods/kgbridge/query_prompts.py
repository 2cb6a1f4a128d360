"""The partitioned-KG query prompts as ``ChatRequest`` builders: the plan over the routed
documents, the sufficiency check of the reasoning loop, the refined query it leads to,
and the answer.

The context is one line per unit, ``[<doc id> | <what>] <text>`` (``what`` is
``summary``, ``passage`` or ``entity``), so that the model can tell which document
each fact comes from and the plan's ids match what it saw. Labels are lower-case so
that they read as structure, not as names. As in the index prompts, evidence follows a
label (``Question:``, ``## Document:`` blocks, ``Context:``) and JSON prompts close with
a line starting ``Return``; each JSON prompt holds a marker of its own (the keys
``"primary"`` and ``"sufficient"``) that the local test server classifies it by. The
answer prompt is the shared short-answer one (``Context:`` then ``Question:``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hopindex.backends.llm.chat import ChatRequest, ResponseFormat
from hopindex.methods.kgbridge.shapes import PlanShape, SufficiencyReply
from hopindex.methods.retrieval.answer import ANSWER_MAX_TOKENS, ANSWER_SYSTEM

# Stage labels of the requests (usage and the response cache key by them).
PLAN = "kgbridge.plan"
SUFFICIENCY = "kgbridge.sufficiency"
ANSWER = "kgbridge.answer"

PLAN_MARKER = '"primary"'
SUFFICIENCY_MARKER = '"sufficient"'

QUESTION_LABEL = "Question:"
DOCUMENT_HEADER = "## Document:"
CONTEXT_LABEL = "Context:"
FINDINGS_LABEL = "Findings so far:"
CLOSING = "Return only valid JSON without any other text."
NONE_LINE = "- (none)"

PLAN_INSTRUCTIONS = (
    "You plan how to answer a question from a collection of documents, each with a "
    "knowledge graph of its own. Below are the documents a routing step found for "
    "the question, each with its id, title, summary and core entities.\n"
    "- primary: the one or two documents most likely to hold the answer; their summary "
    "and best passages will be read.\n"
    "- auxiliary: other documents of which only some entities are needed (a bridge "
    "towards the answer, a fact to compare); name those entities as listed.\n"
    "Use only the document ids given below.\n"
    'Reply with a JSON object: {"primary": ["<document id>"], "auxiliary": '
    '[{"doc_id": "<document id>", "entities": ["<entity name>"]}], "reason": '
    '"one sentence"}'
)
SUFFICIENCY_INSTRUCTIONS = (
    "You answer a multi-hop question step by step from the context below, gathered from "
    "several documents; each line starts with the id of its document. Decide whether the "
    "context is sufficient to answer the question.\n"
    "- findings: what the context establishes towards the answer, in one or two "
    "sentences.\n"
    "- sub_question: when it is not sufficient, the one question whose answer is "
    "missing, to search for next; else an empty string.\n"
    'Reply with a JSON object: {"sufficient": true or false, "findings": "...", '
    '"sub_question": "..."}'
)


@dataclass(frozen=True, slots=True)
class DocBrief:
    """A routed document as the plan prompt shows it."""

    doc_id: str
    title: str
    summary: str
    core_entities: tuple[str, ...]  # names, most connected first


@dataclass(frozen=True, slots=True)
class ContextLine:
    doc_id: str
    what: str  # summary, passage or entity
    text: str


def plan_request(question: str, documents: Sequence[DocBrief]) -> ChatRequest:
    blocks = [f"{DOCUMENT_HEADER} {_line(d.doc_id)}\nTitle: {_line(d.title)}\n"
              f"Summary: {_line(d.summary) or '(none)'}\n"
              f"Core entities: {'; '.join(_line(n) for n in d.core_entities) or '(none)'}"
              for d in documents]
    user = (f"{PLAN_INSTRUCTIONS}\n\n{QUESTION_LABEL} {_line(question)}\n\n"
            + "\n\n".join(blocks) + f"\n\n{CLOSING}")
    return ChatRequest(stage=PLAN, messages=(("user", user),), temperature=0.0,
                       response_format=ResponseFormat.JSON, shape=PlanShape)


def sufficiency_request(question: str, context: Sequence[ContextLine],
                        findings: Sequence[str]) -> ChatRequest:
    user = (f"{SUFFICIENCY_INSTRUCTIONS}\n\n{QUESTION_LABEL} {_line(question)}\n\n"
            f"{FINDINGS_LABEL}\n{_findings(findings)}\n\n"
            f"{CONTEXT_LABEL}\n{context_text(context)}\n\n{CLOSING}")
    return ChatRequest(stage=SUFFICIENCY, messages=(("user", user),), temperature=0.0,
                       response_format=ResponseFormat.JSON, shape=SufficiencyReply)


def refined_query(findings: str, sub_question: str) -> str:
    """Q(t) = findings ⊕ sub-question (the paper's Eq. 11): what the context establishes
    so far, then what is missing, as one text to route and plan by."""
    return " ".join(part for part in (_line(findings), _line(sub_question)) if part)


def answer_request(question: str, context: Sequence[ContextLine],
                   findings: Sequence[str]) -> ChatRequest:
    """The shared short-answer prompt over the context, the loop's findings after it."""
    user = (f"{CONTEXT_LABEL}\n{context_text(context)}\n\n{FINDINGS_LABEL}\n"
            f"{_findings(findings)}\n{QUESTION_LABEL} {_line(question)}")
    return ChatRequest(stage=ANSWER, messages=(("system", ANSWER_SYSTEM), ("user", user)),
                       temperature=0.0, max_tokens=ANSWER_MAX_TOKENS)


def context_text(context: Sequence[ContextLine]) -> str:
    return "\n".join(f"[{_line(c.doc_id)} | {c.what}] {_line(c.text)}"
                     for c in context) or NONE_LINE


def _findings(findings: Sequence[str]) -> str:
    return "\n".join(f"- {_line(f)}" for f in findings if f.strip()) or NONE_LINE


def _line(text: str) -> str:
    return " ".join(text.split())
