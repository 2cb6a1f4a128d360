"""Writers of realistic document files (PDF, DOCX, HTML, Markdown) for tests and benchmarks.

A file is written from ``Section``s (a heading and its paragraphs) with the library a
real producer would use: fpdf2 for PDF, python-docx for DOCX, plain strings for HTML
and Markdown. Also the hostile cases a reader must refuse or report: a scanned PDF
(images, no text layer), a password-protected PDF, a DOCX zip bomb. ``hotpot_files``
lays the HotpotQA sample out as such files, one section per paragraph, its title the
heading verbatim, since the evaluation matches gold passages by title.

The same input gives the same bytes: dates and zip timestamps are fixed. PDF text is
set in DejaVu Sans (shipped inside matplotlib, a dependency, so present everywhere);
a character it lacks falls back to matplotlib's Last Resort font, which has a glyph
for every code point, so nothing is dropped from the text layer. Right-to-left text
(Arabic, Hebrew) is laid out left to right in logical order: fpdf2 reorders it only
with text shaping, which needs uharfbuzz.
"""

from __future__ import annotations

import html
import io
import json
import random
import textwrap
import zipfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib.resources import files
from pathlib import Path

import docx
import matplotlib
from fpdf import FPDF
from fpdf.fonts import TTFFont
from matplotlib.figure import Figure

# Every date a writer stamps into a file, so that the same input gives the same bytes.
FIXED_DATE = datetime(2024, 1, 1, tzinfo=UTC)
_ZIP_DATE = (2024, 1, 1, 0, 0, 0)
ENCRYPTED_PDF_PASSWORD = "hopindex"
_FONT = "dejavu"
_FALLBACK_FONT = "lastresort"

# The text of the HTML page's boilerplate, in page order: what a main-content extractor
# should leave out (the comparison benchmark measures how much of it leaks).
HTML_BOILERPLATE_TEXTS: tuple[str, ...] = (
    "We use cookies and similar technologies to personalise content and measure traffic.",
    "Accept all cookies", "Manage preferences",
    "Northwind Reference Library", "Subscribe for unlimited access",
    "Home", "Encyclopedia", "Timelines", "Quizzes", "Donate", "Sign in",
    "Related reading", "Ten forgotten lighthouses of the Baltic coast",
    "How mapmakers drew the unknown interior",
    "The weekly digest lands every Thursday morning in your inbox.",
    "Advertisement: Try Quillpoint notebooks free for thirty days.",
    "Copyright Northwind Reference Library Trust. All rights reserved.",
    "Privacy policy", "Terms of use", "Accessibility statement", "Contact the editors",
)


@dataclass(frozen=True)
class Section:
    """A heading and the text under it (paragraphs separated by a blank line)."""

    title: str
    text: str
    level: int = 1  # heading level, 1 the top

    def paragraphs(self) -> list[str]:
        return [p for p in (part.strip() for part in self.text.split("\n\n")) if p]


# Three sections that name each other (a bridge for multi-hop questions), for tests
# that need a small file of a few sections.
CURIE_SECTIONS: tuple[Section, ...] = (
    Section("Marie Curie", "Marie Curie was a physicist and chemist born in Warsaw. She "
            "shared the Nobel Prize in Physics with Pierre Curie."),
    Section("Pierre Curie", "Pierre Curie was a French physicist. He married Marie Curie in "
            "1895 and taught at the University of Paris."),
    Section("Radium", "Radium is a radioactive element that the Curies discovered in 1898, "
            "working in a leaking shed beside the School of Physics in Paris."),
)


def outline_pages(pdf: Path) -> dict[str, int]:
    """Each bookmark's title and the page (from 1) it points at, read back with PDFium:
    where a person following a citation would look."""
    import pypdfium2  # type: ignore[import-untyped]  # ships no type information

    document = pypdfium2.PdfDocument(pdf)
    try:
        return {bookmark.get_title(): bookmark.get_dest().get_index() + 1
                for bookmark in document.get_toc()}
    finally:
        document.close()


def _font_dir() -> Path:
    return Path(matplotlib.get_data_path()) / "fonts" / "ttf"


