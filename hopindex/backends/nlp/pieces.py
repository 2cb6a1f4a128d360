"""Long texts cut into pieces for the NLP pipeline, and the pieces' findings put back together.

spaCy's memory grows with the length of the text it analyses at once, about 3 KB
per character: over one 1.9 MB text (about 400,000 tokens) the sentence and entity
pipeline added 5.8 GB and took 74 s, its time growing faster than the text. Cut into
pieces of 10,000 characters, at most 100,000 characters per call, it added 88 MB and
took 44 s, in proportion to the text (BENCHMARKS.md, "One long document").

A piece is the stretch of text it answers for (its *core*) with some *context* on
either side, which the models see but whose findings another piece reports. Cores
tile the text and end, by preference, after a blank line (which always starts a
sentence, so no sentence or entity runs across it), else after a sentence's final
punctuation, else at whitespace, else anywhere. The context is there because both
models read a few tokens either side of each token (a window of four in
en_core_web_sm): without it the first and last tokens of a core are seen in a
different neighbourhood than in the whole text, which moved about one entity per
25,000 characters at the cuts in the measurement above. With 200 characters of
context the findings are the whole text's: all 15,805 sentences and 57,883 entities
of that text, and those of the texts in ``tests/backends/test_spacy_pieces.py``.

What a piece reports: the sentences that start in its core and the entities that
start in its core (an entity running past the core's end is kept whole, as its
piece saw it). A sentence running across a cut is one sentence when both pieces see
it run across; when they disagree the cut is a sentence bound.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from hopindex.core.models import EntitySpan, Sentence, TextAnalysis

# Cut points, best first, each searched in the second half of the stretch a core may
# cover so that no core is shorter than half of it.
_CUTS = (
    re.compile(r"\n[^\S\n]*\n\s*"),         # after a blank line (and the blank run)
    re.compile(r"[.!?][\"')\]]*\s+"),        # after a sentence's final punctuation
    re.compile(r"\s+"),                      # at whitespace
)
_SPACE = re.compile(r"\s")


@dataclass(frozen=True, slots=True)
class Piece:
    """``text[start:end]`` is analysed; it answers for ``text[core_start:core_end]``."""

    start: int
    core_start: int
    core_end: int
    end: int

    @property
    def chars(self) -> int:
        return self.end - self.start


def plan_pieces(text: str, piece_chars: int, context_chars: int) -> list[Piece]:
    """The pieces of ``text``: one, the whole text, when it fits in ``piece_chars``;
    else cores of at most ``piece_chars`` with up to ``context_chars`` either side."""
    if len(text) <= piece_chars:
        return [Piece(0, 0, len(text), len(text))]
    cores: list[tuple[int, int]] = []
    start = 0
    while len(text) - start > piece_chars:
        end = _cut(text, start + piece_chars // 2, start + piece_chars)
        cores.append((start, end))
        start = end
    cores.append((start, len(text)))
    return [Piece(_context_start(text, core_start, context_chars), core_start, core_end,
                  _context_end(text, core_end, context_chars))
            for core_start, core_end in cores]


def _cut(text: str, earliest: int, latest: int) -> int:
    """Where the core ending between ``earliest`` and ``latest`` ends."""
    for pattern in _CUTS:
        last = _last_match(pattern, text, earliest, latest)
        if last is not None:
            return last.end()
    return latest


def _context_start(text: str, core_start: int, context_chars: int) -> int:
    """Up to ``context_chars`` before the core, beginning after whitespace so that no
    word is cut in two (a cut word would be a different token)."""
    if core_start == 0 or context_chars == 0:
        return core_start
    earliest = max(core_start - context_chars, 0)
    if earliest == 0:
        return 0
    found = _SPACE.search(text, earliest, core_start)
    return found.end() if found else core_start


def _context_end(text: str, core_end: int, context_chars: int) -> int:
    """Up to ``context_chars`` after the core, ending at whitespace."""
    latest = min(core_end + context_chars, len(text))
    if latest == len(text) or context_chars == 0:
        return latest
    last = _last_match(_SPACE, text, core_end, latest)
    return last.start() if last else core_end


def _last_match(pattern: re.Pattern[str], text: str, start: int, end: int
                ) -> re.Match[str] | None:
    found = deque(pattern.finditer(text, start, end), maxlen=1)
    return found[0] if found else None


def batches(sizes: Sequence[int], max_items: int, max_chars: int) -> Iterator[range]:
    """Consecutive runs of items, each of at most ``max_items`` items and, unless one
    item alone is longer, ``max_chars`` characters: the pipeline's memory grows with
    the characters it holds at once."""
    start = chars = 0
    for number, size in enumerate(sizes):
        if number > start and (number - start >= max_items or chars + size > max_chars):
            yield range(start, number)
            start, chars = number, 0
        chars += size
    if start < len(sizes):
        yield range(start, len(sizes))


def merge_analyses(text: str, pieces: Sequence[Piece],
                   analyses: Iterable[TextAnalysis]) -> TextAnalysis:
    """One analysis of ``text`` from its pieces' (offsets into each piece's text)."""
    sentences: list[Sentence] = []
    entities: list[EntitySpan] = []
    runs_on = False  # whether the previous piece's last sentence ran past its core
    for piece, analysis in zip(pieces, analyses, strict=True):
        shift = piece.start
        first, last_runs_on = True, False
        for local in analysis.sentences:
            start, end = local.start + shift, local.end + shift
            if end <= piece.core_start or start >= piece.core_end:
                continue
            clipped = _trimmed(text, max(start, piece.core_start), min(end, piece.core_end))
            if clipped is None:
                continue
            if first and runs_on and start < piece.core_start:
                sentences[-1] = Sentence(sentences[-1].start, clipped[1])
            else:
                sentences.append(Sentence(*clipped))
            first, last_runs_on = False, end > piece.core_end
        runs_on = last_runs_on
        entities.extend(
            EntitySpan(e.text, e.label, e.start + shift, e.end + shift)
            for e in analysis.entities
            if piece.core_start <= e.start + shift < piece.core_end)
    return TextAnalysis(sentences=tuple(sentences), entities=tuple(entities))


def _trimmed(text: str, start: int, end: int) -> tuple[int, int] | None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end) if start < end else None
