"""IndexRAG's prompts (paper Figs. 4, 6, 7) as ``ChatRequest`` builders.

The wording follows the paper; the additions say which JSON shape to return. Layout
matters beyond the model: the passage or sections come after their labels and the
instructions that follow start with ``Requirements:``/``Return `` so that readers of
the prompt (the local test server included) can tell evidence from instructions.
"""

from __future__ import annotations

from collections.abc import Sequence

from hopindex.backends.llm.chat import ChatRequest, ResponseFormat
from hopindex.methods.indexrag.parsing import DocFacts
from hopindex.methods.indexrag.shapes import Stage1Reply, Stage2Reply

STAGE1 = "indexrag.stage1"  # the phase names: LLM usage is recorded per phase
STAGE2 = "indexrag.stage2"

STAGE1_SYSTEM = ("You are an expert information extractor specializing in converting "
                 "unstructured documents into clear, atomic question-answer pairs.")
# Fig. 4's wording, plus three additions of ours: "Use full names, never pronouns"
# (an AKU is read without its document), the entity list the paper's Stage 1 returns
# but Fig. 4 does not ask for, and the JSON shape to return.
STAGE1_INSTRUCTIONS = (
    "Extract ALL factual information from the following document as question-answer "
    "pairs. Each pair must answer exactly one question, be self-contained, and be "
    "verifiable from the source content. Extract questions for facts, descriptions, "
    "properties, relationships, and events. For each entity mentioned, also extract "
    "questions about its relationships to other entities. Use full names, never pronouns.\n"
    "Also list every named entity (people, places, organisations, works, events) the "
    "document mentions.\n"
    'Reply with a JSON object of this shape: {"qa_pairs": [{"question": "...", '
    '"answer": "..."}], "entities": ["..."]}'
)
STAGE1_CLOSING = "Return only a valid JSON object without any other text."

STAGE2_OPENING = ('Given the following information about "{entity}" from multiple source '
                  "documents, generate bridging facts that connect information across "
                  "these documents.")
STAGE2_REQUIREMENTS = (
    "Requirements:\n"
    "- Each bridging fact must combine information from 2+ documents\n"
    "- Be factually accurate \u2014 only connect information that is logically related\n"
    "- Each fact should be self-contained and understandable without context\n"
    "- Do not generate speculative connections\n"
    "- If documents share the entity name but are about unrelated topics, return empty\n"
    "Return a JSON array of strings. If no meaningful connections exist, return [].\n"
    # JSON mode cannot return a bare array; parse_stage2 accepts this wrapper.
    'Return, where only a JSON object is allowed, {"bridging_facts": [...]} instead.'
)

def stage1_request(title: str, text: str) -> ChatRequest:
    """Fig. 4 for one document (or chunk of a long one). Fig. 4 sends the text alone;
    the title is our addition: it helps the model name subjects instead of 'it'."""
    passage = f"{title}\n{text}" if title else text
    user = f"{STAGE1_INSTRUCTIONS}\n\nDocument: {passage}\n\n{STAGE1_CLOSING}"
    return ChatRequest(stage=STAGE1, messages=(("system", STAGE1_SYSTEM), ("user", user)),
                       temperature=0.0, response_format=ResponseFormat.JSON,
                       shape=Stage1Reply)


def format_sections(docs: Sequence[DocFacts]) -> str:
    """Fig. 6's ``{doc_sections}``: one ``=== Document: {title} ===`` block per document."""
    blocks: list[str] = []
    for doc in docs:
        lines = [f"=== Document: {_one_line(doc.title or doc.doc_id)} ==="]
        lines += [f"Q: {_one_line(p.question)} A: {_one_line(p.answer)}" for p in doc.qa_pairs]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def stage2_request(entity: str, docs: Sequence[DocFacts]) -> ChatRequest:
    """Fig. 6 for one bridge entity over its selected documents' facts."""
    user = (f"{STAGE2_OPENING.format(entity=_one_line(entity))}\n\n{format_sections(docs)}"
            f"\n\n{STAGE2_REQUIREMENTS}")
    return ChatRequest(stage=STAGE2, messages=(("user", user),), temperature=0.0,
                       response_format=ResponseFormat.JSON, shape=Stage2Reply)


def _one_line(text: str) -> str:
    # A newline inside a title or fact would break the section / Q-A line structure.
    return " ".join(text.split())
