"""IndexRAG's units: stage-1 inputs, AKU units, the entity filter, fact selection, bridges."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence

from hopindex.backends.llm.chat import CHARS_PER_TOKEN
from hopindex.core.ids import unit_id
from hopindex.core.models import Document, Unit, UnitKind
from hopindex.core.text import keep_entity, normalize_entity
from hopindex.methods.chunking import ChunkPolicy, chunk_document
from hopindex.methods.indexrag.parsing import DocFacts, ExtractedFacts, QaPair

METHOD = "indexrag"
MAX_DOCS_PER_ENTITY = 5
MAX_FACTS_PER_DOC = 8
# The query's retrieval: the paper's 20 candidates, and the page size when the
# balanced selection needs more of the ranking.
RETRIEVE_K = 20
# Overlap between the chunks of a document over the token limit, so a fact cut at a
# chunk's end is whole in the next one.
CHUNK_OVERLAP_CHARS = 200
# A limit below this would leave chunks hardly longer than their overlap.
MIN_DOCUMENT_TOKENS = 100


def stage1_inputs(document: Document, max_tokens: int) -> list[str]:
    """What stage 1 sends for ``document``: its whole text, as the paper does, when it
    fits ``max_tokens`` (estimated like the LLM client, ``CHARS_PER_TOKEN`` characters a
    token); else chunks of at most that size with ``CHUNK_OVERLAP_CHARS`` of overlap,
    so a document longer than the model's context still fits it (our departure).
    Ingest and the dry run both call this, so the planned calls are the sent ones."""
    policy = ChunkPolicy(max_chars=max_tokens * CHARS_PER_TOKEN,
                         overlap_chars=CHUNK_OVERLAP_CHARS)
    return chunk_document(document, policy=policy)


def filtered_entities(surfaces: Iterable[str]) -> list[str]:
    """IndexRAG's filter: normalised, at least 4 characters, no numbers or amounts."""
    keys = (normalize_entity(surface) for surface in surfaces)
    return sorted({key for key in keys if keep_entity(key)})


def aku_unit(document: Document, chunk_number: int, facts: ExtractedFacts) -> Unit:
    """One stage-1 input's AKU (the document's, or a chunk's of a document over the
    token limit): its answers joined by blank lines.

    The questions go to metadata, not the text: the paper indexes answers only, and
    questions would pull every query sharing their wording toward this unit. The
    metadata keeps the whole extraction (pairs with their entities), which is what
    stage 2 reads back, so no second store of facts can drift from the units. Callers
    skip chunks whose facts are empty (an empty text is not worth embedding).
    """
    text = "\n\n".join(pair.answer for pair in facts.qa_pairs)
    source_key = f"{document.doc_id}#{chunk_number}"
    return Unit(
        unit_id=unit_id(document.index, UnitKind.AKU, source_key, text),
        index=document.index, kind=UnitKind.AKU, text=text,
        source_doc_ids=(document.doc_id,), method=METHOD, source_key=source_key,
        entities=tuple(filtered_entities(_surfaces(facts))),
        metadata={"title": document.title, "chunk": chunk_number,
                  "questions": [pair.question for pair in facts.qa_pairs],
                  "qa_pairs": [[p.question, p.answer, list(p.entities)] for p in facts.qa_pairs],
                  "entities": list(facts.entities)},
    )


def doc_facts_from_units(units: Iterable[Unit]) -> dict[str, DocFacts]:
    """Each document's stage-1 facts, in chunk order, read back from its AKU units."""
    by_doc: dict[str, list[Unit]] = {}
    for unit in units:
        if unit.kind == UnitKind.AKU and unit.source_doc_ids:
            by_doc.setdefault(unit.source_doc_ids[0], []).append(unit)
    facts: dict[str, DocFacts] = {}
    for doc_id, doc_units in by_doc.items():
        doc_units.sort(key=lambda u: int(u.metadata.get("chunk", 0)))
        pairs = tuple(QaPair(question=str(q), answer=str(a), entities=tuple(map(str, e)))
                      for u in doc_units for q, a, e in u.metadata.get("qa_pairs", []))
        facts[doc_id] = DocFacts(doc_id=doc_id, title=str(doc_units[0].metadata.get("title", "")),
                                 qa_pairs=pairs)
    return facts


