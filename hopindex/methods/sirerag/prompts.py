"""SiReRAG's prompts as ``ChatRequest`` builders: one-call propositions, cluster
summaries and the answer.

The one-call proposition prompt is hopindex's own, not the paper's: the paper rewrites
a chunk resolving coreferences, extracts its entities, then its facts with semantic
triplets (Figs. 6-8, ``paper_prompts``, ``HOPINDEX_SIRERAG_EXTRACTION=three_step``),
and uses only the facts and their entities. This prompt asks for those in one call,
borrowing Fig. 8's definition of a fact and its instructions on names; the model lists
each proposition's named entities directly instead of writing triplets. The summary
prompt is the paper's (RAPTOR's: "summarize the provided text, including as many key
details as needed"), in the tree-summarisation layout the authors' implementation
sends it in. The answer prompt is the paper's (the same for every method it compares),
appended to the question as the authors' code does.

Layout matters beyond the model: the passage follows ``Paragraph:`` and is followed by
a line starting ``Return``, and a cluster's texts sit between two rule lines, one
blank line apart, so that readers of the prompt (the local test server included) can
tell evidence from instructions.
"""

from __future__ import annotations

from collections.abc import Sequence

from hopindex.backends.llm.chat import ChatRequest, ResponseFormat
from hopindex.methods.retrieval.answer import ANSWER, ANSWER_MAX_TOKENS
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


# The paper's answer instruction, word for word (its "fewer" included), capitalised as
# the authors' code appends it to each question.
PAPER_ANSWER_INSTRUCTION = "Answer this question in as fewer number of words as possible."


def paper_answer_request(question: str, contexts: Sequence[str]) -> ChatRequest:
    """The paper's answer call over the retrieved nodes' texts: the question with the
    paper's instruction after it, no system prompt; temperature 0 (the authors'), at most
    ``ANSWER_MAX_TOKENS`` tokens (a bound on cost the paper does not set)."""
    context = "\n\n".join(c.strip() for c in contexts if c.strip())
    # A newline inside the question would break the prompt's two-line structure.
    asked = " ".join(question.split())
    user = f"Context: {context}\nQuestion: {asked} {PAPER_ANSWER_INSTRUCTION}"
    return ChatRequest(stage=ANSWER, messages=(("user", user),), temperature=0.0,
                       max_tokens=ANSWER_MAX_TOKENS)
