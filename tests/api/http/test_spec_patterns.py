"""The spec's patterns mean what the handlers check: a string the spec calls blank is
the one the server strips to nothing, under JSON Schema's regular expressions (those
of ECMA-262, as clients and schemathesis read them) and Python's alike."""

from __future__ import annotations

import re
import sys

import jsonschema_rs

from hopindex.api.http.openapi.schemas import NOT_BLANK

CHARACTERS = [chr(code) for code in range(sys.maxunicode + 1)
              if not 0xD800 <= code <= 0xDFFF]


def test_not_blank_is_what_the_handlers_strip() -> None:
    """For every character, NOT_BLANK matches exactly when ``str.strip`` keeps it. The
    \\S of a JSON Schema pattern does not: it takes \\x1c-\\x1f and \\x85 for text and
    \\ufeff for space, so valid requests were refused and invalid ones accepted."""
    spec = jsonschema_rs.validator_for({"type": "string", "pattern": NOT_BLANK})
    python = re.compile(NOT_BLANK)
    kept = [c for c in CHARACTERS if c.strip()]
    assert [c for c in CHARACTERS if spec.is_valid(c)] == kept
    assert [c for c in CHARACTERS if python.search(c)] == kept
