"""DOCX: a Word file's body as headings, runs of body text and tables, with python-docx.

The archive is checked with ``zipfile`` before python-docx opens it: a .doc or an
encrypted file (both OLE compound files), a zip that is not a Word file, a corrupt
zip and a zip bomb are refused with a reason. python-docx then loads the whole
document, so the body is walked once into a list: the heading levels are known
before the first block is handed on.
"""

from __future__ import annotations

import io
import re
import struct
import zipfile
import zlib
from collections.abc import Iterator
from typing import Any, BinaryIO

import docx
from docx.document import Document
from docx.enum.style import WD_STYLE_TYPE
from docx.oxml.ns import nsmap, qn
from docx.styles.style import BaseStyle, ParagraphStyle
from lxml import etree  # type: ignore[import-untyped]  # lxml ships no type information

from hopindex.readers.files.model import Block, FileInput, ParsedFile, UnreadableFileError
from hopindex.readers.options import FILE_LIMIT_VARIABLES, FileLimits

# Both a Word 97-2003 .doc and a password-protected .docx are OLE compound files.
_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
# A local file header, or the end record of an empty archive.
_ZIP_MAGICS = (b"PK\x03\x04", b"PK\x05\x06")
# The ratio is judged only on members expanding past this: a small part of repetitive
# XML compresses past 100:1 (python-docx's own 380 KB document.xml of repeated text is
# 181:1) yet cannot hurt, while a bomb needs megabytes to matter.
_RATIO_FLOOR_BYTES = 1 << 20
# A zip's local file header before the name and extra field; its general-purpose flag
# bit 0 marks an encrypted member.
_LOCAL_HEADER_SIZE = 30
_ENCRYPTED = 0x1
# Bytes inflated or read at a time while checking sizes: memory stays at a few of these.
_STEP = 1 << 20

_HEADING_NAME = re.compile(r"heading ([1-9])", re.IGNORECASE)
_TOC_NAME = re.compile(r"toc( heading| [1-9])?", re.IGNORECASE)
# What a paragraph style makes of its paragraphs, beside a heading level 1..9.
_BODY, _TITLE, _SKIP = 0, -1, -2
# Outline level 9 is Word's "body text"; 0..8 are heading levels 1..9.
_BODY_OUTLINE = 9

# Runs inside the wrappers Word writes around text that is shown: links, tracked
# insertions, smart tags, simple fields and inline content controls. Deleted text is
# w:delText, not w:t, so tracked deletions drop out. python-docx's Paragraph.text reads
# direct runs and links only: it drops tracked insertions, shown in the document.
_RUNS = (
    "w:r | w:hyperlink/w:r | w:ins/w:r | w:ins/w:hyperlink/w:r | w:moveTo/w:r"
    " | w:smartTag/w:r | w:fldSimple/w:r | w:sdt/w:sdtContent/w:r"
    " | w:sdt/w:sdtContent/w:hyperlink/w:r"
)
_RUN_TEXT = (
    f"({_RUNS})/*[self::w:t or self::w:tab or self::w:br or self::w:cr"
    " or self::w:noBreakHyphen or self::w:ptab]"
)

# Compiled once: a per-call xpath string is compiled on every paragraph, 4-9x slower.
_TEXT_PARTS = etree.XPath(_RUN_TEXT, namespaces=nsmap)
_OUTLINE_LEVEL = etree.XPath("w:pPr/w:outlineLvl/@w:val", namespaces=nsmap)
_TOC_GALLERY = etree.XPath(
    "w:sdtPr/w:docPartObj/w:docPartGallery[@w:val='Table of Contents']", namespaces=nsmap
)

_P, _TBL, _SDT, _SDT_CONTENT, _CUSTOM_XML = (
    qn("w:p"),
    qn("w:tbl"),
    qn("w:sdt"),
    qn("w:sdtContent"),
    qn("w:customXml"),
)


def parse_docx(file: FileInput, limits: FileLimits) -> ParsedFile:
    """The Word file's title, heading levels and blocks, in reading order."""
    _check_archive(file, limits)
    document = _load(file)
    try:
        core_title = _collapse(document.core_properties.title or "")
        kinds = _style_kinds(document)
        title, blocks = _read_body(document, kinds, core_title)
    # A hostile file can break python-docx's object model in ways it does not
    # anticipate (a missing part, an attribute of the wrong type); either way the
    # whole file is unreadable, and the reason says what broke.
    except Exception as exc:
        raise UnreadableFileError(f"unreadable .docx content: {_short(exc)}") from exc
    return ParsedFile(
        title=core_title or title,
        heading_levels=tuple(block.heading_level for block in blocks if block.is_heading),
        blocks=iter(blocks),
        pages=None,
        format_name="DOCX",
    )


