"""The HTML parser: a page's main content as heading and body blocks, its boilerplate
(navigation, header, footer, sidebar, cookie banner) dropped, its encoding read as a
browser would and refused, naming the byte, when the bytes do not fit it."""

from __future__ import annotations

import codecs
from pathlib import Path

import pytest

from hopindex.readers.files.html import parse_html
from hopindex.readers.files.model import (
    Block,
    FileInput,
    PageProblem,
    ParsedFile,
    UnreadableFileError,
)
from hopindex.readers.options import FileLimits

NAV_WORDS = ["World", "Politics", "Business", "Technology", "Science", "Health", "Sports"]
HEADER = (
    "<header><a href='/'>The Daily Example</a><nav><ul>"
    + "".join(f"<li><a href='/{word}'>{word}</a></li>" for word in NAV_WORDS)
    + "</ul></nav></header>"
)
COOKIES = (
    "<div id='cookie-banner' class='cookie-consent'><p>We use cookies to improve your "
    "experience and to show you relevant advertising.</p><button>Accept all</button></div>"
)
ASIDE = (
    "<aside class='sidebar'><h3>Most read</h3><ul>"
    + "".join(f"<li><a href='/r{i}'>Another headline number {i}</a></li>" for i in range(5))
    + "</ul><p>Get the best stories in your inbox.</p><button>Subscribe</button></aside>"
)
FOOTER = (
    "<footer><ul><li><a href='/about'>About us</a></li><li><a href='/privacy'>Privacy "
    "policy</a></li></ul><p>&copy; 2024 The Daily Example Media Group.</p></footer>"
)
SENTENCE = (
    "Engineers removed the old weir in stages while volunteers planted willows along "
    "three kilometres of bank to shade the shallows where young fish feed."
)
ARTICLE = (
    "<article><h1>Salmon return to the valley</h1>"
    f"<p>{SENTENCE}</p><h2>How the weir came down</h2><p>First: {SENTENCE}</p>"
    f"<p>Second: {SENTENCE}</p><h2>Counting the fish</h2><p>Biologists counted them.</p>"
    "<table><tr><th>Year</th><th>Salmon</th></tr><tr><td>2022</td><td>48</td></tr>"
    "<tr><td>2023</td><td>131</td></tr></table></article>"
)


def page(body: str, head: str = "<title>Salmon | The Daily Example</title>") -> str:
    return f"<!DOCTYPE html><html><head>{head}</head><body>{body}</body></html>"


NEWS_PAGE = page(f"{COOKIES}{HEADER}<main>{ARTICLE}</main>{ASIDE}{FOOTER}")


def parse_bytes(tmp_path: Path, data: bytes) -> ParsedFile:
    path = tmp_path / "page.html"
    path.write_bytes(data)
    return parse_html(FileInput(path, path.name, data[:8192]), FileLimits())


def blocks_of(parsed: ParsedFile) -> list[Block]:
    blocks = list(parsed.blocks)
    assert not any(isinstance(block, PageProblem) for block in blocks)
    return [block for block in blocks if isinstance(block, Block)]


def text_of(parsed: ParsedFile) -> str:
    return "\n".join(block.text for block in blocks_of(parsed))


def refusal(tmp_path: Path, data: bytes) -> str:
    with pytest.raises(UnreadableFileError) as caught:
        parse_bytes(tmp_path, data)
    return caught.value.reason


def test_boilerplate_is_dropped_and_the_article_kept_with_its_heading_levels(
    tmp_path: Path,
) -> None:
    """Of a news page, the article's headings come out as headings of their levels and
    its paragraphs as body text; the navigation, header, footer, sidebar and cookie
    banner are not in any block."""
    parsed = parse_bytes(tmp_path, NEWS_PAGE.encode())
    assert parsed.format_name == "HTML"
    assert parsed.pages is None
    assert parsed.heading_levels == (1, 2, 2)
    blocks = blocks_of(parsed)
    assert [(b.text, b.heading_level) for b in blocks if b.is_heading] == [
        ("Salmon return to the valley", 1),
        ("How the weir came down", 2),
        ("Counting the fish", 2),
    ]
    assert blocks[1] == Block(SENTENCE)
    assert blocks[3] == Block(f"First: {SENTENCE}\n\nSecond: {SENTENCE}")
    text = text_of(parsed)
    for boilerplate in [*NAV_WORDS, "Daily Example", "cookies", "Most read", "headline",
                        "Subscribe", "inbox", "Privacy", "Media Group"]:
        assert boilerplate not in text


