"""Markdown (and plain text): headings from a CommonMark parse, body kept as written.

markdown-it-py finds the headings, so ATX and setext headings count and a ``#`` line
inside a code fence does not; the body between two headings is the source text as
written (lists, tables as ``| a | b |`` rows, code), which reads well as a passage.
The HTML reader turns a page's main content into Markdown and reuses this.
"""

from __future__ import annotations

from markdown_it import MarkdownIt

from hopindex.readers.base import decode_utf8
from hopindex.readers.files.model import Block, FileInput, ParsedFile, UnreadableFileError
from hopindex.readers.options import FileLimits

# CommonMark plus tables: a GFM table's rows stay body text either way, but the parser
# must see them to leave a line of dashes under a row alone (not a setext heading).
_PARSER = MarkdownIt("commonmark").enable("table")


def markdown_blocks(text: str) -> tuple[tuple[int, ...], list[Block]]:
    """The headings' levels in order, and the headings and body runs in reading order."""
    lines = text.split("\n")
    tokens = _PARSER.parse(text)
    levels: list[int] = []
    blocks: list[Block] = []
    body_from = 0

    def add_body(until: int) -> None:
        body = "\n".join(lines[body_from:until]).strip()
        if body:
            blocks.append(Block(body))

    for position, token in enumerate(tokens):
        # Only top-level headings: a "#" line quoted or inside a list item is content.
        if token.type != "heading_open" or token.level != 0 or token.map is None:
            continue
        start, end = token.map
        title = " ".join(tokens[position + 1].content.split())
        if not title:
            continue  # an empty "#" line heads nothing
        add_body(start)
        level = int(token.tag[1:])
        levels.append(level)
        blocks.append(Block(title, heading_level=level))
        body_from = end
    add_body(len(lines))
    return tuple(levels), blocks


def parse_markdown(file: FileInput, limits: FileLimits) -> ParsedFile:
    """A Markdown file: its first level-1 heading is its title (and, when it opens the
    file and is its only one, not a section of it: splitting.py)."""
    del limits  # the size was checked before parsing; Markdown has no pages or archive
    text = _read_text(file)
    levels, blocks = markdown_blocks(text)
    title = next((b.text for b in blocks if b.heading_level == 1), None)
    return ParsedFile(title=title, heading_levels=levels, blocks=iter(blocks),
                      format_name="Markdown")


def parse_plain_text(file: FileInput, limits: FileLimits) -> ParsedFile:
    """A text file is one run of body text: no headings, no title of its own."""
    del limits
    text = _read_text(file).strip()
    return ParsedFile(title=None, heading_levels=(), blocks=iter([Block(text)] if text else []),
                      format_name="text")


def _read_text(file: FileInput) -> str:
    try:
        data = file.path.read_bytes()
    except OSError as exc:
        raise UnreadableFileError(f"cannot read: {exc.strerror or exc}") from exc
    decoded = decode_utf8(data, file.origin)
    if not isinstance(decoded, str):
        raise UnreadableFileError(decoded.reason)
    # Windows line endings would otherwise leave "\r" on every heading and line.
    return decoded.replace("\r\n", "\n").replace("\r", "\n")
