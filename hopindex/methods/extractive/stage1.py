"""Stage 1 of ``extractive``: passages and entity mentions of one document, no LLM."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from hopindex.core.ids import unit_id
from hopindex.core.models import (
    Document,
    EntityMention,
    IndexMethod,
    MentionSource,
    Sentence,
    TextAnalysis,
    Unit,
    UnitKind,
)
from hopindex.core.text import keep_entity, normalize_entity, title_entity

# Numeric and temporal labels name values, not things two documents can share
# as a bridge (docs/methods.md, "Extractive bridges").
DROPPED_LABELS = frozenset({"DATE", "TIME", "CARDINAL", "ORDINAL", "QUANTITY", "PERCENT",
                            "MONEY"})
METHOD = IndexMethod.EXTRACTIVE.value


@dataclass(frozen=True, slots=True)
class ChunkPolicy:
    """IndexRAG chunks documents above ~2,000 characters with 200 of overlap."""

    max_chars: int = 2000
    overlap_chars: int = 200


@dataclass(frozen=True, slots=True)
class Stage1Output:
    units: list[Unit]
    mentions: list[EntityMention]


def extract_document(document: Document, analysis: TextAnalysis,
                     policy: ChunkPolicy = ChunkPolicy()) -> Stage1Output:
    return Stage1Output(units=passage_units(document, analysis, policy),
                        mentions=entity_mentions(document, analysis))


def entity_mentions(document: Document, analysis: TextAnalysis) -> list[EntityMention]:
    counts: Counter[str] = Counter()
    for span in analysis.entities:
        if span.label in DROPPED_LABELS:
            continue
        key = normalize_entity(span.text)
        if keep_entity(key):
            counts[key] += 1
    mentions = [EntityMention(entity=e, doc_id=document.doc_id, source=MentionSource.NER,
                              count=c) for e, c in sorted(counts.items())]
    own = title_entity(document.title)
    if keep_entity(own):
        mentions.append(EntityMention(entity=own, doc_id=document.doc_id,
                                      source=MentionSource.TITLE, count=1))
    return mentions


def passage_units(document: Document, analysis: TextAnalysis,
                  policy: ChunkPolicy = ChunkPolicy()) -> list[Unit]:
    units: list[Unit] = []
    for number, body in enumerate(chunk_text(document.text, analysis.sentences, policy)):
        text = f"{document.title}\n{body}" if document.title else body
        units.append(Unit(
            unit_id=unit_id(document.index, UnitKind.PASSAGE, f"{document.doc_id}#{number}",
                            text),
            index=document.index, kind=UnitKind.PASSAGE, text=text,
            source_doc_ids=(document.doc_id,), method=METHOD,
            source_key=f"{document.doc_id}#{number}",
            metadata={"title": document.title, "chunk": number},
        ))
    return units


def chunk_text(text: str, sentences: tuple[Sentence, ...], policy: ChunkPolicy) -> list[str]:
    """Split at sentence bounds into chunks of at most ``max_chars`` (a longer sentence
    is cut), each starting with up to ``overlap_chars`` of the previous chunk's end."""
    if len(text) <= policy.max_chars:
        return [text]
    bounds = [(s.start, s.end) for s in sentences] or [(0, len(text))]
    pieces: list[tuple[int, int]] = []
    for sentence_start, end in bounds:
        start = sentence_start
        while end - start > policy.max_chars:
            pieces.append((start, start + policy.max_chars))
            start += policy.max_chars
        pieces.append((start, end))
    chunks: list[str] = []
    chunk_start, chunk_end = pieces[0]
    for start, end in pieces[1:]:
        if end - chunk_start <= policy.max_chars:
            chunk_end = end
            continue
        chunks.append(text[chunk_start:chunk_end].strip())
        chunk_start = max(chunk_end - policy.overlap_chars, 0)
        # Overlap must not push the next chunk over the limit.
        chunk_start = max(chunk_start, end - policy.max_chars)
        chunk_start = min(chunk_start, start)
        chunk_end = end
    chunks.append(text[chunk_start:chunk_end].strip())
    return [c for c in chunks if c]