def test_a_table_becomes_one_row_per_line(tmp_path: Path) -> None:
    """An HTML table in the article is body text with one Markdown row per table row."""
    rows = text_of(parse_bytes(tmp_path, NEWS_PAGE.encode())).split("\n")
    assert [row.strip() for row in rows if row.startswith("| 20")] == [
        "| 2022 | 48 |",
        "| 2023 | 131 |",
    ]
    assert any(row.strip() == "| Year | Salmon |" for row in rows)


def test_a_page_of_only_navigation_is_refused(tmp_path: Path) -> None:
    """A page whose only text is menus of links is refused as having no main content."""
    links = "".join(f"<li><a href='/s{i}'>Section {i}</a></li>" for i in range(20))
    data = page(f"{HEADER}<nav><ul>{links}</ul></nav>{FOOTER}").encode()
    assert refusal(tmp_path, data) == (
        "no main content found: the page holds only navigation or boilerplate")


def test_a_page_holding_only_its_own_title_is_refused(tmp_path: Path) -> None:
    """An empty article under the page's title ("Coming soon"), menus around it: the
    title alone is not content."""
    data = page(f"{HEADER}<article><h1>Coming soon</h1></article>{FOOTER}",
                head="<title>Coming soon | The Daily Example</title>")
    assert refusal(tmp_path, data.encode()).startswith("no main content found")


def test_a_tiny_menu_page_is_refused(tmp_path: Path) -> None:
    """Two links and nothing else (trafilatura returns their texts) are refused too."""
    data = b"<html><body><nav><a href='/'>Home</a><a href='/b'>B</a></nav></body></html>"
    assert refusal(tmp_path, data).startswith("no main content found")


def test_a_short_notice_keeps_its_text_and_loses_the_menu_around_it(tmp_path: Path) -> None:
    """A one-sentence notice is kept; the menu lines trafilatura brings in around a
    short text are dropped."""
    notice = "Water will be off on Elm Street from 8 to 11 am on Friday."
    data = page(f"{HEADER}<div class='x'><h2>Water outage</h2><p>{notice}</p></div>{FOOTER}")
    text = text_of(parse_bytes(tmp_path, data.encode()))
    assert notice in text
    assert "Water outage" in text
    for word in NAV_WORDS:
        assert word not in text


def test_a_short_article_keeps_its_headings(tmp_path: Path) -> None:
    """A page with one short section still has its headings as headings (so it splits
    by section): trafilatura's own minimum size would flatten them into lines."""
    body = ("<article><h1>Nobel</h1><section><h2>Nobel Prize</h2><p>The Nobel Prize in "
            "Physics 1903 went to Becquerel and the Curies.</p></section></article>")
    parsed = parse_bytes(tmp_path, page(f"{HEADER}<main>{body}</main>{FOOTER}").encode())
    assert parsed.heading_levels == (1, 2)
    blocks = list(parsed.blocks)
    assert [(b.text, b.heading_level) for b in blocks[:2]] == [("Nobel", 1), ("Nobel Prize", 2)]


def test_a_declared_windows_1252_page_is_decoded_by_it(tmp_path: Path) -> None:
    """A page declaring windows-1252 (or ISO-8859-1, which browsers read as
    windows-1252) has its bytes decoded so: E9 is é and 80 is the euro sign."""
    body = f"<article><h1>Menu</h1><p>{SENTENCE}</p><p>Un caf\xe9 co\xfbte 2 \x80.</p></article>"
    for meta in ["<meta charset='windows-1252'>",
                 '<meta http-equiv="Content-Type" content="text/html; charset=ISO-8859-1">']:
        data = page(body, head=f"{meta}<title>Caf\xe9</title>").encode("latin-1")
        parsed = parse_bytes(tmp_path, data)
        assert "Un café coûte 2 €." in text_of(parsed)
        assert parsed.title == "Café"


