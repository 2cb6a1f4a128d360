"""HTML: a web page's main content, found by trafilatura, as Markdown blocks.

The page is decoded here, strictly (a BOM, else its declared charset, else UTF-8), so
a wrongly encoded page is refused with the byte that is wrong rather than read as
mojibake. trafilatura drops the navigation, header, footer, sidebars and banners and
gives the main content as Markdown; ``markdown_blocks`` makes headings and body runs
of it. A page with no main content (only navigation) is refused.
"""

from __future__ import annotations

import codecs
import copy
import re
from collections.abc import Callable
from configparser import ConfigParser
from typing import Any

import trafilatura
from trafilatura.settings import DEFAULT_CONFIG, use_config

from hopindex.readers.files.markdown import markdown_blocks
from hopindex.readers.files.model import FileInput, ParsedFile, UnreadableFileError
from hopindex.readers.options import FileLimits

_BOMS = (
    (codecs.BOM_UTF8, "utf-8", "UTF-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le", "UTF-16"),
    (codecs.BOM_UTF16_BE, "utf-16-be", "UTF-16"),
)
# Where a browser looks for a declared charset before it gives up.
_PRESCAN_BYTES = 4096
_META_CHARSET = re.compile(rb"""<meta\b[^>]*?\bcharset\s*=\s*["']?\s*([^\s"'/>;]+)""", re.I)
_XML_ENCODING = re.compile(rb"""^\s*<\?xml\b[^>]*?\bencoding\s*=\s*["']([^"']+)""", re.I)
# Labels read as browsers read them (the WHATWG Encoding standard), not as Python's
# codecs would: a page declaring ISO-8859-1 or ASCII is windows-1252 in every browser,
# and a meta tag declaring UTF-16 on bytes that held an ASCII meta tag cannot be right.
_LABEL_CODECS = {
    **dict.fromkeys(
        (
            *("iso-8859-1", "iso8859-1", "iso_8859-1", "latin1", "latin-1", "l1"),
            *("us-ascii", "ascii", "ansi_x3.4-1968", "windows-1252", "cp1252", "x-cp1252"),
        ),
        "cp1252",
    ),
    **dict.fromkeys(("utf-16", "utf-16le", "utf-16be", "unicode"), "utf-8"),
    **dict.fromkeys(
        ("shift_jis", "shift-jis", "sjis", "x-sjis", "ms_kanji", "windows-31j"), "cp932"
    ),
    **dict.fromkeys(("gb2312", "gbk", "x-gbk", "chinese"), "gbk"),
    **dict.fromkeys(("euc-kr", "ks_c_5601-1987", "windows-949"), "cp949"),
    "big5": "big5hkscs",
    "tis-620": "cp874",
}
# windows-1252 as browsers decode it: the five bytes Python's cp1252 leaves undefined
# (0x81, 0x8D, 0x8F, 0x90, 0x9D) are the C1 controls of the same value, as in Latin-1.
_CP1252_FROM_LATIN1 = {
    byte: bytes([byte]).decode("cp1252")
    for byte in range(0x80, 0xA0)
    if byte not in (0x81, 0x8D, 0x8F, 0x90, 0x9D)
}

# trafilatura refuses a text whose first 50 characters do not say "html" unless it
# parses into two top-level elements, so a fragment or a page opening with a long
# comment would come back empty; an <html> tag in front is merged by the parser.
_HTML_SNIFF_CHARS = 50

_DECLARE = "declare the page's encoding with <meta charset=...>"
_NO_CONTENT = "no main content found: the page holds only navigation or boilerplate"
# Link-only lines in a row that make a menu, at the start or end of the content.
_MENU_LINKS = 2
_TITLE_SEPARATORS = re.compile(r"\s+[|\u2013\u2014:-]\s+")
# Below MIN_EXTRACTED_SIZE (250) characters of main content trafilatura falls back to
# a baseline extraction that flattens headings into lines (and lets the menus
# through, which _NO_CONTENT's check and the menu trimming handle). A short page whose
# main content has headings is asked again with a low size, which keeps them.
_SHORT_CONFIG = use_config()
_SHORT_CONFIG.set("DEFAULT", "MIN_EXTRACTED_SIZE", "10")
# Extractions shorter than this, with no heading, are tried again with _SHORT_CONFIG.
_SHORT_CHARS = 1000
_HEADING_LINE = re.compile(r"^#{1,6} ", re.M)
_LIST_MARKER = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])\s+")
_EMPHASIS = str.maketrans("", "", "*_`")


def parse_html(file: FileInput, limits: FileLimits) -> ParsedFile:
    """The page's title, and its main content as heading and body blocks."""
    del limits  # the file's size was checked before parsing; a page has no pages
    try:
        data = file.path.read_bytes()
    except OSError as exc:
        raise UnreadableFileError(f"cannot read: {exc.strerror or exc}") from exc
    text = decode_html(data)
    if "html" not in text[:_HTML_SNIFF_CHARS].lower():
        text = "<html>" + text
    # Parsed once, by trafilatura's own loader (libxml2, its repairs): the title and the
    # link texts come from the tree the extraction reads. An HTML5 parser here instead
    # (selectolax's lexbor) took 27 s on 100,000 nested <div>s; libxml2 takes 0.01 s.
    tree = trafilatura.load_html(text)
    if tree is None:
        raise UnreadableFileError(_NO_CONTENT)
    title, link_texts = _title(tree), _link_texts(tree)
    content = _without_navigation(_main_content(tree), link_texts, _title_parts(title))
    levels, blocks = markdown_blocks(content)
    if not any(not block.is_heading for block in blocks):
        raise UnreadableFileError(_NO_CONTENT)
    return ParsedFile(
        title=title,
        heading_levels=levels,
        blocks=iter(blocks),
        pages=None,
        format_name="HTML",
    )


