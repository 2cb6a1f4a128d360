"""The partitioned-KG prompts as ``ChatRequest`` builders: extraction and gleaning per
chunk, entity summaries and the document summary per document, and the same-entity
adjudication per candidate pair.

Layout matters beyond the model: evidence follows a label (``Passage:``, ``## Entity:``
blocks, ``Entity summaries:``, ``Entity A:``/``Entity B:`` blocks) and is followed by
a line starting ``Return``, so that readers of the prompt (the local test server
included) can tell evidence from instructions. Each prompt holds a marker of its own
(the JSON keys ``"relations"``, ``"summaries"`` and ``"same"``, ``GLEAN_MARKER`` and
``DOC_SUMMARY_MARKER``) that the test server classifies it by; the gleaning prompt
also holds ``"relations"``, so a reader must look for its marker first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hopindex.backends.llm.chat import ChatRequest, ResponseFormat
from hopindex.methods.kgbridge.shapes import ExtractionReply, VerdictReply

# Stage labels of the requests (the job records them all under the phase).
EXTRACT = "kgbridge.extract"
GLEAN = "kgbridge.glean"
ENTITY_SUMMARIES = "kgbridge.entity_summaries"
DOC_SUMMARY = "kgbridge.doc_summary"
ADJUDICATE = "kgbridge.adjudicate"

EXTRACT_MARKER = '"relations"'
GLEAN_MARKER = "entities the first reading missed"
SUMMARIES_MARKER = '"summaries"'
DOC_SUMMARY_MARKER = "Write the summary of the document"
ADJUDICATE_MARKER = '"same"'

TITLE_LABEL = "Title:"
PASSAGE_LABEL = "Passage:"
LISTED_LABEL = "Entities already listed:"
ENTITY_HEADER = "## Entity:"
ENTITY_SUMMARIES_LABEL = "Entity summaries:"
OPENING_LABEL = "Opening of the document:"
CLOSING = "Return only valid JSON without any other text."
TEXT_CLOSING = "Return only the summary, without any other text."

EXTRACT_INSTRUCTIONS = (
    "Extract the knowledge graph of the passage below: the named entities it mentions "
    "(people, places, organisations, works, events, products) and the relations it states "
    "between them.\n"
    "Instructions:\n"
    "- Name each entity by its most informative name in the passage, the same way every "
    "time it appears.\n"
    "- type: a short lower-case category such as person, place, organisation, work, event.\n"
    "- description: what the passage says about the entity, in one or two sentences.\n"
    "- A relation's source and target must be names from your entity list; relation is a "
    "short verb phrase.\n"
    'Reply with a JSON object of this shape: {"entities": [{"name": "...", "type": "...", '
    '"description": "..."}], "relations": [{"source": "...", "relation": "...", '
    '"target": "..."}]}'
)
GLEAN_INSTRUCTIONS = (
    "A first reading of the passage below listed the entities given before it. Read "
    f"the passage again and find the {GLEAN_MARKER}: named entities (people, "
    "places, organisations, works, events, products) that the passage mentions and the "
    "list lacks.\n"
    "Instructions:\n"
    "- Name, type and describe each one as the first reading would have; do not repeat "
    "a listed entity.\n"
    "- relations: the relations the passage states that involve an entity you found; "
    "source and target are names from your list or from the listed entities.\n"
    "- When nothing was missed, reply with empty lists.\n"
    'Reply with a JSON object of this shape: {"entities": [{"name": "...", "type": "...", '
    '"description": "..."}], "relations": [{"source": "...", "relation": "...", '
    '"target": "..."}]}'
)
SUMMARIES_INSTRUCTIONS = (
    "For each entity of the document below, write a summary of one to three sentences "
    "that says who or what it is, from its description and the triples that involve it. "
    "Keep what tells it apart from other entities of the same name (profession, dates, "
    "places, kind of thing).\n"
    "Reply with a JSON object mapping every entity name, exactly as given, to its "
    'summary: {"summaries": {"<entity name>": "<summary>"}}'
)
DOC_SUMMARY_INSTRUCTIONS = (
    f"{DOC_SUMMARY_MARKER} below in at most five sentences, from the summaries of its "
    "entities: what it is about, its main entities and how they relate."
)
DOC_SUMMARY_FALLBACK = (
    f"{DOC_SUMMARY_MARKER} below in at most five sentences, from its opening: what it is "
    "about."
)
ADJUDICATE_INSTRUCTIONS = (
    "Two documents each mention an entity of the same name. From the two entity "
    "summaries, decide whether they are the same real-world entity, not merely the same "
    "name: Apple the company is not apple the fruit, and two people can share a name.\n"
    'Reply with a JSON object: {"same": true or false, "score": a number from 0 '
    '(certainly different) to 10 (certainly the same), "reason": "one sentence"}'
)


@dataclass(frozen=True, slots=True)
class EntityBrief:
    """What the entity-summary prompt shows of one entity."""

    name: str
    type: str
    description: str
    triples: tuple[tuple[str, str, str], ...]  # (source name, relation, target name)


@dataclass(frozen=True, slots=True)
class PairSide:
    """One end of a candidate pair as the adjudication prompt shows it."""

    name: str
    title: str
    summary: str


# Departure from the paper (docs/methods.md, kgbridge): one call per chunk for entities and
# relations together (the published code makes an entity pass and a relation pass).
def extract_request(title: str, chunk: str) -> ChatRequest:
    user = (f"{EXTRACT_INSTRUCTIONS}\n\n{TITLE_LABEL} {_line(title)}\n"
            f"{PASSAGE_LABEL} {chunk.strip()}\n\n{CLOSING}")
    return ChatRequest(stage=EXTRACT, messages=(("user", user),), temperature=0.0,
                       response_format=ResponseFormat.JSON, shape=ExtractionReply)


# Departure from the paper (docs/methods.md, kgbridge): the paper does not glean; the published
# code gleans entities only, then extracts relations over the whole list: here the
# gleaning call returns the missed entities with their relations.
def glean_request(title: str, chunk: str, listed: Sequence[str]) -> ChatRequest:
    """The gleaning pass over one chunk: the entity names its extraction listed, and the
    passage again (the code published with the paper gleans after every extraction)."""
    names = "\n".join(f"- {_line(name)}" for name in listed) or "- (none)"
    user = (f"{GLEAN_INSTRUCTIONS}\n\n{TITLE_LABEL} {_line(title)}\n{LISTED_LABEL}\n{names}\n"
            f"{PASSAGE_LABEL} {chunk.strip()}\n\n{CLOSING}")
    return ChatRequest(stage=GLEAN, messages=(("user", user),), temperature=0.0,
                       response_format=ResponseFormat.JSON, shape=ExtractionReply)


# Departure from the paper (docs/methods.md, kgbridge): one call summarises all of a
# document's entities, where the paper calls f_sum once per entity.
def summaries_request(title: str, entities: Sequence[EntityBrief]) -> ChatRequest:
    """One call for every entity of a document: S_e = LLM(description, first-degree
    triples), batched so that calls grow with documents, not entities."""
    blocks = []
    for entity in entities:
        triples = "\n".join(f"- {s} | {r} | {t}" for s, r, t in entity.triples) or "- (none)"
        blocks.append(f"{ENTITY_HEADER} {_line(entity.name)}\nType: {_line(entity.type)}\n"
                      f"Description: {_line(entity.description)}\nTriples:\n{triples}")
    evidence = "\n\n".join(blocks)
    user = (f"{SUMMARIES_INSTRUCTIONS}\n\n{TITLE_LABEL} {_line(title)}\n\n{evidence}\n\n"
            f"{CLOSING}")
    # No shape: a strict schema cannot declare a map of free names (shapes.py).
    return ChatRequest(stage=ENTITY_SUMMARIES, messages=(("user", user),), temperature=0.0,
                       response_format=ResponseFormat.JSON)


def doc_summary_request(title: str, entity_texts: Sequence[str], opening: str) -> ChatRequest:
    """From the entity summaries (``<name> (<type>): <summary>``, most connected
    first); a document with no entity is summarised from ``opening`` instead."""
    if entity_texts:
        lines = "\n".join(f"- {_line(text)}" for text in entity_texts)
        body = f"{DOC_SUMMARY_INSTRUCTIONS}\n\n{TITLE_LABEL} {_line(title)}\n" \
               f"{ENTITY_SUMMARIES_LABEL}\n{lines}"
    else:
        body = f"{DOC_SUMMARY_FALLBACK}\n\n{TITLE_LABEL} {_line(title)}\n" \
               f"{OPENING_LABEL}\n{opening.strip()}"
    return ChatRequest(stage=DOC_SUMMARY, messages=(("user", f"{body}\n\n{TEXT_CLOSING}"),),
                       temperature=0.0)


def adjudicate_request(a: PairSide, b: PairSide) -> ChatRequest:
    """The ends in the order given: the caller orders them, so a pair always asks the
    same question (and hits the response cache)."""
    sides = "\n\n".join(f"Entity {label}: {_line(side.name)}\nFrom: {_line(side.title)}\n"
                        f"Summary: {_line(side.summary)}"
                        for label, side in (("A", a), ("B", b)))
    user = f"{ADJUDICATE_INSTRUCTIONS}\n\n{sides}\n\n{CLOSING}"
    return ChatRequest(stage=ADJUDICATE, messages=(("user", user),), temperature=0.0,
                       response_format=ResponseFormat.JSON, shape=VerdictReply)


def _line(text: str) -> str:
    return " ".join(text.split())