def test_invalid_utf8_without_a_declaration_names_the_byte_offset(tmp_path: Path) -> None:
    """An undeclared page is UTF-8; a byte that is not is refused by its offset, with
    how to declare the page's real encoding."""
    data = page(f"<p>{SENTENCE}</p><p>caf\xe9</p>").encode("latin-1")
    offset = data.index(b"\xe9")
    assert refusal(tmp_path, data) == (
        f"invalid UTF-8 at byte offset {offset}; declare the page's encoding with "
        "<meta charset=...>")


def test_bytes_invalid_in_the_declared_charset_name_it(tmp_path: Path) -> None:
    """A page declaring UTF-8 with a byte that is not UTF-8 is refused naming the
    declared charset and the byte's offset."""
    data = page(f"<p>{SENTENCE} caf\xe9</p>", head="<meta charset=utf-8>").encode("latin-1")
    offset = data.index(b"\xe9")
    assert refusal(tmp_path, data) == (
        f"invalid utf-8 at byte offset {offset}, though the page declares charset=utf-8; "
        "declare its real encoding with <meta charset=...>")


@pytest.mark.parametrize("bom, codec", [(codecs.BOM_UTF16_LE, "utf-16-le"),
                                        (codecs.BOM_UTF16_BE, "utf-16-be")])
def test_utf16_with_a_bom_is_decoded(tmp_path: Path, bom: bytes, codec: str) -> None:
    """A UTF-16 page opening with its byte order mark is read in that byte order."""
    html = page(f"<article><h1>Grüße</h1><p>Schöne Grüße. {SENTENCE}</p></article>",
                head="<title>Grüße</title>")
    parsed = parse_bytes(tmp_path, bom + html.encode(codec))
    assert parsed.title == "Grüße"
    assert "Schöne Grüße." in text_of(parsed)


def test_bad_utf16_after_a_bom_names_the_byte_offset(tmp_path: Path) -> None:
    """A UTF-16 page with a lone surrogate is refused at that byte's offset, the
    byte order mark named as the reason UTF-16 was read."""
    html = page(f"<p>{SENTENCE}</p>").encode("utf-16-le")
    data = codecs.BOM_UTF16_LE + html + b"\x00\xd8" + "<p>more</p>".encode("utf-16-le")
    assert refusal(tmp_path, data) == (
        f"invalid UTF-16 at byte offset {2 + len(html)} "
        "(the file opens with a UTF-16 byte order mark)")


def test_an_unknown_declared_charset_is_refused_by_name(tmp_path: Path) -> None:
    """A charset no codec knows is refused, naming the label the page declares."""
    data = page(f"<p>{SENTENCE}</p>", head="<meta charset='klingon-8'>").encode()
    assert refusal(tmp_path, data).startswith(
        "unknown character encoding 'klingon-8' declared in the page")


def test_the_title_element_is_the_title_whitespace_collapsed(tmp_path: Path) -> None:
    """The page's <title>, its whitespace collapsed, is the file's title; without one,
    its og:title; without either, None."""
    titled = page(ARTICLE, head="<title>\n  Salmon   return\n</title>").encode()
    assert parse_bytes(tmp_path, titled).title == "Salmon return"
    og = page(ARTICLE, head="<meta property='og:title' content='From OG'>").encode()
    assert parse_bytes(tmp_path, og).title == "From OG"
    assert parse_bytes(tmp_path, page(ARTICLE, head="").encode()).title is None


def test_a_fragment_without_an_html_tag_is_read(tmp_path: Path) -> None:
    """A file holding only body markup (no <html> tag, which trafilatura would refuse
    on its own) gives its text."""
    parsed = parse_bytes(tmp_path, b"<p>Only one paragraph in this file.</p>")
    assert text_of(parsed) == "Only one paragraph in this file."