def decode_html(data: bytes) -> str:
    """The page's text: by its BOM, else its declared charset, else as UTF-8, strictly."""
    for bom, codec, name in _BOMS:
        if data.startswith(bom):
            why = f" (the file opens with a {name} byte order mark)"
            return _decode(data, len(bom), codec, name, why=why)
    label = _declared_charset(data[:_PRESCAN_BYTES])
    if label is None:
        return _decode(data, 0, "utf-8", "UTF-8", why=f"; {_DECLARE}")
    codec = _LABEL_CODECS.get(label.lower(), label)
    try:
        codec = codecs.lookup(codec).name
    except LookupError:
        raise UnreadableFileError(
            f"unknown character encoding {label!r} declared in the page; declare one"
            " Python knows, such as <meta charset=utf-8> or <meta charset=windows-1252>"
        ) from None
    why = (
        f", though the page declares charset={label}; declare its real encoding"
        " with <meta charset=...>"
    )
    return _decode(data, 0, codec, label, why=why)


def _main_content(tree: Any) -> str:
    """The page's main content as Markdown, "" when trafilatura finds none."""
    # The default balance: on ten realistic pages (an article, docs, a recipe, an FAQ,
    # a blog, a table layout, short notices, each with navigation, header, footer,
    # sidebar and cookie banner) favor_recall kept nothing more, and on a short notice
    # returned the cookie banner instead; favor_precision dropped a notice's heading.
    markdown = _extract(copy.deepcopy(tree), DEFAULT_CONFIG) or ""
    if len(markdown) < _SHORT_CHARS and not _HEADING_LINE.search(markdown):
        # A short page may have fallen back to the baseline, headings flattened. The
        # low-size extraction alone would take a cookie banner for the content of a
        # page with none, so it is kept only when it finds the page's headings.
        short = _extract(tree, _SHORT_CONFIG) or ""
        if _HEADING_LINE.search(short):
            return short
    return markdown


def _extract(tree: Any, config: ConfigParser) -> str | None:
    found: str | None = trafilatura.extract(
        tree,
        config=config,
        output_format="markdown",
        include_tables=True,
        include_formatting=True,
        include_links=False,
        include_images=False,
        include_comments=False,
    )
    return found


def _declared_charset(head: bytes) -> str | None:
    match = _XML_ENCODING.match(head) or _META_CHARSET.search(head)
    return match.group(1).decode("ascii", "replace") if match else None


def _decode(data: bytes, start: int, codec: str, name: str, *, why: str) -> str:
    """``data[start:]`` decoded; a byte that does not decode is refused by its offset,
    with ``why`` the codec was chosen and what to do about it."""
    if codec == "cp1252":
        return data[start:].decode("latin-1").translate(_CP1252_FROM_LATIN1)
    try:
        return data[start:].decode(codec)
    except UnicodeDecodeError as exc:
        raise UnreadableFileError(
            f"invalid {name} at byte offset {start + exc.start}{why}"
        ) from None


def _title(tree: Any) -> str | None:
    """The <title>, else the og:title meta tag, whitespace collapsed; None if empty."""
    title = _collapse(str(tree.findtext(".//title") or ""))
    if not title:
        for meta in tree.iterfind(".//meta[@property='og:title']"):
            title = _collapse(str(meta.get("content") or ""))
            break
    return title or None


def _link_texts(tree: Any) -> set[str]:
    return {text for link in tree.iter("a") if (text := _plain(str(link.text_content())))}


def _without_navigation(markdown: str, link_texts: set[str], title_parts: set[str]) -> str:
    """The Markdown without the runs of link-only lines at its start and end; "" when
    every line of body text is the text of one of the page's links or the page's own
    title (an empty article under its heading, "Coming soon").

    On a page with little text, trafilatura falls back to a plain reading of the
    whole page, which brings the menus' link texts in as lines: "Home", "World".
    """

    def is_link(line: str) -> bool:
        return not line.lstrip().startswith("#") and _plain(line) in link_texts

    lines = markdown.split("\n")
    body = [line for line in lines if line.strip() and not line.lstrip().startswith("#")]
    if all(is_link(line) or _plain(line) in title_parts for line in body):
        return ""
    start = _link_run(lines, is_link)
    end = len(lines) - _link_run(lines[start:][::-1], is_link)
    return "\n".join(lines[start:end])


def _title_parts(title: str | None) -> set[str]:
    """The title and its parts around a separator ("Coming soon | Northwind Library"),
    as _plain gives lines."""
    if not title:
        return set()
    return {_plain(part) for part in (title, *_TITLE_SEPARATORS.split(title)) if part.strip()}


def _link_run(lines: list[str], is_link: Callable[[str], bool]) -> int:
    """How many opening lines are a menu: blank or link-only lines, at least two of
    them links. One link alone (a linked heading, a byline) is kept."""
    count = links = 0
    for line in lines:
        if line.strip():
            if not is_link(line):
                break
            links += 1
        count += 1
    return count if links >= _MENU_LINKS else 0


def _plain(text: str) -> str:
    """A line or a link's text without list markers, emphasis or case, for comparing."""
    return _collapse(_LIST_MARKER.sub("", text).translate(_EMPHASIS)).casefold()


def _collapse(text: str) -> str:
    return " ".join(text.split())
