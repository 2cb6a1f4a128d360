"""Documents cut into chunks at sentence bounds, shared by the methods that chunk."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hopindex.core.ids import unit_id
from hopindex.core.models import Document, Sentence, Unit, UnitKind


@dataclass(frozen=True, slots=True)
class ChunkPolicy:
    """Documents above ~2,000 characters are cut, with 200 of overlap: the passages of
    the methods that keep passages (IndexRAG cuts only documents over its token limit)."""

    max_chars: int = 2000
    overlap_chars: int = 200


DEFAULT_POLICY = ChunkPolicy()


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


def chunk_document(document: Document, sentences: tuple[Sentence, ...] = (),
                   policy: ChunkPolicy = DEFAULT_POLICY) -> list[str]:
    """Stage-1 inputs of a document: whole up to ``max_chars``, else overlapping chunks.

    With sentence bounds the chunks end at sentences (the extractive method's
    chunker); without, a plain character window keeps the 200-character overlap,
    which ``chunk_text`` would lose when it has no sentence bounds to work with.
    """
    text = document.text
    if len(text) <= policy.max_chars:
        return [text] if text.strip() else []
    if sentences:
        return chunk_text(text, sentences, policy)
    step = max(policy.max_chars - policy.overlap_chars, 1)
    chunks: list[str] = []
    for start in range(0, len(text), step):
        chunk = text[start:start + policy.max_chars].strip()
        if chunk:
            chunks.append(chunk)
        if start + policy.max_chars >= len(text):
            break
    return chunks


def passage_units(document: Document, bodies: Sequence[str], method: str) -> list[Unit]:
    """The document's chunks as ``method``'s passage units (title first, the
    gold-passage form), keyed by document and chunk number."""
    units = []
    for number, body in enumerate(bodies):
        text = f"{document.title}\n{body}" if document.title else body
        key = f"{document.doc_id}#{number}"
        units.append(Unit(unit_id=unit_id(document.index, UnitKind.PASSAGE, key, text),
                          index=document.index, kind=UnitKind.PASSAGE, text=text,
                          source_doc_ids=(document.doc_id,), method=method, source_key=key,
                          metadata={"title": document.title, "chunk": number}))
    return units
