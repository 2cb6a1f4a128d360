"""One line of JSON Lines, decoded: a document, an error, or nothing for a blank line.

Both JSON readers parse such lines: ``jsonl`` for every line of a ``.jsonl`` file, and
``jsonfile`` when a ``.json`` file turns out to hold JSON Lines.
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