def _check_archive(file: FileInput, limits: FileLimits) -> None:
    """Refuse what is not a sound .docx zip, or expands past the limits."""
    head = file.head if len(file.head) >= len(_OLE_MAGIC) else _read_head(file)
    if head.startswith(_OLE_MAGIC):
        raise UnreadableFileError(
            "a Word 97-2003 .doc file or an encrypted .docx: save it as .docx without a password"
        )
    if not head.startswith(_ZIP_MAGICS):
        raise UnreadableFileError("not a Word .docx file (not a zip archive)")
    try:
        with zipfile.ZipFile(file.path) as archive:
            members = archive.infolist()
    except OSError as exc:
        raise UnreadableFileError(f"cannot read the file: {exc.strerror or exc}") from exc
    except (zipfile.BadZipFile, EOFError, ValueError) as exc:
        raise UnreadableFileError(f"corrupt .docx (bad zip archive): {_short(exc)}") from exc
    if not any(member.filename == "word/document.xml" for member in members):
        raise UnreadableFileError("not a Word .docx file (no word/document.xml)")
    expanded = sum(member.file_size for member in members)
    worst = max(members, key=_ratio)
    ratio = _ratio(worst)
    if ratio > limits.max_zip_ratio or expanded > limits.max_zip_expanded_bytes:
        raise UnreadableFileError(
            f"zip expands to {expanded:,} bytes (ratio {ratio:,.0f}:1 for {worst.filename}),"
            f" over the limit ({FILE_LIMIT_VARIABLES['max_zip_ratio']}={limits.max_zip_ratio}"
            f" / {FILE_LIMIT_VARIABLES['max_zip_expanded_bytes']}"
            f"={limits.max_zip_expanded_bytes})"
        )
    _check_declared_sizes(file, members)


def _check_declared_sizes(file: FileInput, members: list[zipfile.ZipInfo]) -> None:
    """Refuse a member that inflates past the size it declares, inflating in bounded steps.

    The sizes checked above are those the archive declares, and they may lie.
    python-docx reads each part with ZipFile.read, whose reader cuts the output at the
    declared size and then checks the CRC; but it inflates all the compressed bytes in
    one call of up to ZipExtFile.MAX_N (1 GiB) before cutting, so a member declaring
    100 bytes with 100 KB of deflated zeros costs 100 MB for a moment, whatever the CRC.
    """
    try:
        with file.path.open("rb") as raw:
            for member in members:
                if member.flag_bits & _ENCRYPTED:
                    raise UnreadableFileError(
                        "an encrypted .docx: save it as .docx without a password"
                    )
                if member.compress_type == zipfile.ZIP_STORED:
                    continue  # stored bytes are read as they are: no bigger than the file
                if member.compress_type != zipfile.ZIP_DEFLATED:
                    raise UnreadableFileError(
                        f"corrupt .docx: {member.filename} uses zip compression method"
                        f" {member.compress_type}, which Word does not write"
                    )
                if _inflates_past(raw, member):
                    raise UnreadableFileError(
                        f"corrupt .docx: {member.filename} expands past the"
                        f" {member.file_size:,} bytes its zip entry declares"
                    )
    except OSError as exc:
        raise UnreadableFileError(f"cannot read the file: {exc.strerror or exc}") from exc
    except (zlib.error, struct.error) as exc:
        raise UnreadableFileError(f"corrupt .docx (bad zip archive): {_short(exc)}") from exc


def _inflates_past(raw: BinaryIO, member: zipfile.ZipInfo) -> bool:
    """Whether the member's deflated data holds more than its declared size."""
    raw.seek(member.header_offset)
    header = raw.read(_LOCAL_HEADER_SIZE)
    if len(header) != _LOCAL_HEADER_SIZE or not header.startswith(b"PK\x03\x04"):
        raise zlib.error(f"no local header for {member.filename}")
    name_length, extra_length = struct.unpack("<HH", header[26:30])
    raw.seek(name_length + extra_length, io.SEEK_CUR)
    inflater = zlib.decompressobj(-zlib.MAX_WBITS)
    left, produced = member.compress_size, 0
    while left > 0 and not inflater.eof:
        data = raw.read(min(left, _STEP))
        if not data:
            break  # a truncated member: zipfile reports it when python-docx reads it
        left -= len(data)
        while data and not inflater.eof:
            produced += len(inflater.decompress(data, _STEP))
            if produced > member.file_size:
                return True
            data = inflater.unconsumed_tail
    return False


def _ratio(member: zipfile.ZipInfo) -> float:
    if member.file_size <= _RATIO_FLOOR_BYTES:
        return 0.0
    return member.file_size / max(member.compress_size, 1)


def _read_head(file: FileInput) -> bytes:
    try:
        with file.path.open("rb") as stream:
            return stream.read(len(_OLE_MAGIC))
    except OSError as exc:
        raise UnreadableFileError(f"cannot read the file: {exc.strerror or exc}") from exc


def _load(file: FileInput) -> Document:
    try:
        return docx.Document(str(file.path))
    except zipfile.BadZipFile as exc:
        raise UnreadableFileError(f"corrupt .docx (bad zip archive): {_short(exc)}") from exc
    # python-docx raises whatever its layers raise (KeyError for a missing part,
    # ValueError for a wrong content type, lxml's XMLSyntaxError for a broken part).
    except Exception as exc:
        raise UnreadableFileError(f"not a readable Word .docx file: {_short(exc)}") from exc