def document_entities(facts_per_chunk: Iterable[ExtractedFacts]) -> set[str]:
    """The filtered entity keys a document mentions: the basis of df(e)."""
    surfaces: list[str] = []
    for facts in facts_per_chunk:
        surfaces.extend(_surfaces(facts))
    return set(filtered_entities(surfaces))


def mentions(entity: str, pair: QaPair) -> bool:
    """A fact mentions ``entity`` (a normalised key) when its question or answer names it
    as whole words (``mention_pattern``) or its own entity list holds it."""
    pattern = mention_pattern(entity)
    if pattern.search(pair.question.lower()) or pattern.search(pair.answer.lower()):
        return True
    return any(normalize_entity(surface) == entity for surface in pair.entities)


@functools.lru_cache(maxsize=4096)
def mention_pattern(entity: str) -> re.Pattern[str]:
    """``entity`` as whole words: the paper matches facts by string, and a bare
    substring test lets "art" match inside "arthur". Each end of the key that is a
    word character (Unicode ``\\w``) must not touch another one in the text; an end
    that is punctuation ("a.c. milan" after normalisation keeps its inner dots, "guns
    n' roses" its apostrophe) needs no boundary, so such names still match themselves.
    Cached: stage 2 tests each entity against every fact of up to five documents."""
    before = r"(?<!\w)" if re.match(r"\w", entity[:1]) else ""
    after = r"(?!\w)" if re.match(r"\w", entity[-1:]) else ""
    return re.compile(before + re.escape(entity) + after)


def select_facts(entity: str, docs_facts: Sequence[DocFacts],
                 max_docs: int = MAX_DOCS_PER_ENTITY,
                 max_facts_per_doc: int = MAX_FACTS_PER_DOC) -> list[DocFacts]:
    """The stage-2 evidence of ``entity``: at most ``max_docs`` documents, those with the
    most mentioning facts (ties by doc id, so reruns send the same prompt), each cut to
    its first ``max_facts_per_doc`` mentioning facts. Documents without one are dropped."""
    candidates: list[tuple[int, str, DocFacts]] = []
    for doc in docs_facts:
        mentioning = tuple(pair for pair in doc.qa_pairs if mentions(entity, pair))
        if mentioning:
            candidates.append((len(mentioning), doc.doc_id,
                               DocFacts(doc.doc_id, doc.title, mentioning[:max_facts_per_doc])))
    candidates.sort(key=lambda item: (-item[0], item[1]))
    return [doc for _, _, doc in candidates[:max_docs]]


def bridge_units(index: str, entity: str, facts: Sequence[str],
                 source_doc_ids: Sequence[str]) -> list[Unit]:
    """One unit per bridging fact, ids fixed by entity, position and text (upserts)."""
    unique = list(dict.fromkeys(fact.strip() for fact in facts if fact.strip()))
    sources = tuple(sorted(set(source_doc_ids)))
    units: list[Unit] = []
    for number, text in enumerate(unique):
        source_key = f"{entity}#{number}"
        units.append(Unit(
            unit_id=unit_id(index, UnitKind.BRIDGE, source_key, text),
            index=index, kind=UnitKind.BRIDGE, text=text, source_doc_ids=sources,
            method=METHOD, source_key=source_key, entities=(entity,),
            metadata={"entity": entity},
        ))
    return units


def _surfaces(facts: ExtractedFacts) -> list[str]:
    surfaces = list(facts.entities)
    for pair in facts.qa_pairs:
        surfaces.extend(pair.entities)
    return surfaces
