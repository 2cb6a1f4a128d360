"""One line of JSON Lines, decoded: a document, an error, or nothing for a blank line.

Both JSON readers parse such lines: ``jsonl`` for every line of a ``.jsonl`` file, and
``jsonfile`` when a ``.json`` file turns out to hold JSON Lines. Both also bound a
record's JSON text by :func:`line_limit`, whether it is a line or a record of an array.
"""

from __future__ import annotations

from hopindex.core.json_input import JsonInputError, JsonSyntaxError, parse_json
from hopindex.readers.base import (
    Item,
    ReadError,
    ReadOptions,
    document_from_record,
    json_error,
    json_limits,
)

# A record's JSON holds escapes (up to 6 bytes per text byte for control characters)
# and metadata besides the text, so the ceiling is generous; it exists so that a
# single runaway line or record cannot exhaust memory.
LINE_BYTES_PER_DOCUMENT_BYTE = 8
LINE_SLACK_BYTES = 64 * 1024


def line_limit(options: ReadOptions) -> int:
    """The longest JSON text (bytes of a line, characters of a record) a record may have."""
    return options.max_document_bytes * LINE_BYTES_PER_DOCUMENT_BYTE + LINE_SLACK_BYTES


def parse_line(line: str, origin: str, options: ReadOptions) -> Item | None:
    """One decoded line: a document, an error, or None for a blank line."""
    if not line.strip():
        return None
    # Too deep, a runaway number, an over-long string, an unpaired surrogate: that line
    # fails, named with its field (hopindex.core.json_input); the others are read.
    try:
        record = parse_json(line, json_limits(options))
    except JsonSyntaxError as exc:
        return ReadError(origin, f"invalid JSON: {exc.message} (column {exc.column})")
    except JsonInputError as exc:
        return json_error(origin, exc)
    return document_from_record(record, origin, options)
