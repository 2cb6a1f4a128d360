"""Text utilities shared by stages and evaluation, and the check of what a store can keep."""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

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


# Deeper metadata is refused: the JSON encoders recurse once per level, and no
# document needs more than a few.
MAX_METADATA_DEPTH = 64

# The default limit on one document's UTF-8 text (HOPINDEX_MAX_DOCUMENT_BYTES): a book
# or a long PDF's text. Why this much is safe: the comment on Settings.max_document_bytes.
DEFAULT_MAX_DOCUMENT_BYTES = 20_000_000
_JSON_SCALARS = (str, int, float, bool, type(None))
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True, slots=True)
class UnstorableField:
    """A field of a record that no store can keep, and why (see :func:`unstorable_field`)."""

    field: str  # a path such as ``title``, ``metadata.author`` or ``metadata.tags[1]``
    reason: str

    def __str__(self) -> str:
        return f"field '{self.field}' {self.reason}"


def printable(text: str) -> str:
    """``text`` with unpaired surrogates written as ``\\udXXX`` escapes, so that a name
    taken from bad input can go into a message, a log line or a job record."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def surrogate_at(text: str) -> int | None:
    """Where ``text`` holds an unpaired surrogate (which UTF-8 cannot encode), if it does."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return exc.start
    return None


def key_path(parent: str, key: object) -> str:
    """``parent.key``; a key that is not a plain name is written as JSON (ASCII escapes),
    ``parent["a b"]``, so the path itself is always storable."""
    if isinstance(key, str) and _NAME.fullmatch(key):
        return f"{parent}.{key}" if parent else key
    return f"{parent}[{json.dumps(key if isinstance(key, str) else str(key))}]"


def unstorable_field(fields: Iterable[tuple[str, object]]) -> UnstorableField | None:
    """The first of ``fields`` (name, value) that cannot be stored as UTF-8 JSON, at any
    depth: an unpaired surrogate in a string or a key (JSON allows ``"\\ud800"``, UTF-8
    does not), a value JSON has no type for, or nesting deeper than MAX_METADATA_DEPTH.

    A name of ``""`` stands for a whole record, whose keys are the fields' names. One
    check for every path that builds documents (readers, ``validate_documents``), so
    a bad record fails alone instead of failing the write of its whole job.
    """
    for name, value in fields:
        # Depth-first without recursion: nesting is bounded here, not by the stack.
        pending: list[tuple[str, object, int]] = [(name, value, 0)]
        while pending:
            path, item, depth = pending.pop()
            found = _unstorable_value(path, item, depth)
            if found is not None:
                return found
            if isinstance(item, dict):
                children = [(key_path(path, k), v) for k, v in item.items()]
            elif isinstance(item, list | tuple):
                children = [(f"{path}[{i}]", v) for i, v in enumerate(item)]
            else:
                continue
            pending.extend((p, v, depth + 1) for p, v in reversed(children))
    return None


def _unstorable_value(path: str, value: object, depth: int) -> UnstorableField | None:
    if isinstance(value, str):
        return _unstorable_string(path, value)
    if isinstance(value, dict | list | tuple):
        return _unstorable_container(path, value, depth)
    if isinstance(value, _JSON_SCALARS):
        return None
    return UnstorableField(path, f"holds a {type(value).__name__}, which is not a JSON value "
                                 "(string, number, boolean, null, array or object)")


def _unstorable_string(path: str, value: str) -> UnstorableField | None:
    at = surrogate_at(value)
    if at is None:
        return None
    return UnstorableField(path, f"holds an unpaired surrogate (U+{ord(value[at]):04X}) at "
                                 f"character {at}, which is not valid Unicode text")


def _unstorable_container(path: str, value: dict[Any, Any] | list[Any] | tuple[Any, ...],
                          depth: int) -> UnstorableField | None:
    if depth >= MAX_METADATA_DEPTH:
        return UnstorableField(path, f"is nested deeper than {MAX_METADATA_DEPTH} levels")
    if not isinstance(value, dict):
        return None
    for key in value:
        if not isinstance(key, _JSON_SCALARS):
            return UnstorableField(path, f"has a key of type {type(key).__name__}; keys must "
                                         "be strings")
        if isinstance(key, str) and surrogate_at(key) is not None:
            return UnstorableField(key_path(path, key), "is a key holding an unpaired "
                                                         "surrogate, which is not valid "
                                                         "Unicode text")
    return None