def _short(exc: BaseException) -> str:
    text = _collapse(str(exc)) or type(exc).__name__
    return text if len(text) <= 200 else text[:199] + "…"


def _collapse(text: str) -> str:
    return " ".join(text.split())


def _style_kinds(document: Document) -> dict[str | None, int]:
    """Each paragraph style's id to its heading level, or _BODY, _TITLE or _SKIP.

    ``None`` (a paragraph naming no style) maps to the default paragraph style's kind.
    """
    kinds: dict[str | None, int] = {}
    for style in document.styles:
        if style.type == WD_STYLE_TYPE.PARAGRAPH:
            kinds[style.style_id] = _style_kind(style)
    default = document.styles.default(WD_STYLE_TYPE.PARAGRAPH)
    kinds[None] = kinds.get(default.style_id, _BODY) if default is not None else _BODY
    return kinds


def _style_kind(style: BaseStyle) -> int:
    # Word stores built-in styles under their English names whatever the interface
    # language, so "heading 1" holds for a German "Überschrift 1" too; a custom heading
    # style is known by the outline level it sets or inherits.
    name = style.name or ""
    if match := _HEADING_NAME.fullmatch(name):
        return int(match.group(1))
    if name.casefold() == "title":
        return _TITLE
    if _TOC_NAME.fullmatch(name):
        return _SKIP
    current: BaseStyle | None = style
    # basedOn chains are short; the bound stops a cycle in a hostile file.
    for _ in range(16):
        if current is None:
            break
        levels: list[str] = _OUTLINE_LEVEL(current.element)
        if levels:
            return _outline_kind(levels[0])
        current = current.base_style if isinstance(current, ParagraphStyle) else None
    return _BODY


def _outline_kind(value: str) -> int:
    try:
        level = int(value)
    except ValueError:
        return _BODY
    return level + 1 if 0 <= level < _BODY_OUTLINE else _BODY


def _read_body(
    document: Document, kinds: dict[str | None, int], core_title: str
) -> tuple[str | None, list[Block]]:
    """The first Title-style paragraph's text, and the body's blocks in order.

    Consecutive body paragraphs are one block, their texts on lines of their own.
    """
    title: str | None = None
    blocks: list[Block] = []
    run: list[str] = []

    def end_run() -> None:
        if run:
            blocks.append(Block("\n".join(run)))
            run.clear()

    for element in _body_elements(document.element.body):
        if element.tag == _TBL:
            end_run()
            if table := _table_text(element):
                blocks.append(Block(table))
            continue
        text = _paragraph_text(element)
        if not text:
            continue
        kind = _paragraph_kind(element, kinds)
        if kind == _SKIP:
            continue
        if kind == _TITLE and title is None:
            title = _collapse(text)
            # A Title paragraph that is not the file's title (the core title wins)
            # is still text of the document.
            if not core_title or core_title == title:
                continue
            kind = _BODY
        if kind > 0:
            end_run()
            blocks.append(Block(_collapse(text), heading_level=kind))
        else:
            run.append(text)
    end_run()
    return title, blocks


def _body_elements(container: Any) -> Iterator[Any]:
    """The paragraphs and tables of the body in order, content controls and custom
    XML opened (python-docx's iter_inner_content skips what they hold), a table of
    contents left out: it repeats the headings."""
    for child in container.iterchildren():
        tag = child.tag
        if tag in (_P, _TBL):
            yield child
        elif tag == _SDT:
            if _TOC_GALLERY(child):
                continue
            for content in child.iterchildren(_SDT_CONTENT):
                yield from _body_elements(content)
        elif tag == _CUSTOM_XML:
            yield from _body_elements(child)


def _paragraph_text(p: Any) -> str:
    return "".join(str(part) for part in _TEXT_PARTS(p)).strip()


def _paragraph_kind(p: Any, kinds: dict[str | None, int]) -> int:
    direct: list[str] = _OUTLINE_LEVEL(p)
    if direct:
        return _outline_kind(direct[0])
    return kinds.get(p.style, _BODY)


def _table_text(tbl: Any) -> str:
    """The table's rows, one per line, cells joined by " | "; empty rows left out.

    A cell spanning columns is written once; a cell spanning rows repeats on each row
    it spans, so every row reads whole.
    """
    lines: list[str] = []
    above: dict[int, str] = {}
    for tr in tbl.tr_lst:
        column = tr.grid_before
        cells: list[str] = []
        current: dict[int, str] = {}
        for tc in tr.tc_lst:
            text = above.get(column, "") if tc.vMerge == "continue" else _cell_text(tc)
            current[column] = text
            cells.append(text)
            column += tc.grid_span
        above = current
        if any(cells):
            lines.append(" | ".join(cells))
    return "\n".join(lines)


def _cell_text(tc: Any) -> str:
    """A cell's paragraphs and nested tables on one line, so its row stays one line."""
    parts: list[str] = []
    for element in _body_elements(tc):
        text = _table_text(element) if element.tag == _TBL else _paragraph_text(element)
        if text:
            parts.append(_collapse(text))
    return " ".join(parts)
