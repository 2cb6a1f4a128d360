"""Plain text (``.txt``) and Markdown (``.md``, ``.markdown``): one file, one document.

The id is the file's path relative to the folder the user named, so the same
folder ingested again maps onto the same documents. A Markdown title is the
first level-1 heading outside code fences; otherwise the title is the file stem.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from hopindex.core.text import unstorable_field
from hopindex.readers.base import Item, RawDocument, ReadError, ReadOptions, Source, decode_utf8

MARKDOWN_SUFFIXES = frozenset({".md", ".markdown"})

# Up to three spaces of indent, "# ", the title, optional closing hashes (CommonMark).
_H1 = re.compile(r"^ {0,3}# +(?P<title>.*?)(?:\s+#+)?\s*$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")
# The file may exceed the limit by leading/trailing space and a heading line
# that the document text does not keep; the decoded text is checked exactly.
_FILE_SLACK_BYTES = 64 * 1024


def markdown_title(text: str) -> tuple[str | None, int | None]:
    """The first H1 heading outside code fences, and its line index."""
    fence: str | None = None
    for index, line in enumerate(text.split("\n")):
        opener = _FENCE.match(line)
        if opener:
            marker = opener.group(1)
            if fence is None:
                fence = marker
            elif marker == fence:
                fence = None
            continue
        if fence is None:
            heading = _H1.match(line)
            if heading and heading.group("title"):
                return heading.group("title"), index
    return None, None


def _split_markdown(text: str, stem: str) -> tuple[str, str]:
    title, line_index = markdown_title(text)
    if title is None or line_index is None:
        return stem, text
    lines = text.split("\n")
    # Drop the heading from the body only when it opens the file: passages are
    # stored as "title\ntext", and a heading further down is part of the content.
    if all(not line.strip() for line in lines[:line_index]):
        return title, "\n".join(lines[line_index + 1:])
    return title, text


def read_text_file(source: Source, options: ReadOptions) -> Iterator[Item]:
    limit = options.max_document_bytes
    try:
        size = source.path.stat().st_size
        if size > limit + _FILE_SLACK_BYTES:
            yield ReadError(source.origin, f"document {source.relative!r} is {size:,} bytes, "
                                           f"{options.over_limit()}")
            return
        data = source.path.read_bytes()
    except OSError as exc:
        yield ReadError(source.origin, f"cannot read: {exc.strerror or exc}")
        return
    decoded = decode_utf8(data, source.origin)
    if isinstance(decoded, ReadError):
        yield decoded
        return
    # Windows line endings would otherwise leave "\r" on the title and every line.
    decoded = decoded.replace("\r\n", "\n")
    stem = Path(source.relative).stem
    if source.path.suffix.lower() in MARKDOWN_SUFFIXES:
        title, body = _split_markdown(decoded, stem)
    else:
        title, body = stem, decoded
    body = body.strip()
    if not body:
        yield ReadError(source.origin, "document text is empty")
        return
    text_bytes = len(body.encode("utf-8"))
    if text_bytes > limit:
        yield ReadError(source.origin, f"document {source.relative!r} is {text_bytes:,} bytes "
                                       f"of UTF-8 text, {options.over_limit()}")
        return
    unstorable = unstorable_field([("id", source.relative), ("title", title)])
    if unstorable is not None:
        yield ReadError(f"{source.origin}:{unstorable.field}",
                        f"{unstorable}: the id and title come from the file's name, which is "
                        "not valid UTF-8; rename the file")
        return
    yield RawDocument(doc_id=source.relative, title=title, text=body,
                      metadata={}, origin=source.origin)
