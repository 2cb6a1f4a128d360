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

from hopindex.readers.base import (
    TEXT_KEYS,
    Item,
    ReadError,
    ReadOptions,
    Source,
    decode_utf8,
    document_from_record,
    json_type,
)
from hopindex.readers.jsonl import TOO_DEEP, parse_line


def read_json(source: Source, options: ReadOptions) -> Iterator[Item]:
    try:
        data = source.path.read_bytes()
    except OSError as exc:
        yield ReadError(source.origin, f"cannot read: {exc.strerror or exc}")
        return
    text = decode_utf8(data, source.origin)
    if isinstance(text, ReadError):
        yield text
        return
    yield from read_json_text(text, source, options)


def read_json_text(text: str, source: Source, options: ReadOptions) -> Iterator[Item]:
    try:
        value: Any = json.loads(text)
    except json.JSONDecodeError as exc:
        if exc.msg == "Extra data" and _looks_like_json_lines(text):
            yield from _read_lines(text, source, options)
            return
        yield ReadError(f"{source.origin}:{exc.lineno}",
                        f"invalid JSON: {exc.msg} (column {exc.colno})")
        return
    except RecursionError:
        yield ReadError(source.origin, TOO_DEEP)
        return

    if isinstance(value, list):
        for index, record in enumerate(value):
            yield document_from_record(record, f"{source.origin}[{index}]", options)
    elif isinstance(value, dict):
        if any(isinstance(value.get(key), str) for key in TEXT_KEYS):
            yield document_from_record(value, source.origin, options)
        else:
            yield from _read_title_sentences(value, source, options)
    else:
        yield ReadError(source.origin, f"top level is a {json_type(value)}; expected a list "
                                       "of records or an object mapping titles to sentence "
                                       "lists")


def _read_title_sentences(corpus: dict[str, Any], source: Source,
                          options: ReadOptions) -> Iterator[Item]:
    for title, sentences in corpus.items():
        origin = f"{source.origin}[{json.dumps(title, ensure_ascii=False)}]"
        if not isinstance(sentences, list) or not all(isinstance(s, str) for s in sentences):
            yield ReadError(origin, f"expected a list of sentence strings under the title, "
                                    f"got {json_type(sentences)}")
            continue
        yield document_from_record({"title": title, "text": "".join(sentences)}, origin, options)


def _looks_like_json_lines(text: str) -> bool:
    """JSON Lines under a .json name: the first non-blank line is a JSON object on its own."""
    for line in text.split("\n"):
        if line.strip():
            try:
                return isinstance(json.loads(line), dict)
            except (json.JSONDecodeError, RecursionError):
                return False
    return False


def _read_lines(text: str, source: Source, options: ReadOptions) -> Iterator[Item]:
    # Split on "\n" only: str.splitlines would also split inside U+2028 in a string.
    for lineno, line in enumerate(text.split("\n"), start=1):
        item = parse_line(line, f"{source.origin}:{lineno}", options)
        if item is not None:
            yield item
