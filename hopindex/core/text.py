"""Text utilities shared by stages and evaluation."""

from __future__ import annotations

import re
import unicodedata

_SPACE = re.compile(r"\s+")
_EDGE_PUNCT = " .,;:'\"()[]{}!?`"
_AMOUNT = re.compile(r"^[\d\s.,%$€£¥+\-/]+(?:\s*(?:k|m|bn|million|billion|percent))?$")
_TRAILING_QUALIFIER = re.compile(r"\s*\([^()]*\)\s*$")
_WORD = re.compile(r"\w+", re.UNICODE)

MIN_ENTITY_CHARS = 4


def normalize_entity(surface: str) -> str:
    """IndexRAG's entity key: lower-cased, stripped, spaces folded, leading article dropped."""
    text = unicodedata.normalize("NFKC", surface).lower()
    text = _SPACE.sub(" ", text).strip(_EDGE_PUNCT)
    text = re.sub(r"^the ", "", text)
    text = re.sub(r"['’]s$", "", text)  # noqa: RUF001  # the typographic apostrophe is meant
    return text.strip(_EDGE_PUNCT)


def keep_entity(entity: str) -> bool:
    """IndexRAG's entity filter: drop short keys, pure numbers and amounts."""
    return len(entity) >= MIN_ENTITY_CHARS and not _AMOUNT.fullmatch(entity)


def title_entity(title: str) -> str:
    """A title as an entity: its trailing disambiguation, e.g. ``(mythology)``, removed."""
    return normalize_entity(_TRAILING_QUALIFIER.sub("", title))


def word_tokens(text: str) -> list[str]:
    """Lower-cased word tokens, the unit of lexicon matching."""
    return _WORD.findall(unicodedata.normalize("NFKC", text).lower())
