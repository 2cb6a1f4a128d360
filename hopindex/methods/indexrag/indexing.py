"""IndexRAG's two LLM stages over a batch: AKUs per document, bridging facts per entity.

The runtime owns storage and job records; these functions own the calls. Every
request of a batch is sent concurrently through the runner (the rate limiter paces
them), and a request that fails for good fails only its document or entity.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hopindex.backends.llm.usage import UsageMeter
from hopindex.core.errors import HopindexError
from hopindex.core.models import Document, EntityMention, ItemError, MentionSource, Unit
from hopindex.methods.indexrag.parsing import DocFacts, ExtractedFacts, parse_stage1, parse_stage2
from hopindex.methods.indexrag.prompts import STAGE1, STAGE2, stage1_request, stage2_request
from hopindex.methods.indexrag.units import (
    aku_unit,
    bridge_units,
    document_entities,
    select_facts,
    stage1_inputs,
)

if TYPE_CHECKING:
    # Annotations only: the runner imports the openai SDK, which loading the method
    # (every CLI command loads the registry) must not pay for.
    from hopindex.backends.llm.runner import LlmRunner


@dataclass(frozen=True, slots=True)
class DocExtraction:
    """Stage 1 of one document: its AKU units and the filtered entities it mentions."""

    document: Document
    units: list[Unit]
    entities: frozenset[str]
    chunks: int

    def mentions(self) -> list[EntityMention]:
        return [EntityMention(entity=e, doc_id=self.document.doc_id, source=MentionSource.LLM)
                for e in sorted(self.entities)]


@dataclass(frozen=True, slots=True)
class BridgeOutcome:
    """Stage 2 of one entity: its units (none when the model found no real connection)."""

    entity: str
    units: list[Unit]
    source_doc_ids: tuple[str, ...]


def extract_documents(llm: LlmRunner, documents: Sequence[Document], usage: UsageMeter,
                      max_tokens: int) -> tuple[list[DocExtraction], list[ItemError]]:
    """One stage-1 call per document, whole up to ``max_tokens``; one per chunk of a
    longer one (``stage1_inputs``)."""
    requests = []
    owners: list[tuple[int, int]] = []  # (document position, chunk number)
    chunks_of: list[list[str]] = []
    for position, document in enumerate(documents):
        chunks = stage1_inputs(document, max_tokens)
        chunks_of.append(chunks)
        for number, chunk in enumerate(chunks):
            requests.append(stage1_request(document.title, chunk))
            owners.append((position, number))
    outcomes = llm.complete_json_many(requests, parse_stage1, usage)
    facts_of: list[dict[int, ExtractedFacts]] = [{} for _ in documents]
    failure_of: dict[int, str] = {}
    for (position, number), outcome in zip(owners, outcomes, strict=True):
        if isinstance(outcome, HopindexError):
            failure_of.setdefault(position, f"chunk {number}: {outcome}")
        else:
            facts_of[position][number] = outcome
    extractions: list[DocExtraction] = []
    errors: list[ItemError] = []
    for position, document in enumerate(documents):
        if position in failure_of:
            errors.append(ItemError(item=document.doc_id, stage=STAGE1,
                                    reason=f"LLM extraction failed at {failure_of[position]}"))
            continue
        facts = facts_of[position]
        units = [aku_unit(document, number, facts[number]) for number in sorted(facts)
                 if facts[number].qa_pairs]
        extractions.append(DocExtraction(
            document=document, units=units, chunks=len(chunks_of[position]),
            entities=frozenset(document_entities(facts[n] for n in sorted(facts)))))
    return extractions, errors


def plan_bridges(entities: Sequence[str], facts_of_entity: Mapping[str, Sequence[DocFacts]]
                 ) -> dict[str, list[DocFacts]]:
    """The evidence each entity's call will see; entities whose mentioning facts sit in
    fewer than two documents get no call, since no fact could combine two documents."""
    planned: dict[str, list[DocFacts]] = {}
    for entity in entities:
        selected = select_facts(entity, facts_of_entity.get(entity, ()))
        if len(selected) >= 2:
            planned[entity] = selected
    return planned


def write_bridging_facts(llm: LlmRunner, index: str, planned: Mapping[str, Sequence[DocFacts]],
                         usage: UsageMeter) -> tuple[list[BridgeOutcome], list[ItemError]]:
    """One stage-2 call per planned entity; each bridging fact becomes its own unit."""
    entities = sorted(planned)
    requests = [stage2_request(entity, planned[entity]) for entity in entities]
    outcomes = llm.complete_json_many(requests, parse_stage2, usage)
    results: list[BridgeOutcome] = []
    errors: list[ItemError] = []
    for entity, outcome in zip(entities, outcomes, strict=True):
        if isinstance(outcome, HopindexError):
            errors.append(ItemError(item=entity, stage=STAGE2,
                                    reason=f"LLM bridging facts failed: {outcome}"))
            continue
        sources = tuple(doc.doc_id for doc in planned[entity])
        results.append(BridgeOutcome(entity=entity, source_doc_ids=sources,
                                     units=bridge_units(index, entity, outcome, sources)))
    return results, errors
