"""The types every reader shares, and the one place a record becomes a RawDocument.

Readers never raise for bad input: each problem becomes a ``ReadError`` naming
where it is, and reading goes on, so one bad line never costs a whole corpus.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from io import BufferedIOBase
from pathlib import Path
from typing import Any

from hopindex.core.json_input import JsonInputError, JsonLimits
from hopindex.core.text import DEFAULT_MAX_DOCUMENT_BYTES, MAX_METADATA_DEPTH
from hopindex.readers.compression import Compression, open_binary
from hopindex.readers.options import FileLimits, Reading

UTF8_BOM = b"\xef\xbb\xbf"

# Keys that carry the user's id, in order of preference.
ID_KEYS = ("id", "_id", "doc_id")
# ``paragraph_text`` is MuSiQue's name for the body; ``text`` wins when both are present.
TEXT_KEYS = ("text", "paragraph_text")
_KNOWN_KEYS = frozenset((*ID_KEYS, *TEXT_KEYS, "title", "metadata"))


@dataclass(frozen=True, slots=True)
class RawDocument:
    """One input record before validation into a core ``Document``.

    ``layout``: where a structured file's reader found the text (file, format,
    section, pages and their offsets; core/citations.py), kept under the document's
    ``metadata["hopindex"]``; None for a JSON record or plain text.
    """

    doc_id: str | None
    title: str
    text: str
    metadata: dict[str, Any]
    origin: str
    layout: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class ReadError:
    """One record, line or file that could not be read, and why."""

    origin: str
    reason: str

    def __str__(self) -> str:
        return f"{self.origin}: {self.reason}"


@dataclass(slots=True)
class ReadResult:
    documents: list[RawDocument] = field(default_factory=list)
    errors: list[ReadError] = field(default_factory=list)


# The variable that sets max_document_bytes. Refusals name it: it is what a user can
# change, where the settings field means nothing outside the code.
MAX_DOCUMENT_BYTES_VARIABLE = "HOPINDEX_MAX_DOCUMENT_BYTES"


@dataclass(frozen=True, slots=True)
class ReadOptions:
    """How files are read: the document size limit, the per-file limits, and the
    caller's choices (how structured files split, which files of a folder)."""

    max_document_bytes: int = DEFAULT_MAX_DOCUMENT_BYTES
    file_limits: FileLimits = field(default_factory=FileLimits)
    reading: Reading = field(default_factory=Reading)

    def over_limit(self) -> str:
        """``over the 20,000,000-byte limit (HOPINDEX_MAX_DOCUMENT_BYTES)``"""
        return (f"over the {self.max_document_bytes:,}-byte limit "
                f"({MAX_DOCUMENT_BYTES_VARIABLE})")

    def too_large(self) -> str:
        """For what is refused before it is read (a line, a record's JSON), which may be
        longer than the document it holds: ``too large for a document of at most
        20,000,000 bytes (HOPINDEX_MAX_DOCUMENT_BYTES)``"""
        return (f"too large for a document of at most {self.max_document_bytes:,} bytes "
                f"({MAX_DOCUMENT_BYTES_VARIABLE})")


@dataclass(frozen=True, slots=True)
class Source:
    """A file to read: where to open it, how to name it, and its name inside the folder given.

    ``relative`` is the path relative to the folder the user named (or the file
    name when the file was named directly); plain-text readers use it as the id.
    ``compression`` is how its bytes are stored, which its suffix said.
    """

    path: Path
    origin: str
    relative: str
    compression: Compression = Compression.NONE

    def open_bytes(self) -> BufferedIOBase:
        """The file's content as bytes, decompressed; raises OSError as ``open`` does."""
        return open_binary(self.path, self.compression)


Item = RawDocument | ReadError
Reader = Callable[[Source, ReadOptions], Iterator[Item]]


_JSON_NAMES: tuple[tuple[type, str], ...] = (
    (type(None), "null"),
    (bool, "boolean"),  # before int: bool is an int subclass
    (int, "number"),
    (float, "number"),
    (str, "string"),
    (list, "array"),
    (dict, "object"),
)


def json_type(value: object) -> str:
    """The JSON name of a parsed value's type, for messages a JSON author recognises."""
    for kind, name in _JSON_NAMES:
        if isinstance(value, kind):
            return name
    return type(value).__name__


def decode_utf8(data: bytes, origin: str, *, base_offset: int = 0) -> str | ReadError:
    """Decode strictly, dropping a leading BOM; a bad byte is reported by its file offset."""
    return _decode(data, origin, base_offset, "strict")


def decode_json_utf8(data: bytes, origin: str, *, base_offset: int = 0) -> str | ReadError:
    """As :func:`decode_utf8`, but an encoded surrogate (``ED A0 80``) is let through:
    the JSON check then names the field that holds it (:func:`json_limits`)."""
    return _decode(data, origin, base_offset, "surrogatepass")


