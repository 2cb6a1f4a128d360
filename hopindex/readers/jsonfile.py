"""JSON (``.json``): a whole-file document whose shape says which corpus format it is.

Accepted shapes, told apart by content:

- a list of records ``{id?, title?, text, metadata?}`` — which covers the
  2Wiki/MuSiQue corpora (``{title, text}``) and paragraph lists
  (``{title, paragraph_text}``);
- an object ``{title: [sentence, ...]}`` — the HotpotQA corpus, whose text is
  the sentences joined with "" (they carry their own leading spaces);
- a single record object with a string ``text``;
- JSON Lines saved under a ``.json`` name.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from hopindex.core.json_input import (
    JsonInputError,
    JsonLimits,
    JsonSyntaxError,
    decode_json,
    find_violation,
)
from hopindex.core.text import printable
from hopindex.readers.base import (
    TEXT_KEYS,
    Item,
    ReadError,
    ReadOptions,
    Source,
    decode_json_utf8,
    document_from_record,
    json_error,
    json_limits,
    json_type,
)
from hopindex.readers.json_line import parse_line


def read_json(source: Source, options: ReadOptions) -> Iterator[Item]:
    try:
        data = source.path.read_bytes()
    except OSError as exc:
        yield ReadError(source.origin, f"cannot read: {exc.strerror or exc}")
        return
    text = decode_json_utf8(data, source.origin)
    if isinstance(text, ReadError):
        yield text
        return
    yield from read_json_text(text, source, options)


def read_json_text(text: str, source: Source, options: ReadOptions) -> Iterator[Item]:
    limits = json_limits(options)
    try:
        value, suspect = decode_json(text, limits)
    except JsonSyntaxError as exc:
        if exc.message == "Extra data" and _looks_like_json_lines(text, limits):
            yield from _read_lines(text, source, options)
            return
        yield ReadError(f"{source.origin}:{exc.line}",
                        f"invalid JSON: {exc.message} (column {exc.column})")
        return
    except JsonInputError as exc:
        # Nesting past the limit stops the parse: the whole file, named by line and field.
        yield json_error(f"{source.origin}:{exc.line}", exc)
        return
    # Numbers, strings and surrogates past the limits fail their own record only.
    checked = _Checked(limits if suspect else None)
    if isinstance(value, list):
        for index, record in enumerate(value):
            origin = f"{source.origin}[{index}]"
            yield checked.refusal(origin, record) or document_from_record(record, origin,
                                                                          options)
    elif isinstance(value, dict):
        if any(isinstance(value.get(key), str) for key in TEXT_KEYS):
            yield (checked.refusal(source.origin, value)
                   or document_from_record(value, source.origin, options))
        else:
            yield from _read_title_sentences(value, source, options, checked)
    else:
        yield ReadError(source.origin, f"top level is a {json_type(value)}; expected a list "
                                       "of records or an object mapping titles to sentence "
                                       "lists")


class _Checked:
    """The per-record JSON check, for a file whose text may hold something refused."""

    def __init__(self, limits: JsonLimits | None) -> None:
        self.limits = limits

    def refusal(self, origin: str, value: Any, path: str = "") -> ReadError | None:
        if self.limits is None:
            return None
        found = find_violation(value, self.limits, path)
        return None if found is None else json_error(origin, found)


def _read_title_sentences(corpus: dict[str, Any], source: Source, options: ReadOptions,
                          checked: _Checked) -> Iterator[Item]:
    for title, sentences in corpus.items():
        # printable: a title holding a surrogate must still make a storable origin.
        origin = f"{source.origin}[{printable(json.dumps(title, ensure_ascii=False))}]"
        refused = (checked.refusal(origin, title, "title")
                   or checked.refusal(origin, sentences, "text"))
        if refused is not None:
            yield refused
            continue
        if not isinstance(sentences, list) or not all(isinstance(s, str) for s in sentences):
            yield ReadError(origin, f"expected a list of sentence strings under the title, "
                                    f"got {json_type(sentences)}")
            continue
        yield document_from_record({"title": title, "text": "".join(sentences)}, origin, options)


def _looks_like_json_lines(text: str, limits: JsonLimits) -> bool:
    """JSON Lines under a .json name: the first non-blank line is a JSON object on its own."""
    for line in text.split("\n"):
        if line.strip():
            try:
                return isinstance(decode_json(line, limits)[0], dict)
            except JsonSyntaxError:
                return False
            except JsonInputError:  # too deep to parse, yet a line of its own
                return line.lstrip().startswith("{")
    return False


def _read_lines(text: str, source: Source, options: ReadOptions) -> Iterator[Item]:
    # Split on "\n" only: str.splitlines would also split inside U+2028 in a string.
    for lineno, line in enumerate(text.split("\n"), start=1):
        item = parse_line(line, f"{source.origin}:{lineno}", options)
        if item is not None:
            yield item