def _new_pdf(title: str | None, text: str) -> FPDF:
    """A PDF with the fonts ``text`` (all it will show) needs, titled ``title``."""
    pdf = FPDF(format="A4")
    pdf.set_creation_date(FIXED_DATE)
    fonts = _font_dir()
    pdf.add_font(_FONT, "", str(fonts / "DejaVuSans.ttf"))
    pdf.add_font(_FONT, "B", str(fonts / "DejaVuSans-Bold.ttf"))
    regular, bold = pdf.fonts[_FONT], pdf.fonts[_FONT + "B"]
    assert isinstance(regular, TTFFont) and isinstance(bold, TTFFont)  # added just above
    covered = regular.cmap.keys() & bold.cmap.keys()
    missing = sorted({ord(char) for char in text} - covered - {ord("\n")})
    if missing:
        # Only the code points needed: the whole Last Resort cmap (1.1 M code points)
        # takes fpdf2 ~2 s to load.
        pdf.add_font(_FALLBACK_FONT, "", str(fonts / "LastResortHE-Regular.ttf"),
                     unicode_range=missing)
        # exact_match=False: the fallback has no bold, and bold headings need it too.
        pdf.set_fallback_fonts([_FALLBACK_FONT], exact_match=False)
    if title is not None:
        pdf.set_title(title)
    return pdf


def _line_mm(size_pt: float) -> float:
    return size_pt * 0.3528 * 1.35  # points to mm, with 35 % leading


def write_pdf(path: Path, sections: Sequence[Section], *, title: str | None = None,
              sections_per_page: int = 3, outline: bool = True, font_size: float = 11) -> None:
    """A text PDF: a new page every ``sections_per_page`` sections, each section's heading
    in bold with its text after it (flowing onto further pages when long) and, with
    ``outline``, a bookmark of the heading verbatim at its level pointing at its page.
    ``title`` is the document's metadata title and a larger line atop page 1."""
    shown = [title or "", *(part for s in sections for part in (s.title, s.text))]
    pdf = _new_pdf(title, "".join(shown))
    pdf.add_page()
    body = _line_mm(font_size)
    if title is not None:
        pdf.set_font(_FONT, "B", font_size + 8)
        pdf.multi_cell(0, _line_mm(font_size + 8), title, new_x="LMARGIN", new_y="NEXT")
        pdf.ln(body)
    for number, section in enumerate(sections):
        if number and number % sections_per_page == 0:
            pdf.add_page()
        size = font_size + 2 * max(0, 4 - section.level)
        # A heading stranded at the foot of a page would get a bookmark to the page
        # before its text: start the page first.
        if pdf.will_page_break(_line_mm(size) + 2 * body):
            pdf.add_page()
        if outline:
            # strict=False: a level-3 heading straight after a level-1 one is allowed here.
            pdf.start_section(section.title, level=max(section.level, 1) - 1, strict=False)
        pdf.set_font(_FONT, "B", size)
        pdf.multi_cell(0, _line_mm(size), section.title, new_x="LMARGIN", new_y="NEXT")
        pdf.set_font(_FONT, "", font_size)
        for paragraph in section.paragraphs():
            pdf.multi_cell(0, body, paragraph, new_x="LMARGIN", new_y="NEXT")
            pdf.ln(body / 2)
        pdf.ln(body / 2)
    pdf.output(str(path))


def scanned_pdf(path: Path, pages: int = 2) -> None:
    """A PDF whose pages each hold only a picture (JPEG) of printed text: no text layer."""
    pdf = _new_pdf("Scanned letter", "")
    for number in range(pages):
        # Drawn with matplotlib, a dependency already, rather than Pillow directly.
        figure = Figure(figsize=(8.27, 11.69))  # A4, in inches
        axes = figure.add_axes((0, 0, 1, 1))
        axes.set_axis_off()
        axes.set_xlim(0, 1)
        axes.set_ylim(0, 1)
        lines = [f"Scanned page {number + 1} of {pages}", "", *textwrap.wrap(
            "This page was printed, signed and scanned back in, so what reads as text is "
            "only pixels. A reader finds no text layer here and must say so rather than "
            "index an empty page. " * 3, 70)]
        for row, line in enumerate(lines):
            # A scanner's skew: each line slightly tilted.
            axes.text(0.12, 0.9 - 0.025 * row, line, fontsize=11, color="0.15", rotation=0.4,
                      family="DejaVu Sans")
        # And its dust, seeded so that the bytes are the same each time.
        specks = random.Random(number)
        axes.scatter([specks.random() for _ in range(400)],
                     [specks.random() for _ in range(400)], s=0.2, color="0.5")
        image = io.BytesIO()
        figure.savefig(image, format="jpeg", dpi=150, pil_kwargs={"quality": 80})
        pdf.add_page()
        pdf.image(image, x=0, y=0, w=pdf.w, h=pdf.h)
    pdf.output(str(path))


