"""The NLP analyses stage 1 keeps for stage 2, as the method's own records.

Each record names the text it describes by its content hash: an analysis of an
older text (its document changed and its new analysis failed) is not used. Records
carried over from stores older than method records have no hash; those stores
dropped an analysis whenever its document's text changed, so they are current.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hopindex.core.ids import content_hash
from hopindex.core.models import Document, EntitySpan, Sentence, TextAnalysis
from hopindex.methods.plugin import PhaseContext

ANALYSES = "extractive.analysis"
_CURRENT = object()


def encode_analysis(document: Document, analysis: TextAnalysis) -> dict[str, Any]:
    """Positional lists rather than objects: a paragraph has dozens of spans."""
    return {"hash": content_hash(document.title, document.text),
            "s": [[s.start, s.end] for s in analysis.sentences],
            "e": [[e.text, e.label, e.start, e.end] for e in analysis.entities]}


def decode_analysis(raw: dict[str, Any]) -> TextAnalysis:
    return TextAnalysis(
        sentences=tuple(Sentence(int(start), int(end)) for start, end in raw["s"]),
        entities=tuple(EntitySpan(str(text), str(label), int(start), int(end))
                       for text, label, start, end in raw["e"]))


def put_analyses(context: PhaseContext, documents: Sequence[Document],
                 analyses: dict[str, TextAnalysis]) -> None:
    context.state.put_records(context.index, ANALYSES, {
        d.doc_id: encode_analysis(d, analyses[d.doc_id]) for d in documents
        if d.doc_id in analyses})


def get_analyses(context: PhaseContext, documents: Sequence[Document]
                 ) -> dict[str, TextAnalysis]:
    """The analyses of ``documents`` that describe their current text."""
    records = context.state.get_records(context.index, ANALYSES, [d.doc_id for d in documents])
    found: dict[str, TextAnalysis] = {}
    for document in documents:
        raw = records.get(document.doc_id)
        if raw is None:
            continue
        if raw.get("hash", _CURRENT) in (_CURRENT, content_hash(document.title, document.text)):
            found[document.doc_id] = decode_analysis(raw)
    return found
