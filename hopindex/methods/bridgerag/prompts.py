"""BridgeRAG's prompts (paper Appendices A-C) as ``ChatRequest`` builders.

The wording follows the paper. The layout is hopindex's convention: labelled inputs
first (``Question:``, ``Bridge:``), then instructions starting with ``Return``, so a
reader of the prompt (the local test server included) can tell evidence from
instructions. Every passage is put on one line and cut to ``passage_chars``.
"""

from __future__ import annotations

from collections.abc import Sequence

from hopindex.backends.llm.chat import ChatRequest, ResponseFormat
from hopindex.methods.bridgerag.shapes import ExtractReply, SvoReply, judge_shape

SVO_STAGE = "svo"
ENTITIES_STAGE = "entities"
EXTRACT_STAGE = "svo_entities"
JUDGE_STAGE = "judge"
QUERY_COUNT = 3
# The paper's entity replies take ~15 tokens; 40 holds two entities of six words each
# while a reply that rambles instead is cut short (departure: the paper sets no cap).
ENTITIES_MAX_TOKENS = 40

SVO_SYSTEM = "You generate targeted retrieval queries for multi-hop QA."
SVO_INSTRUCTIONS = (
    f"Return exactly {QUERY_COUNT} targeted queries in Subject-Verb-Object form to retrieve "
    "the second supporting passage. Output JSON: "
    '{"queries": ["...", "...", "..."]}')
ENTITIES_INSTRUCTIONS = (
    "Return the TWO most relevant answer-side entities needed to answer the question: the "
    "bridge passage establishes a key intermediate entity.\n"
    'Reply with ONLY two short entities (1-6 words each) separated by " | ", in the form '
    'e1 | e2 (e.g. "Westminster | 1975" or "Michael Curtiz | Edith Carlmar"). No other '
    'text. If only one entity exists, repeat it: "entity1 | entity1".')
EXTRACT_INSTRUCTIONS = (
    f"Return exactly {QUERY_COUNT} targeted queries in Subject-Verb-Object form to retrieve "
    "the second supporting passage, and the TWO most relevant answer-side entities needed "
    "to answer the question (1-6 words each; the bridge passage establishes a key "
    "intermediate entity; repeat it when only one exists). Output JSON: "
    '{"queries": ["...", "...", "..."], "entities": ["...", "..."]}')
JUDGE_SYSTEM = (
    "You are a retrieval judge for multi-hop QA. Given a query, a bridge passage, and "
    "candidate passages, score each candidate from 0 to 10 for whether it is the next "
    "supporting passage needed to answer the query, given the bridge context.")
JUDGE_SYSTEM_NO_BRIDGE = (
    "You are a retrieval judge for multi-hop QA. Given a query and candidate passages, "
    "score each candidate from 0 to 10 for whether it is a supporting passage needed to "
    "answer the query.")
# The paper's batched judge returns "one JSON array per call"; an object keyed by
# candidate number (departure) says which score is whose even when the model skips
# or reorders candidates. The parser still reads a bare array, in candidate order.
JUDGE_INSTRUCTIONS = (
    "Return a JSON object with a score from 0 to 10 for every candidate, keyed by its "
    'number: {"scores": {"1": 7, "2": 0, ...}}')


def _one_line(text: str) -> str:
    return " ".join(text.split())


def cut(text: str, limit: int) -> str:
    """``text`` on one line, at most ``limit`` characters (an ellipsis marks a cut)."""
    line = _one_line(text)
    if len(line) <= limit:
        return line
    return line[: limit - 1].rstrip() + "\u2026"


def svo_request(question: str, bridge: str) -> ChatRequest:
    """Appendix B: three SVO queries from the question and the bridge passage."""
    user = f"Question: {cut(question, 2000)}\nBridge: {_one_line(bridge)}\n\n{SVO_INSTRUCTIONS}"
    return ChatRequest(stage=SVO_STAGE, messages=(("system", SVO_SYSTEM), ("user", user)),
                       temperature=0.0, response_format=ResponseFormat.JSON, shape=SvoReply)


def entities_request(question: str, bridge: str) -> ChatRequest:
    """Appendix C: two entities as ``e1 | e2``, free text."""
    user = (f"Question: {cut(question, 2000)}\n\nBridge: {_one_line(bridge)}\n\n"
            f"{ENTITIES_INSTRUCTIONS}")
    return ChatRequest(stage=ENTITIES_STAGE, messages=(("user", user),), temperature=0.0,
                       max_tokens=ENTITIES_MAX_TOKENS)


def extract_request(question: str, bridge: str) -> ChatRequest:
    """Beyond the paper: Appendices B and C read the same inputs, so one call returns both."""
    user = (f"Question: {cut(question, 2000)}\nBridge: {_one_line(bridge)}\n\n"
            f"{EXTRACT_INSTRUCTIONS}")
    return ChatRequest(stage=EXTRACT_STAGE, messages=(("system", SVO_SYSTEM), ("user", user)),
                       temperature=0.0, response_format=ResponseFormat.JSON,
                       shape=ExtractReply)


def judge_request(question: str, bridges: Sequence[str], entities: Sequence[str],
                  candidates: Sequence[str]) -> ChatRequest:
    """Appendix A, batched: one prompt numbers every candidate ``[1]``..``[n]``.

    No bridges means condition B, s(q, c): the 2-way judge sees neither the bridge nor
    the entities. Two bridges are shown as ``Bridge 1:`` and ``Bridge 2:``.
    """
    lines = [f"Question: {cut(question, 2000)}"]
    if bridges:
        lines += [f"Bridge entity {i}: {cut(e, 200)}" for i, e in enumerate(entities, start=1)]
        if len(bridges) == 1:
            lines.append(f"Bridge: {_one_line(bridges[0])}")
        else:
            lines += [f"Bridge {i}: {_one_line(b)}" for i, b in enumerate(bridges, start=1)]
    lines.append("Candidates:")
    # One line each: a candidate's own line break would read as the next candidate.
    lines += [f"[{i}] {_one_line(c)}" for i, c in enumerate(candidates, start=1)]
    user = "\n".join(lines) + f"\n\n{JUDGE_INSTRUCTIONS}"
    system = JUDGE_SYSTEM if bridges else JUDGE_SYSTEM_NO_BRIDGE
    return ChatRequest(stage=JUDGE_STAGE, messages=(("system", system), ("user", user)),
                       temperature=0.0, response_format=ResponseFormat.JSON,
                       shape=judge_shape(len(candidates)))
