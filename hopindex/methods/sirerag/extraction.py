"""How SiReRAG's documents phase gets a chunk's propositions: one call, or the paper's
three steps (``HOPINDEX_SIRERAG_EXTRACTION``).

``one_call`` (the default): one request per chunk asking for propositions with their
named entities (``prompts.propositions_request``).

``three_step``: the paper's extraction pipeline (Figs. 6-8, ``paper_prompts``), run in
three rounds over every pending chunk of the batch, each round's requests sent at once:

1. coreference rewriting of the chunk against the chunk before it (text reply);
2. the named entities of the rewritten chunk (Fig. 7);
3. the facts of the rewritten chunk with their triplets, given those entities (Fig. 8);
   a fact's entities are its triplets' ends that are on the list.

A step that fails for a chunk (a reply still unusable after its one repair, or an empty
rewrite) fails the chunk's document, named with the chunk and the step; its later
steps are not sent, and the other documents go on.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from hopindex.core.errors import HopindexError
from hopindex.core.models import Document
from hopindex.methods.plugin import PhaseContext
from hopindex.methods.sirerag.paper_prompts import (
    entities_request,
    facts_request,
    paragraph,
    rewrite_request,
)
from hopindex.methods.sirerag.parsing import (
    Proposition,
    facts_parser,
    parse_entities,
    parse_propositions,
    parse_rewrite,
)
from hopindex.methods.sirerag.prompts import propositions_request


class Extraction(enum.StrEnum):
    ONE_CALL = "one_call"
    THREE_STEP = "three_step"


# Requests per chunk, each answered at most twice (a repair or a larger-budget retry).
CALLS_PER_CHUNK = {Extraction.ONE_CALL: 1, Extraction.THREE_STEP: 3}

Chunk = tuple[str, int]  # (document id, chunk number)
T = TypeVar("T")


@dataclass(slots=True)
class Extracted:
    """Each document's propositions by chunk number, and why a document failed."""

    found: dict[str, dict[int, list[Proposition]]] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)

    def fail(self, chunk: Chunk, step: str, error: HopindexError) -> None:
        doc_id, number = chunk
        self.failures.setdefault(doc_id, f"chunk {number} ({step} step): {error}")

    def keep(self, step: str, chunks: Sequence[Chunk],
             outcomes: Sequence[T | HopindexError]) -> dict[Chunk, T]:
        """Each chunk's outcome of ``step``; a chunk whose call failed fails its
        document, named with the step."""
        kept: dict[Chunk, T] = {}
        for chunk, outcome in zip(chunks, outcomes, strict=True):
            if isinstance(outcome, HopindexError):
                self.fail(chunk, step, outcome)
            else:
                kept[chunk] = outcome
        return kept

    def add(self, kept: dict[Chunk, list[Proposition]]) -> None:
        for (doc_id, number), propositions in kept.items():
            self.found.setdefault(doc_id, {})[number] = propositions


def extract(context: PhaseContext, mode: Extraction, documents: Sequence[Document],
            bodies_of: dict[str, list[str]]) -> Extracted:
    """The propositions of every chunk of ``documents`` (``bodies_of``: their chunks)."""
    chunks = [(d.doc_id, n) for d in documents for n in range(len(bodies_of[d.doc_id]))]
    titles = {d.doc_id: d.title for d in documents}
    if mode is Extraction.ONE_CALL:
        return _one_call(context, chunks, titles, bodies_of)
    return _three_steps(context, chunks, titles, bodies_of)


def _one_call(context: PhaseContext, chunks: list[Chunk], titles: dict[str, str],
              bodies_of: dict[str, list[str]]) -> Extracted:
    requests = [propositions_request(titles[d], bodies_of[d][n]) for d, n in chunks]
    outcomes = (context.require_llm().complete_json_many(requests, parse_propositions,
                                                         context.usage) if requests else [])
    extracted = Extracted()
    extracted.add(extracted.keep("propositions", chunks, outcomes))
    return extracted


def _three_steps(context: PhaseContext, chunks: list[Chunk], titles: dict[str, str],
                 bodies_of: dict[str, list[str]]) -> Extracted:
    llm, usage, extracted = context.require_llm(), context.usage, Extracted()

    def text(chunk: Chunk, number: int) -> str:
        return paragraph(titles[chunk[0]], bodies_of[chunk[0]][number])

    # The chunk before, as written: every chunk's rewrite is asked at once, not one after
    # the other down a document (the paper does not say which version it shows).
    rewrites = llm.complete_text_many(
        [rewrite_request(text(c, c[1] - 1) if c[1] else "", text(c, c[1])) for c in chunks],
        parse_rewrite, usage) if chunks else []
    rewritten = extracted.keep("coreference", chunks, rewrites)
    # A document that failed is not asked more: its record is not written anyway.
    asked = [c for c in chunks if c in rewritten and c[0] not in extracted.failures]
    named = llm.complete_json_many([entities_request(rewritten[c]) for c in asked],
                                   parse_entities, usage) if asked else []
    entities = extracted.keep("entities", asked, named)
    asked = [c for c in asked if c in entities and c[0] not in extracted.failures]
    facts = llm.complete_json_many(
        [facts_request(rewritten[c], entities[c]) for c in asked],
        [facts_parser(entities[c]) for c in asked], usage) if asked else []
    extracted.add(extracted.keep("facts", asked, facts))
    return extracted
