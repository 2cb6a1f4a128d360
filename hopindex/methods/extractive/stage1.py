"""Stage 1 of ``extractive``: passages and entity mentions of one document, no LLM."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from hopindex.core.citations import PassageCiter, section_breaks
from hopindex.core.ids import unit_id
from hopindex.core.models import (
    Document,
    EntityMention,
    MentionSource,
    TextAnalysis,
    Unit,
    UnitKind,
)
from hopindex.core.text import keep_entity, normalize_entity, title_entity
from hopindex.methods.chunking import DEFAULT_POLICY, ChunkPolicy, chunk_text

# Numeric and temporal labels name values, not things two documents can share
# as a bridge (docs/methods.md, "Extractive bridges").
DROPPED_LABELS = frozenset({"DATE", "TIME", "CARDINAL", "ORDINAL", "QUANTITY", "PERCENT",
                            "MONEY"})
METHOD = "extractive"


@dataclass(frozen=True, slots=True)
class Stage1Output:
    units: list[Unit]
    mentions: list[EntityMention]


def extract_document(document: Document, analysis: TextAnalysis,
                     policy: ChunkPolicy = DEFAULT_POLICY) -> Stage1Output:
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
                  policy: ChunkPolicy = DEFAULT_POLICY) -> list[Unit]:
    units: list[Unit] = []
    breaks = section_breaks(document.metadata)
    citer = PassageCiter(document.metadata, document.text, document.title)
    for number, body in enumerate(chunk_text(document.text, analysis.sentences, policy,
                                             breaks)):
        text = f"{document.title}\n{body}" if document.title else body
        units.append(Unit(
            unit_id=unit_id(document.index, UnitKind.PASSAGE, f"{document.doc_id}#{number}",
                            text),
            index=document.index, kind=UnitKind.PASSAGE, text=text,
            source_doc_ids=(document.doc_id,), method=METHOD,
            source_key=f"{document.doc_id}#{number}",
            metadata={"title": document.title, "chunk": number,
                      **citer.metadata_for(text)},
        ))
    return units
