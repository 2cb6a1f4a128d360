"""SiReRAG's two prompts as ``ChatRequest`` builders: propositions and cluster summaries.

Propositions follow the paper's proposition prompt (its Fig. 8) in one call: the paper
extracts entities first and then facts with semantic triplets, from which only the
facts and their entities are used, so here the model lists each proposition's named
entities directly. The summary prompt is the paper's (RAPTOR's: "summarize the provided
text, including as many key details as needed"), in the tree-summarisation layout the
authors' implementation sends it in.

Layout matters beyond the model: the passage follows ``Paragraph:`` and is followed by
a line starting ``Return``, and a cluster's texts sit between two rule lines, one
blank line apart, so that readers of the prompt (the local test server included) can
tell evidence from instructions.
"""

from __future__ import annotations

from collections.abc import Sequence

from hopindex.backends.llm.chat import ChatRequest, ResponseFormat
from hopindex.methods.sirerag.shapes import PropositionsReply

PROPOSITIONS = "sirerag.propositions"  # the phase names: LLM usage is recorded per phase
SUMMARIES = "sirerag.summaries"

PROPOSITIONS_INSTRUCTIONS = (
    "Extract all facts from the document as propositions. A proposition is a factual "
    "statement describing important information (preferably about some entities) from "
    "the paragraph. For each proposition, also list the named entities it mentions.\n"
    "Instructions:\n"
    "- Consistently use the most informative name for each named entity in all "
    "propositions.\n"
    "- Avoid pronouns or ambiguous references in propositions. Instead, directly include "
    "all relevant named entities in the propositions.\n"
    "- Each proposition must be self-contained and verifiable from the paragraph.\n"
    "- List only named entities (people, places, organisations, works, events, products), "
    "each under its most informative name. Never list a common noun as an entity: a "
    "proposition that names no entity gets an empty list.\n"
    'Reply with a JSON array of this shape: [{"proposition": "...", "entities": ["..."]}]\n'
    # JSON mode cannot return a bare array; parse_propositions accepts this wrapper.
    'Where only a JSON object is allowed, reply {"propositions": [...]} instead.'
)
PROPOSITIONS_LABEL = "Paragraph:"
PROPOSITIONS_CLOSING = "Return only valid JSON without any other text."

SUMMARY_QUERY = "Summarize the provided text, including as many key details as needed."
SUMMARY_OPENING = "Context information from multiple sources is below."
SUMMARY_RULE = "---------------------"
SUMMARY_CLOSING = ("Given the information from multiple sources and not prior knowledge, "
                   f"answer the query.\nQuery: {SUMMARY_QUERY}\nAnswer:")


def propositions_request(title: str, text: str) -> ChatRequest:
    """The proposition prompt for one passage; the title helps the model name subjects."""
    passage = f"{title}\n{text}" if title else text
    user = (f"{PROPOSITIONS_INSTRUCTIONS}\n\n{PROPOSITIONS_LABEL} {passage.strip()}\n\n"
            f"{PROPOSITIONS_CLOSING}")
    return ChatRequest(stage=PROPOSITIONS, messages=(("user", user),), temperature=0.0,
                       response_format=ResponseFormat.JSON, shape=PropositionsReply)


def summary_request(texts: Sequence[str]) -> ChatRequest:
    """The summary prompt over one cluster's texts (passages, aggregates or summaries),
    in the order given: the same cluster in the same order asks the same question."""
    evidence = "\n\n".join(text.strip() for text in texts if text.strip())
    user = (f"{SUMMARY_OPENING}\n{SUMMARY_RULE}\n{evidence}\n{SUMMARY_RULE}\n"
            f"{SUMMARY_CLOSING}")
    return ChatRequest(stage=SUMMARIES, messages=(("user", user),), temperature=0.0)