def encrypted_pdf(path: Path, *, password: str = ENCRYPTED_PDF_PASSWORD) -> None:
    """A one-page text PDF that opens only with ``password`` (RC4: its bytes are the
    same each time, where AES draws a random initialisation vector)."""
    pdf = _new_pdf("Confidential", "")
    pdf.set_encryption(owner_password=password + "-owner", user_password=password)
    pdf.add_page()
    pdf.set_font(_FONT, "", 11)
    pdf.start_section("Confidential")
    pdf.multi_cell(0, 6, "Salary bands for the coming year are attached.",
                   new_x="LMARGIN", new_y="NEXT")
    pdf.output(str(path))


def _write_zip(path: Path, members: Mapping[str, bytes]) -> None:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(zipfile.ZipInfo(name, _ZIP_DATE), data,
                             compress_type=zipfile.ZIP_DEFLATED)


def write_docx(path: Path, sections: Sequence[Section], *, title: str | None = None) -> None:
    """A DOCX: ``title`` as the core property and a "Title" paragraph, each section a
    "Heading N" paragraph (N its level, at most 9) then its paragraphs."""
    document = docx.Document()
    properties = document.core_properties
    properties.title = title or ""
    properties.author = properties.last_modified_by = "hopindex"
    properties.created = properties.modified = FIXED_DATE
    properties.revision = 1
    if title is not None:
        document.add_heading(title, level=0)
    for section in sections:
        document.add_heading(section.title, level=min(max(section.level, 1), 9))
        for paragraph in section.paragraphs():
            document.add_paragraph(paragraph)
    buffer = io.BytesIO()
    document.save(buffer)
    # python-docx stamps each zip member with the current time: re-zip with a fixed one.
    with zipfile.ZipFile(buffer) as saved:
        members = {info.filename: saved.read(info) for info in saved.infolist()}
    _write_zip(path, members)


_DOCX_CONTENT_TYPES = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
    '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
    '<Default Extension="rels" '
    'ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
    '<Default Extension="xml" ContentType="application/xml"/>'
    '<Override PartName="/word/document.xml" ContentType="application/'
    'vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>')
_DOCX_RELS = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
    '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
    '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
    'relationships/officeDocument" Target="word/document.xml"/></Relationships>')


def zip_bomb_docx(path: Path, expanded_bytes: int = 1_000_000_000) -> None:
    """A well-formed DOCX whose word/document.xml expands to ``expanded_bytes`` or a
    little more (the default, 1 GB, packs into about 2.3 MB: a ratio near 440)."""
    namespace = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
    head = (f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
            f'<w:document xmlns:w="{namespace}"><w:body>').encode()
    tail = b"</w:body></w:document>"
    chunk = (b"<w:p><w:r><w:t>" + b"hop " * 240 + b"</w:t></w:r></w:p>") * 1024
    _write_zip(path, {"[Content_Types].xml": _DOCX_CONTENT_TYPES.encode(),
                      "_rels/.rels": _DOCX_RELS.encode()})
    with zipfile.ZipFile(path, "a", zipfile.ZIP_DEFLATED) as archive:
        member = zipfile.ZipInfo("word/document.xml", _ZIP_DATE)
        member.compress_type = zipfile.ZIP_DEFLATED
        # Streamed, so that writing the bomb never holds it in memory.
        with archive.open(member, "w", force_zip64=True) as stream:
            stream.write(head)
            written = len(head) + len(tail)
            while written < expanded_bytes:
                stream.write(chunk)
                written += len(chunk)
            stream.write(tail)


def _html_list(items: Sequence[str]) -> str:
    return "".join(f'<li><a href="/{item.lower().replace(" ", "-")}">{item}</a></li>'
                   for item in items)


def write_html(path: Path, sections: Sequence[Section], *, title: str | None = None,
               boilerplate: bool = True) -> None:
    """An HTML page: the sections inside ``<main><article>`` (``title`` as its ``<h1>``,
    a level-N section as ``<hN+1>``, at most ``<h6>``), and with ``boilerplate`` a
    cookie banner, ``<header>``, ``<nav>``, an ``<aside>`` within ``<main>``, a
    ``<footer>`` and scripts around it, whose text is ``HTML_BOILERPLATE_TEXTS``."""
    b = HTML_BOILERPLATE_TEXTS
    escaped_title = html.escape(title or "")
    article = [f"<h1>{escaped_title}</h1>"] if title is not None else []
    for section in sections:
        tag = f"h{min(max(section.level, 1) + 1, 6)}"
        article.append(f'<section>\n<{tag}>{html.escape(section.title)}</{tag}>')
        article.extend(f"<p>{html.escape(p)}</p>" for p in section.paragraphs())
        article.append("</section>")
    body = "\n".join(article)
    if not boilerplate:
        page = (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
                f"<title>{escaped_title}</title></head>\n<body><main><article>\n{body}\n"
                "</article></main></body></html>\n")
        path.write_text(page, encoding="utf-8")
        return
    page = f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{escaped_title} | {b[3]}</title>
