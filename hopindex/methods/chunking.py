"""Documents cut into chunks at sentence bounds, shared by the methods that chunk."""

from __future__ import annotations

from dataclasses import dataclass

from hopindex.core.models import Sentence


@dataclass(frozen=True, slots=True)
class ChunkPolicy:
    """Documents above ~2,000 characters are cut, with 200 of overlap (IndexRAG's chunking)."""

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
