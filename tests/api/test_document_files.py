"""Document files end to end through the CLI and the local client: a folder of PDF,
DOCX, HTML and Markdown files, with one file of every kind the readers refuse, read
by ``hopindex ingest`` into an extractive index; what the job lists, what the index
holds, the citations queries show, ``--include``/``--exclude``/``--split-by`` and an
export carried to another data dir."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pypdfium2 as pdfium  # type: ignore[import-untyped]
import pytest
from click.testing import CliRunner, Result

from hopindex.api.cli import main
from hopindex.api.exit_codes import ExitCode
from hopindex.core.citations import Citation
from hopindex.core.models import Document, JobState
from hopindex.core.settings import Settings
from hopindex.readers import Reading, SplitBy
from hopindex.testing.document_files import (
    CURIE_SECTIONS,
    HTML_BOILERPLATE_TEXTS,
    Section,
    encrypted_pdf,
    scanned_pdf,
    write_docx,
    write_html,
    write_markdown,
    write_pdf,
    zip_bomb_docx,
)
from tests.conftest import ClientFactory, local_client

pytestmark = pytest.mark.integration

INDEX = "docs"
# Low, so that a page of a few kilobytes is over it (the default is 20 MB).
HTML_LIMIT = 8_000

CURIES = list(CURIE_SECTIONS)
POLAND = [
    Section("Poland", "Poland is a country in Central Europe. Its capital is Warsaw."),
    Section("Vistula", "The Vistula is the longest river of Poland and flows through Warsaw."),
]
PARIS = [
    Section("Sorbonne", "The Sorbonne is a university building in the Latin Quarter of Paris "
            "where Marie Curie taught."),
    Section("Seine", "The Seine is the river that crosses Paris from east to west."),
]
NOBEL_PREAMBLE = "The Nobel Prizes are awarded each year in Stockholm and Oslo."
NOBEL_MD = (f"# Nobel Prizes\n\n{NOBEL_PREAMBLE}\n\n"
            "## Chemistry\n\nMarie Curie received the Nobel Prize in Chemistry in 1911.\n\n"
            "## Peace\n\nThe Nobel Peace Prize is awarded in Oslo.\n")

# Every document the folder's good files give: id (its path in the folder, then the
# section's slug; a preamble's id is the path alone), title.
GOOD = {
    "curies.pdf#marie-curie": "Marie Curie",
    "curies.pdf#pierre-curie": "Pierre Curie",
    "curies.pdf#radium": "Radium",
    "mixed.pdf#tungsten": "Tungsten",
    "mixed.pdf#osmium": "Osmium",
    "reports/poland.docx#poland": "Poland",
    "reports/poland.docx#vistula": "Vistula",
    "paris.html#sorbonne": "Sorbonne",
    "paris.html#seine": "Seine",
    "nobel.md": "Nobel Prizes",
    "nobel.md#chemistry": "Chemistry",
    "nobel.md#peace": "Peace",
}
BAD_MD = b"# Notes\n\nCaf\xff is not UTF-8.\n"
BAD_BYTE_AT = BAD_MD.index(0xFF)


def bad_reasons(folder: Path) -> dict[str, str]:
    """Where (the file's path in the folder; ``:page N`` for one page) to the start
    of the reason the job must give."""
    big = folder / "big.html"
    return {
        "scan.pdf": "no text layer on any of its 2 pages — scanned? OCR is not supported",
        "locked.pdf": "encrypted PDF: remove its password to ingest it",
        "bomb.docx": "zip expands to ",
        "menu.html": "no main content found: the page holds only navigation or boilerplate",
        "fake.pdf": "named '.pdf' but holds text in no format hopindex reads",
        "image.bin": "unsupported file type '.bin' (a PNG image)",
        "half.pdf": "not a readable PDF (corrupt or truncated): ",
        "bad.md": f"invalid UTF-8 at byte offset {BAD_BYTE_AT}",
        "big.html": (f"file is {big.stat().st_size:,} bytes, over the {HTML_LIMIT:,}-byte "
                     "limit for an HTML file (HOPINDEX_MAX_HTML_BYTES)"),
        "mixed.pdf:page 2": "no text layer — scanned? OCR is not supported",
    }


def write_corpus(folder: Path) -> Path:
    """The good files (a PDF of 3 sections on 2 pages, a DOCX in a subfolder, an HTML
    page in its site's boilerplate, Markdown with a preamble, a PDF whose second page
    is a scan) and one file of every kind refused."""
    (folder / "reports").mkdir(parents=True)
    write_pdf(folder / "curies.pdf", CURIES, sections_per_page=2)
    write_docx(folder / "reports" / "poland.docx", POLAND, title="Poland notes")
    write_html(folder / "paris.html", PARIS, title="Paris")
    (folder / "nobel.md").write_text(NOBEL_MD, encoding="utf-8")
    mixed_pdf(folder / "mixed.pdf", folder.parent)
    scanned_pdf(folder / "scan.pdf", pages=2)
    encrypted_pdf(folder / "locked.pdf")
    # 2 MB of XML in a few kilobytes: over the 100:1 ratio for a member over 1 MiB.
    zip_bomb_docx(folder / "bomb.docx", expanded_bytes=2_000_000)
    links = "".join(f"<li><a href='/s{i}'>Section {i}</a></li>" for i in range(20))
    (folder / "menu.html").write_text(
        f"<!DOCTYPE html><html><head><title>Menu</title></head><body><nav><ul>{links}</ul>"
        "</nav><footer><a href='/a'>About</a> <a href='/c'>Contact</a></footer></body></html>")
    (folder / "fake.pdf").write_text("Only words here, and no PDF at all.\n")
    (folder / "image.bin").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(64))
    whole = (folder / "curies.pdf").read_bytes()
    (folder / "half.pdf").write_bytes(whole[:len(whole) // 2])
    (folder / "bad.md").write_bytes(BAD_MD)
    write_html(folder / "big.html", [Section("Long", "A long paragraph about Lyon. " * 400)],
               title="Big")
    assert (folder / "paris.html").stat().st_size < HTML_LIMIT < (folder / "big.html").stat(
    ).st_size
    return folder


def mixed_pdf(path: Path, scratch: Path) -> None:
    """A text page of two sections followed by a scanned page (a report with its signed
    page scanned back in): the scan is reported by its page, the text is kept."""
    write_pdf(path, [Section("Tungsten", "Tungsten has the highest melting point of all "
                                         "metals."),
                     Section("Osmium", "Osmium is the densest element found in nature.")])
    scan = scratch / "scan-page.pdf"
    scanned_pdf(scan, pages=1)
    document, scanned = pdfium.PdfDocument(path.read_bytes()), pdfium.PdfDocument(scan)
    try:
        document.import_pages(scanned)
        document.save(path)
    finally:
        scanned.close()
        document.close()


def invoke(cli: CliRunner, *args: str, code: int = ExitCode.OK) -> Result:
    result = cli.invoke(main, list(args))
    assert result.exit_code == code, result.output
    return result


def run_json(cli: CliRunner, *args: str, code: int = ExitCode.OK) -> Any:
    return json.loads(invoke(cli, *args, code=code).stdout)


def runner(data_dir: Path) -> CliRunner:
    return CliRunner(env={"HOPINDEX_DATA_DIR": str(data_dir),
                          "HOPINDEX_MAX_HTML_BYTES": str(HTML_LIMIT)})


def stored(data_dir: Path, index: str) -> dict[str, Document]:
    """The documents the index holds, by id, read from its state store."""
    with local_client(Settings(data_dir=data_dir).resolved()) as client:
        state = client.service.backends.state
        return {d.doc_id: d for d in state.get_documents(index, sorted(
            state.document_hashes(index)))}


def query(cli: CliRunner, question: str, *extra: str, index: str = INDEX) -> Any:
    """``query --json``: 5 passages unless ``extra`` says otherwise."""
    return run_json(cli, "query", "--index", index, "--json", "--k", "5", *extra, question)


def passage_of(result: Any, doc_id: str) -> Any:
    found = [p for p in result["passages"] if p["doc_id"] == doc_id]
    assert found, f"{doc_id} not among {[p['doc_id'] for p in result['passages']]}"
    return found[0]


@dataclass
class Built:
    cli: CliRunner
    data_dir: Path
    folder: Path
    job: dict[str, Any]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    """The folder ingested once by ``hopindex ingest --json`` (exit 3: some files
    failed) into index ``docs``; the tests only read it, or write other indexes."""
    root = tmp_path_factory.mktemp("document-files")
    folder = write_corpus(root / "docs")
    cli = runner(root / "data")
    job = run_json(cli, "ingest", "--index", INDEX, "--json", str(folder),
                   code=ExitCode.PARTIAL)
    yield Built(cli, root / "data", folder, job)


RADIUM_QUESTION = "Which radioactive element did the Curies discover in a leaking shed?"
RADIUM_CITATION = {"file": "curies.pdf", "page": 2, "page_end": 2, "section": "Radium"}


def test_each_good_section_is_a_document_with_its_id_and_title(built: Built) -> None:
    """Exit 3, the job succeeded; every section of the good files (the DOCX in a
    subfolder, the Markdown's preamble, the mixed PDF's text page) is a document with
    the expected id and title and its file's layout, and none of the refused files
    left one. The HTML page's boilerplate is in no document."""
    assert built.job["state"] == JobState.SUCCEEDED.value
    documents = stored(built.data_dir, INDEX)
    assert {i: d.title for i, d in documents.items()} == GOOD
    assert built.job["counts"]["validate"]["done"] == len(GOOD)
    assert built.job["counts"]["extractive.stage1"]["done"] == len(GOOD)
    assert documents["nobel.md"].text == NOBEL_PREAMBLE
    radium = documents["curies.pdf#radium"].metadata["hopindex"]
    assert (radium["file"], radium["format"], radium["section"], radium["pages"]) == (
        "curies.pdf", "PDF", "Radium", [2, 2])
    assert radium["origin"] == str(built.folder / "curies.pdf")
    docx = documents["reports/poland.docx#vistula"].metadata["hopindex"]
    assert (docx["file"], docx["format"], docx["section"]) == (
        "reports/poland.docx", "DOCX", "Vistula")
    texts = "\n".join(d.text for d in documents.values())
    leaked = [t for t in HTML_BOILERPLATE_TEXTS if t in texts]
    assert not leaked


def test_the_job_lists_each_bad_file_with_its_reason(built: Built) -> None:
    """Every refused file is one validate error naming it (and the page, for the
    scanned page of a PDF whose other page is read) with its reason; ``hopindex jobs
    JOB --json`` shows the same errors as the ingest's own output."""
    expected = bad_reasons(built.folder)
    errors = built.job["errors"]
    prefix = f"{built.folder}/"
    found = {e["where"].removeprefix(prefix): e for e in errors}
    assert sorted(found) == sorted(expected), errors
    for where, reason in expected.items():
        error = found[where]
        assert error["stage"] == "validate"
        assert error["item"] == error["where"] == prefix + where
        assert error["reason"].startswith(reason), (where, error["reason"])
    assert "HOPINDEX_MAX_ZIP_RATIO=100" in found["bomb.docx"]["reason"]
    assert built.job["counts"]["validate"]["failed"] == len(expected)
    shown = run_json(built.cli, "jobs", built.job["job_id"], "--json")
    assert shown["errors"] == errors
    assert shown["state"] == JobState.SUCCEEDED.value


def test_query_json_cites_the_file_page_and_section(built: Built) -> None:
    """``query --json``: the PDF section answering the question carries its citation
    (file in the folder, page, section); a DOCX or HTML section's has no page."""
    result = query(built.cli, RADIUM_QUESTION)
    assert passage_of(result, "curies.pdf#radium")["citation"] == RADIUM_CITATION
    poland = query(built.cli, "Which river flows through Warsaw?", "--method", "naive")
    assert passage_of(poland, "reports/poland.docx#vistula")["citation"] == {
        "file": "reports/poland.docx", "page": None, "page_end": None, "section": "Vistula"}
    for passage in result["passages"] + poland["passages"]:
        assert passage["citation"] is not None
        assert passage["citation"]["file"] == passage["doc_id"].partition("#")[0]


def test_plain_query_shows_the_citation_line(built: Built) -> None:
    """The plain ``query`` output shows ``[file, p. N, § Section]`` under the passage."""
    shown = invoke(built.cli, "query", "--index", INDEX, "--k", "5", RADIUM_QUESTION).stdout
    lines = shown.splitlines()
    at = next(n for n, line in enumerate(lines) if "(doc curies.pdf#radium," in line)
    assert lines[at + 1].strip() == "[curies.pdf, p. 2, § Radium]"


def test_include_and_exclude_choose_the_folders_files(built: Built, tmp_path: Path) -> None:
    """``--include '*.pdf' --exclude 'drafts/*'``: only the PDFs outside drafts/ are
    read (``*`` crossing folders); a folder none of whose files is chosen is an error
    that says the globs chose nothing."""
    folder = tmp_path / "chosen"
    (folder / "papers").mkdir(parents=True)
    (folder / "drafts").mkdir()
    write_pdf(folder / "papers" / "curies.pdf", CURIES[:2])
    write_pdf(folder / "drafts" / "radium.pdf", CURIES[2:])
    write_markdown(folder / "notes.md", POLAND)
    job = run_json(built.cli, "ingest", "--index", "chosen", "--json", "--include", "*.pdf",
                   "--exclude", "drafts/*", str(folder))
    assert job["errors"] == []
    assert sorted(stored(built.data_dir, "chosen")) == [
        "papers/curies.pdf#marie-curie", "papers/curies.pdf#pierre-curie"]
    refused = invoke(built.cli, "ingest", "--index", "chosen", "--json", "--include",
                     "*.docx", str(folder), code=ExitCode.DATA_ERROR)
    assert "holds no files matching --include/--exclude" in refused.output


def test_the_dry_run_reads_with_the_same_choices(built: Built) -> None:
    """``ingest --dry-run`` with ``--split-by page --include --exclude`` counts the
    documents those choices give (two PDFs' pages) and lists the chosen file refused,
    writing nothing."""
    plan = run_json(built.cli, "ingest", "--index", "planned", "--dry-run", "--json",
                    "--split-by", "page", "--include", "*.pdf", "--exclude", "scan.pdf",
                    "--exclude", "half.pdf", "--exclude", "fake.pdf", str(built.folder))
    assert plan["documents"]["new"] == 3  # curies.pdf's 2 pages, mixed.pdf's text page
    assert [e["reason"] for e in plan["errors"]] == [
        bad_reasons(built.folder)["locked.pdf"], bad_reasons(built.folder)["mixed.pdf:page 2"]]
    assert not plan["index_exists"]
    assert stored(built.data_dir, "planned") == {}


def test_split_by_page_makes_one_document_per_page(built: Built) -> None:
    """``--split-by page``: a PDF named alone is one document per page (``#page-N``,
    titled by the file and page), and a query cites the page."""
    run_json(built.cli, "ingest", "--index", "pages", "--json", "--split-by", "page",
             str(built.folder / "curies.pdf"))
    documents = stored(built.data_dir, "pages")
    assert {i: d.title for i, d in documents.items()} == {
        "curies.pdf#page-1": "curies, page 1", "curies.pdf#page-2": "curies, page 2"}
    assert "Pierre Curie" in documents["curies.pdf#page-1"].text
    result = query(built.cli, RADIUM_QUESTION, "--method", "naive", index="pages")
    assert result["passages"][0]["doc_id"] == "curies.pdf#page-2"
    citation = result["passages"][0]["citation"]
    assert (citation["file"], citation["page"], citation["page_end"]) == ("curies.pdf", 2, 2)


def test_export_then_import_keeps_the_citations(built: Built, tmp_path: Path) -> None:
    """An index exported and imported into another data dir answers with the same
    passages and the same citations, and ingesting the same folder there again
    recomputes nothing."""
    exported = tmp_path / "docs.jsonl.gz"
    run_json(built.cli, "export", "--index", INDEX, str(exported))
    target = runner(tmp_path / "target")
    run_json(target, "import", str(exported))
    for question in (RADIUM_QUESTION, "Where did Marie Curie teach?"):
        # Every passage (k over the index's size): equal fused scores may come in
        # either order.
        before, after = (query(cli, question, "--k", "50") for cli in (built.cli, target))
        assert len(after["passages"]) == len(GOOD)
        assert {p["doc_id"]: p["citation"] for p in after["passages"]} == {
            p["doc_id"]: p["citation"] for p in before["passages"]}
    assert passage_of(query(target, RADIUM_QUESTION), "curies.pdf#radium")["citation"] == (
        RADIUM_CITATION)
    # The imported documents keep what they were read from: the folder ingested again
    # there is all unchanged (its bad files refused again), and deletes nothing.
    again = run_json(target, "ingest", "--index", INDEX, "--json", str(built.folder),
                     code=ExitCode.PARTIAL)
    assert again["counts"]["extractive.stage1"]["skipped"] == len(GOOD)
    assert again["counts"]["extractive.stage1"]["done"] == 0
    assert again["units_embedded"] == 0
    assert sorted(stored(tmp_path / "target", INDEX)) == sorted(GOOD)


def test_a_page_of_only_site_boilerplate_is_refused(tmp_path: Path) -> None:
    """A page whose article is empty, with only its site's cookie banner, header,
    navigation, sidebar and footer around it, has no main content: the dry run lists
    it as refused and exits 65 (nothing usable), instead of indexing the banner."""
    page = tmp_path / "empty.html"
    write_html(page, [], title="Coming soon")
    cli = runner(tmp_path / "data")
    result = cli.invoke(main, ["ingest", "--index", "x", "--dry-run", "--json", str(page)])
    assert result.exit_code == ExitCode.DATA_ERROR, result.output
    plan = json.loads(result.stdout)
    assert [e["reason"] for e in plan["errors"]] == [
        "no main content found: the page holds only navigation or boilerplate"]


def test_the_local_client_reads_files_with_the_reading_given(built: Built,
                                                             make_client: ClientFactory
                                                             ) -> None:
    """``Client.local``: ``plan_ingest`` and ``ingest`` take the same ``Reading``:
    the plan counts the documents the choices give, the ingest makes them (a whole
    file one document with ``SplitBy.FILE``), and query results carry a ``Citation``
    whose label names the file, pages and section."""
    client = make_client()
    reading = Reading(split_by=SplitBy.FILE, include=("*.pdf", "*.md"),
                      exclude=("mixed.pdf", "half.pdf", "scan.pdf", "locked.pdf",
                               "fake.pdf", "bad.md"))
    plan = client.plan_ingest("files", [built.folder], reading=reading)
    assert plan.documents["new"] == 2 and plan.errors == []
    job = client.ingest("files", [built.folder], reading=reading)
    assert job.state is JobState.SUCCEEDED and job.errors == []
    state = client.service.backends.state
    documents = state.get_documents("files", sorted(state.document_hashes("files")))
    assert {d.doc_id: d.title for d in documents} == {"curies.pdf": "curies",
                                                      "nobel.md": "Nobel Prizes"}
    result = client.query("files", RADIUM_QUESTION, method="naive", k=2)
    top = result.passages[0]
    assert top.doc_id == "curies.pdf"
    assert isinstance(top.citation, Citation)
    assert top.citation.file == "curies.pdf"
    assert top.citation.label().startswith("curies.pdf, p. ")
