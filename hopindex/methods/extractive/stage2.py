"""Stage 2 of ``extractive``: one cross-document bridge unit per bridge entity.

The unit is SiReRAG's proposition aggregate made across documents: up to
``max_docs`` documents, up to ``max_sentences`` sentences each that mention the
entity, as ``Title: sentences | Title: …``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from hopindex.core.ids import unit_id
from hopindex.core.models import Document, TextAnalysis, Unit, UnitKind
from hopindex.core.text import normalize_entity
from hopindex.methods.extractive.stage1 import METHOD


@dataclass(frozen=True, slots=True)
class BridgePolicy:
    tau: int = 10
    max_docs: int = 5
    max_sentences: int = 2


def mentioning_sentences(entity: str, document: Document, analysis: TextAnalysis) -> list[str]:
    found: list[str] = []
    for sentence in analysis.sentences:
        text = document.text[sentence.start:sentence.end].strip()
        if entity in text.lower() or entity in normalize_entity(text):
            found.append(text)
    return found


def build_bridge_unit(index: str, entity: str, documents: Sequence[Document],
                      analyses: Mapping[str, TextAnalysis], policy: BridgePolicy) -> Unit | None:
    """The bridge unit for ``entity`` over the documents that mention it, or None when
    fewer than two of them are available."""
    scored: list[tuple[int, str, Document, list[str]]] = []
    for document in documents:
        analysis = analyses.get(document.doc_id)
        if analysis is None:
            continue
        sentences = mentioning_sentences(entity, document, analysis)
        scored.append((-len(sentences), document.doc_id, document, sentences))
    if len(scored) < 2:
        return None
    scored.sort(key=lambda item: (item[0], item[1]))
    parts: list[str] = []
    sources: list[str] = []
    for _, doc_id, document, sentences in scored[: policy.max_docs]:
        chosen = sentences[: policy.max_sentences]
        if not chosen:
            # A title-only mention (the entity's own page): its opening sentence
            # says what the entity is, which is what a bridge needs.
            first = analyses[doc_id].sentences[:1]
            chosen = [document.text[s.start:s.end].strip() for s in first] or [document.text]
        parts.append(f"{document.title}: {' '.join(chosen)}")
        sources.append(doc_id)
    text = " | ".join(parts)
    return Unit(
        unit_id=unit_id(index, UnitKind.BRIDGE, entity, text), index=index,
        kind=UnitKind.BRIDGE, text=text, source_doc_ids=tuple(sources), method=METHOD,
        source_key=entity, entities=(entity,), metadata={"entity": entity},
    )
