"""Text helpers of the test LLM: sentences, capitalised names, order-keeping de-duplication.

Every deterministic reply is built from these, so that replies to different prompts
about the same passage agree (the same sentences, the same names).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"“(]?[A-Z0-9])")
_CAPITALISED_SPAN = re.compile(
    r"\b[A-Z][\w'’-]*(?:[ \t]+(?:(?:of|the|de|von|van|and|du|la)[ \t]+)?[A-Z][\w'’-]*)*")  # noqa: RUF001
# Capitalised only because they start a sentence or an instruction, not names.
NOT_NAME_WORDS = frozenset({
    "a", "an", "the", "he", "she", "it", "they", "we", "you", "i", "his", "her", "its", "their",
    "our", "your", "this", "that", "these", "those", "there", "here", "in", "on", "at", "by",
    "for", "from", "with", "of", "to", "as", "and", "or", "but", "if", "when", "where", "who",
    "what", "which", "why", "how", "yes", "no", "q", "answer", "question", "context",
    "document", "title", "return", "given", "reasoning", "search", "retrieved", "information",
    "write", "format", "extract", "each", "be", "do", "not", "only", "so", "after", "before",
    "during",
})
_MIN_SENTENCE_WORDS = 3
_MAX_SENTENCE_CHARS = 300


def split_sentences(text: str) -> list[str]:
    """Sentences of at least three words; a title line alone is not a fact."""
    sentences: list[str] = []
    for line in text.splitlines():
        for piece in _SENTENCE_END.split(line.strip()):
            sentence = " ".join(piece.split())
            if len(sentence.split()) >= _MIN_SENTENCE_WORDS:
                sentences.append(sentence[:_MAX_SENTENCE_CHARS])
    if not sentences and text.strip():
        sentences.append(" ".join(text.split())[:_MAX_SENTENCE_CHARS])
    return sentences


def capitalised_spans(text: str) -> list[str]:
    """Runs of capitalised words, in order, with sentence-initial function words dropped."""
    spans: list[str] = []
    for match in _CAPITALISED_SPAN.finditer(text):
        words = match.group(0).rstrip("’'").split()  # noqa: RUF001
        while words and words[0].lower().strip(".") in NOT_NAME_WORDS:
            words = words[1:]
        while words and words[-1].lower() in NOT_NAME_WORDS:
            words = words[:-1]
        span = " ".join(words)
        if len(span) > 1:
            spans.append(span)
    return spans


def unique(items: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(item for item in items if item))