<link rel="stylesheet" href="/static/site.css">
<style>.cookie-banner{{position:fixed;bottom:0;width:100%}} nav ul{{display:flex}}</style>
<script>window.dataLayer = window.dataLayer || [];
function gtag(){{dataLayer.push(arguments);}} gtag("js", new Date());</script>
</head>
<body>
<div class="cookie-banner" id="cookie-consent" role="dialog" aria-label="Cookie consent">
<p>{b[0]}</p><button type="button">{b[1]}</button> <button type="button">{b[2]}</button>
</div>
<header class="site-header">
<a class="logo" href="/">{b[3]}</a>
<form role="search" action="/search"><input type="search" name="q"></form>
<a class="cta" href="/subscribe">{b[4]}</a>
</header>
<nav class="main-nav" aria-label="Main"><ul>{_html_list(b[5:11])}</ul></nav>
<main>
<article>
{body}
</article>
<aside class="sidebar">
<h3>{b[11]}</h3>
<ul>{_html_list(b[12:14])}</ul>
<div class="newsletter"><p>{b[14]}</p></div>
<div class="ad" data-slot="sidebar-1"><p>{b[15]}</p></div>
</aside>
</main>
<footer class="site-footer">
<p>{b[16]}</p>
<ul>{_html_list(b[17:21])}</ul>
</footer>
<script src="/static/analytics.js" async></script>
<script>document.getElementById("cookie-consent").hidden = localStorage.consent;</script>
</body>
</html>
"""
    path.write_text(page, encoding="utf-8")


def write_markdown(path: Path, sections: Sequence[Section], *, title: str | None = None
                   ) -> None:
    """Markdown: ``# title`` when given, then each section as an ATX heading one level
    below it (``#`` per level without a title, at most six) and its paragraphs. Text
    is written verbatim, not escaped."""
    below = 1 if title is not None else 0
    lines = [f"# {title}", ""] if title is not None else []
    for section in sections:
        lines += ["#" * min(max(section.level, 1) + below, 6) + " " + section.title, ""]
        for paragraph in section.paragraphs():
            lines += [paragraph, ""]
    path.write_text("\n".join(lines), encoding="utf-8")


Writer = Callable[..., None]
WRITERS: dict[str, tuple[str, Writer]] = {
    "pdf": ("pdf", write_pdf), "docx": ("docx", write_docx),
    "html": ("html", write_html), "md": ("md", write_markdown),
}


def hotpot_records(corpus_path: Path | None = None) -> list[dict[str, str]]:
    """The paragraphs of a HotpotQA corpus file (``{title: [sentence, ...]}``, the
    bundled HotpotQA-100 one by default) as ``{"title", "text"}`` records, the text its
    sentences joined as the gold passages join them."""
    if corpus_path is None:
        raw = (files("hopindex") / "sample" / "hotpotqa-100" / "corpus.json").read_text(
            encoding="utf-8")
    else:
        raw = corpus_path.read_text(encoding="utf-8")
    corpus: dict[str, list[str]] = json.loads(raw)
    return [{"title": title, "text": "".join(sentences)}
            for title, sentences in corpus.items()]


def hotpot_files(corpus: Sequence[Mapping[str, str]], out_dir: Path, *, per_file: int = 50,
                 formats: Sequence[str] = ("pdf",)) -> list[Path]:
    """``corpus`` records ``{"title", "text"}`` in files of ``per_file`` paragraphs each
    (``hotpot-0000.pdf``, ...), one section per paragraph headed by its title verbatim,
    in each of ``formats`` (pdf, docx, html, md); no document title, which would be a
    heading of its own. The paths written, file by file in ``formats`` order."""
    unknown = [name for name in formats if name not in WRITERS]
    if unknown:
        raise ValueError(f"unknown formats {unknown}; known: {sorted(WRITERS)}")
    if per_file < 1:
        raise ValueError(f"per_file must be at least 1, not {per_file}")
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for number, start in enumerate(range(0, len(corpus), per_file)):
        sections = [Section(record["title"], record["text"])
                    for record in corpus[start:start + per_file]]
        for name in formats:
            extension, writer = WRITERS[name]
            path = out_dir / f"hotpot-{number:04d}.{extension}"
            writer(path, sections)
            written.append(path)
    return written
