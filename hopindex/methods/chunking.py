"""Documents cut into chunks at sentence bounds, shared by the methods that chunk."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

from hopindex.core.citations import PassageCiter, section_breaks
from hopindex.core.ids import unit_id
from hopindex.core.models import Document, Sentence, Unit, UnitKind


@dataclass(frozen=True, slots=True)
class ChunkPolicy:
    """Documents above ~2,000 characters are cut, with 200 of overlap: the passages of
    the methods that keep passages (IndexRAG cuts only documents over its token limit)."""

    max_chars: int = 2000
    overlap_chars: int = 200


DEFAULT_POLICY = ChunkPolicy()


def chunk_text(text: str, sentences: tuple[Sentence, ...], policy: ChunkPolicy,
               breaks: Sequence[int] = ()) -> list[str]:
    """Split at sentence bounds into chunks of at most ``max_chars`` (a longer sentence
    is cut), each starting with up to ``overlap_chars`` of the previous chunk's end.

    ``breaks`` are offsets where a section starts (a structured file's subsections):
    a text that must be cut is cut there too, so no chunk spans two sections."""
    if len(text) <= policy.max_chars:
        return [text]
    if breaks:
        # A part that fits comes back whole, with the blank line before the next
        # section's heading: stripped here, as every cut chunk is.
        return [chunk.strip() for start, end in _segments(len(text), breaks)
                for chunk in chunk_text(text[start:end], _within(sentences, start, end),
                                        policy) if chunk.strip()]
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


def _segments(length: int, breaks: Sequence[int]) -> list[tuple[int, int]]:
    bounds = [0, *sorted(b for b in set(breaks) if 0 < b < length), length]
    return list(pairwise(bounds))


def _within(sentences: tuple[Sentence, ...], start: int, end: int) -> tuple[Sentence, ...]:
    """The sentences of ``[start, end)``, clipped to it and counted from ``start``."""
    return tuple(Sentence(max(s.start, start) - start, min(s.end, end) - start)
                 for s in sentences if s.end > start and s.start < end)


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
    breaks = section_breaks(document.metadata)
    if sentences:
        return chunk_text(text, sentences, policy, breaks)
    if breaks:
        return [chunk for start, end in _segments(len(text), breaks)
                for chunk in _windows(text[start:end], policy)]
    return _windows(text, policy)


def _windows(text: str, policy: ChunkPolicy) -> list[str]:
    """Overlapping character windows of ``text`` (whole when it fits)."""
    if len(text) <= policy.max_chars:
        return [text.strip()] if text.strip() else []
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
    citer = PassageCiter(document.metadata, document.text, document.title)
    for number, body in enumerate(bodies):
        text = f"{document.title}\n{body}" if document.title else body
        key = f"{document.doc_id}#{number}"
        units.append(Unit(unit_id=unit_id(document.index, UnitKind.PASSAGE, key, text),
                          index=document.index, kind=UnitKind.PASSAGE, text=text,
                          source_doc_ids=(document.doc_id,), method=method, source_key=key,
                          metadata={"title": document.title, "chunk": number,
                                    **citer.metadata_for(text)}))
    return units