def _decode(data: bytes, origin: str, base_offset: int, errors: str) -> str | ReadError:
    skipped = 0
    if data.startswith(UTF8_BOM):
        data = data[len(UTF8_BOM):]
        skipped = len(UTF8_BOM)
    try:
        return data.decode("utf-8", errors)
    except UnicodeDecodeError as exc:
        offset = base_offset + skipped + exc.start
        return ReadError(origin, f"invalid UTF-8 at byte offset {offset} ({exc.reason})")


@lru_cache(maxsize=16)
def json_limits(options: ReadOptions) -> JsonLimits:
    """The JSON limits for documents: no string (text, title, id, a metadata value or
    key) longer than the longest text a document may have, and no deeper nesting than
    a store keeps (a record and its metadata, counted from the record)."""
    return JsonLimits(max_depth=MAX_METADATA_DEPTH, max_string_chars=options.max_document_bytes,
                      string_limit_name=MAX_DOCUMENT_BYTES_VARIABLE)


def json_error(origin: str, error: JsonInputError) -> ReadError:
    """A JSON limit or syntax error as a ReadError at ``origin:field``."""
    return ReadError(f"{origin}:{error.path}" if error.path else origin, error.described)


class _InvalidRecordError(Exception):
    """Carries the first problem found in a record out of the field checks."""

    def __init__(self, error: ReadError) -> None:
        super().__init__(str(error))
        self.error = error


def _record_label(doc_id: str | None, title: str) -> str:
    if doc_id is not None:
        return f"id {doc_id!r}"
    return f"title {title!r}" if title else "without id or title"


def _read_id(record: dict[str, Any], origin: str) -> str | None:
    found: list[tuple[str, str]] = []
    for key in ID_KEYS:
        value = record.get(key)
        if value is None:
            continue
        # bool is an int subclass; an id of ``true`` is a mistake, not the id "True".
        if isinstance(value, bool) or not isinstance(value, str | int):
            raise _InvalidRecordError(ReadError(
                f"{origin}:{key}",
                f"field {key!r} must be a string or integer, got {json_type(value)}"))
        text = str(value)
        if not text.strip():
            raise _InvalidRecordError(ReadError(f"{origin}:{key}", f"field {key!r} is empty"))
        found.append((key, text))
    if not found:
        return None
    first_key, first = found[0]
    for key, other in found[1:]:
        if other != first:
            raise _InvalidRecordError(ReadError(
                f"{origin}:{key}", f"fields {first_key!r} ({first!r}) and {key!r} ({other!r}) "
                                   "disagree about the record's id"))
    return first


def _read_title(record: dict[str, Any], origin: str) -> str:
    title = record.get("title")
    if title is None:
        return ""
    if not isinstance(title, str):
        raise _InvalidRecordError(ReadError(
            f"{origin}:title", f"field 'title' must be a string, got {json_type(title)}"))
    return title


def _read_text(record: dict[str, Any], origin: str) -> str:
    key = next((k for k in TEXT_KEYS if k in record), None)
    if key is None:
        hint = "; this record looks like a question, not a document" if "question" in record else ""
        raise _InvalidRecordError(ReadError(
            f"{origin}:text", f"missing field 'text' (or 'paragraph_text'){hint}"))
    text = record[key]
    if not isinstance(text, str):
        raise _InvalidRecordError(ReadError(
            f"{origin}:{key}", f"field {key!r} must be a string, got {json_type(text)}"))
    if not text.strip():
        raise _InvalidRecordError(ReadError(f"{origin}:{key}", f"field {key!r} is empty"))
    return text


def _read_metadata(record: dict[str, Any], origin: str) -> dict[str, Any]:
    explicit = record.get("metadata")
    if explicit is not None and not isinstance(explicit, dict):
        raise _InvalidRecordError(ReadError(
            f"{origin}:metadata", f"field 'metadata' must be an object, "
                                  f"got {json_type(explicit)}"))
    metadata = {key: value for key, value in record.items() if key not in _KNOWN_KEYS}
    if explicit:
        metadata.update(explicit)
    return metadata


def document_from_record(record: object, origin: str, options: ReadOptions) -> Item:
    """Validate one parsed JSON record into a RawDocument, or say which field is wrong.

    Keys other than id, title, text and metadata are kept in ``metadata`` (an
    explicit ``metadata`` object wins on a clash), so no user data is dropped.
    ``record`` has passed the JSON check within :func:`json_limits`, which refuses
    what no store can keep (unpaired surrogates, nesting past MAX_METADATA_DEPTH)
    and names the field as the input spells it (``author``, ``metadata.tags[1]``).
    """
    if not isinstance(record, dict):
        return ReadError(origin, f"expected a JSON object with a 'text' field, "
                                 f"got {json_type(record)}")
    try:
        doc_id = _read_id(record, origin)
        title = _read_title(record, origin)
        text = _read_text(record, origin)
        metadata = _read_metadata(record, origin)
    except _InvalidRecordError as invalid:
        return invalid.error
    size = len(text.encode("utf-8"))
    if size > options.max_document_bytes:
        return ReadError(origin, f"document {_record_label(doc_id, title)} is {size:,} bytes "
                                 f"of UTF-8 text, {options.over_limit()}")
    return RawDocument(doc_id=doc_id, title=title, text=text, metadata=metadata, origin=origin)
