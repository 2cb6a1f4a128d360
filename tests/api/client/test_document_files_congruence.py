"""Document files through ``Client.local`` and ``Client.connect`` alike (conftest.py):
a folder's PDF, DOCX, HTML and Markdown files read into the same documents (the
remote client uploads them, the server reads them), the ``Reading`` choices honoured
alike (the remote client uploads only the files ``include``/``exclude`` select, and
gives ``split_by`` to the server as a query parameter), the same citations in query
results and in a document read by id, a refused file listed alike, and a changed
file replacing its sections alike."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hopindex import Client
from hopindex.api.client.http_wire import Transport, multipart_body, uploads_for
from hopindex.core.citations import RESERVED_METADATA_KEY, Citation
from hopindex.core.models import Job, JobState
from hopindex.readers import Reading, SplitBy
from hopindex.testing.document_files import (
    CURIE_SECTIONS,
    Section,
    encrypted_pdf,
    write_docx,
    write_html,
    write_markdown,
    write_pdf,
)
from tests.api.client.conftest import Pair, Served, assert_alike, normal

pytestmark = pytest.mark.integration

CURIES = list(CURIE_SECTIONS)
NOBEL = [
    Section("Chemistry", "Marie Curie received the Nobel Prize in Chemistry in 1911."),
    Section("Peace", "The Nobel Peace Prize is awarded in Oslo, not in Stockholm."),
]
POLAND = [Section("Vistula", "The Vistula is the longest river of Poland and flows "
                  "through Warsaw.")]
PARIS = [Section("Sorbonne", "The Sorbonne is a university building in the Latin Quarter "
                 "of Paris where Marie Curie taught."),
         Section("Seine", "The Seine is the river that crosses Paris.")]

PDF_IDS = ["curies.pdf#marie-curie", "curies.pdf#pierre-curie", "curies.pdf#radium"]
ALL_IDS = sorted([*PDF_IDS, "notes/nobel.md#chemistry", "notes/nobel.md#peace",
                  "poland.docx", "paris.html#sorbonne", "paris.html#seine"])
LOCKED = "encrypted PDF: remove its password to ingest it"
RADIUM_QUESTION = "Which radioactive element did the Curies discover in a leaking shed?"


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A PDF (3 sections on 2 pages), Markdown in a subfolder, a DOCX of one section,
    an HTML page in its site's boilerplate, and a password-protected PDF."""
    folder = tmp_path_factory.mktemp("document-files") / "files"
    (folder / "notes").mkdir(parents=True)
    write_pdf(folder / "curies.pdf", CURIES, sections_per_page=2)
    write_markdown(folder / "notes" / "nobel.md", NOBEL, title="Nobel Prizes")
    write_docx(folder / "poland.docx", POLAND)
    write_html(folder / "paris.html", PARIS, title="Paris")
    encrypted_pdf(folder / "locked.pdf")
    return folder


@pytest.fixture(scope="module")
def uploaded(pair: Pair, folder: Path) -> tuple[Job, Job]:
    """The whole folder ingested into index ``files`` through each client."""
    return pair.both(lambda c: c.ingest("files", [folder]))


def document_ids(client: Client, index: str) -> list[str]:
    """Every document of a small index: the passages of a naive query for many."""
    result = client.query(index, "Curie", method="naive", k=50)
    return sorted({p.doc_id for p in result.passages})


def without_errors(job: Job) -> Any:
    return {k: v for k, v in normal(job).items() if k != "errors"}


def assert_jobs_alike(jobs: tuple[Job, Job], refused: dict[str, str]) -> None:
    """The jobs are equal but for where their errors say the files were (a path given
    locally, an upload's name remotely), and both list each of ``refused`` (a file's
    path in the folder, to its reason) as a validate error."""
    local, remote = jobs
    assert_alike(without_errors(local), without_errors(remote))
    assert local.state is JobState.SUCCEEDED
    for job in jobs:
        found = sorted((e.item.rsplit("files/", 1)[-1], e.stage, e.reason) for e in job.errors)
        assert found == sorted((name, "validate", reason) for name, reason in refused.items())
    assert [e.item for e in remote.errors] == sorted(refused)


def test_every_format_uploads_into_the_same_documents(pair: Pair, folder: Path,
                                                      uploaded: tuple[Job, Job]) -> None:
    """The folder read here and uploaded there gives the same documents (ids from the
    paths inside the folder, the subfolder's included), the same counts, and the
    encrypted PDF listed on both jobs with the same reason."""
    assert_jobs_alike(uploaded, {"locked.pdf": LOCKED})
    assert uploaded[0].counts["validate"].done == len(ALL_IDS)
    assert pair.same(lambda c: document_ids(c, "files")) == ALL_IDS


def citations(client: Client, index: str, question: str, method: str) -> dict[str, Any]:
    """Each passage's citation, by document, in the answer to ``question`` with a ``k``
    over the index's size (the test embeddings tie at the tail, in no set order)."""
    result = client.query(index, question, method=method, k=50)
    return {p.doc_id: p.citation for p in result.passages}


@pytest.mark.parametrize("method", ["naive", "extractive", "hops"])
def test_query_results_carry_the_same_citations(pair: Pair, uploaded: tuple[Job, Job],
                                                method: str) -> None:
    """Every LLM-free method answers with the same citations from both: the PDF
    section's file, page and section; the HTML and Markdown sections' file and section
    without a page; a DOCX without headings, its file alone."""
    cited = pair.same(lambda c: citations(c, "files", RADIUM_QUESTION, method))
    assert cited["curies.pdf#radium"] == Citation("curies.pdf", 2, 2, "Radium")
    assert cited["curies.pdf#marie-curie"] == Citation("curies.pdf", 1, 1, "Marie Curie")
    assert cited["paris.html#sorbonne"] == Citation("paris.html", None, None, "Sorbonne")
    assert cited["notes/nobel.md#chemistry"] == Citation("notes/nobel.md", None, None,
                                                         "Chemistry")
    assert cited["poland.docx"] == Citation("poland.docx", None, None, None)


def test_the_top_passages_are_the_same_with_their_citations(pair: Pair,
                                                            uploaded: tuple[Job, Job]
                                                            ) -> None:
    """The whole query result (ranks, scores, provenance, citations) is the same from
    both for the passages ranked above the tail of tied scores."""
    result = pair.same(lambda c: c.query("files", RADIUM_QUESTION, method="naive", k=2))
    assert [p.citation for p in result.passages if p.doc_id == "curies.pdf#radium"] == [
        Citation("curies.pdf", 2, 2, "Radium")]


def test_include_reads_only_the_chosen_files(pair: Pair, folder: Path) -> None:
    """``Reading(include=("*.pdf",))``: only the PDFs are read, on both sides (the
    encrypted one among them, refused alike); the Markdown, DOCX and HTML are not."""
    jobs = pair.both(lambda c: c.ingest("included", [folder],
                                        reading=Reading(include=("*.pdf",))))
    assert_jobs_alike(jobs, {"locked.pdf": LOCKED})
    assert pair.same(lambda c: document_ids(c, "included")) == PDF_IDS


def test_several_include_and_exclude_globs(pair: Pair, folder: Path) -> None:
    """``Reading`` with two include globs and two exclude globs: both sides read the
    same files (the PDF and the Markdown, the encrypted PDF left out). (The remote
    client once sent the globs as repeated query parameters, which the server
    refuses.)"""
    reading = Reading(include=("*.pdf", "notes/*"), exclude=("locked.pdf", "drafts/*"))
    jobs = pair.both(lambda c: c.ingest("globs", [folder], reading=reading))
    assert_jobs_alike(jobs, {})
    assert pair.same(lambda c: document_ids(c, "globs")) == sorted(
        [*PDF_IDS, "notes/nobel.md#chemistry", "notes/nobel.md#peace"])


def test_split_by_page_gives_page_documents(pair: Pair, folder: Path) -> None:
    """``Reading(split_by=SplitBy.PAGE)`` (and an exclude): the PDF is one document per
    page, ``#page-N``, on both sides; a file of a format without pages is one
    document; a query cites the page alike."""
    reading = Reading(split_by=SplitBy.PAGE, exclude=("locked.pdf",))
    jobs = pair.both(lambda c: c.ingest("pages", [folder], reading=reading))
    assert_jobs_alike(jobs, {})
    assert pair.same(lambda c: document_ids(c, "pages")) == [
        "curies.pdf#page-1", "curies.pdf#page-2", "notes/nobel.md", "paris.html",
        "poland.docx"]
    [top] = pair.same(lambda c: c.query("pages", RADIUM_QUESTION, method="naive",
                                        k=1)).passages
    assert top.doc_id == "curies.pdf#page-2" and top.title == "curies, page 2"
    assert top.citation is not None
    assert (top.citation.file, top.citation.page, top.citation.page_end) == ("curies.pdf", 2, 2)
    cited = pair.same(lambda c: citations(c, "pages", RADIUM_QUESTION, "naive"))
    assert cited["curies.pdf#page-1"] == Citation("curies.pdf", 1, 1, "Marie Curie")


def test_plan_ingest_takes_the_reading_too(pair: Pair, folder: Path) -> None:
    """``plan_ingest`` with a ``Reading`` counts the same documents on both sides."""
    plan = pair.same(lambda c: c.plan_ingest(
        "planned", [folder], reading=Reading(split_by=SplitBy.FILE, exclude=("locked.pdf",))))
    assert plan.documents["new"] == 4 and plan.errors == []  # one per file read


def test_split_by_reaches_the_server_as_a_query_parameter(served: Served, folder: Path
                                                          ) -> None:
    """The PDF uploaded as it is and ``split_by=page`` given only as the route's query
    parameter (what ``Client.connect`` sends): the server's plan reads it into one
    document per page; without it, one per section."""
    body, content_type = multipart_body(uploads_for([folder / "curies.pdf"]))
    planned = []
    for params in ({"split_by": "page"}, {}):
        with Transport(served.url).open(
                "POST", "/v1/indexes/planned/documents", body=body,
                content_type=content_type,
                params={"dry_run": "true", "on_error": "skip", **params}) as response:
            planned.append(json.loads(response.read()))
    assert [plan["documents"]["new"] for plan in planned] == [2, len(PDF_IDS)]
    assert [plan["errors"] for plan in planned] == [[], []]


def test_a_changed_file_replaces_its_sections_alike(pair: Pair, tmp_path: Path) -> None:
    """A Markdown file ingested, then rewritten without one section: both sides drop
    that section's document in the second job and keep the other unchanged."""
    path = tmp_path / "nobel.md"
    write_markdown(path, NOBEL, title="Nobel Prizes")
    pair.both(lambda c: c.ingest("replaced", [path]))
    assert pair.same(lambda c: document_ids(c, "replaced")) == [
        "nobel.md#chemistry", "nobel.md#peace"]
    write_markdown(path, NOBEL[:1], title="Nobel Prizes")
    jobs = pair.both(lambda c: c.ingest("replaced", [path]))
    assert_alike(*jobs)
    assert jobs[0].counts["extractive.stage1"].skipped == 1
    assert pair.same(lambda c: document_ids(c, "replaced")) == ["nobel.md#chemistry"]




@pytest.mark.parametrize(("doc_id", "cited"), [
    ("curies.pdf#radium", Citation("curies.pdf", 2, 2, "Radium")),
    ("notes/nobel.md#chemistry", Citation("notes/nobel.md", None, None, "Chemistry")),
    ("paris.html#seine", Citation("paris.html", None, None, "Seine")),
    ("poland.docx", Citation("poland.docx", None, None, None)),
], ids=["pdf", "markdown", "html", "docx"])
def test_a_document_read_from_a_file_comes_with_its_citation(
        pair: Pair, uploaded: tuple[Job, Job], doc_id: str, cited: Citation) -> None:
    """A file's document read by id (its id holds the path inside the folder and the
    section after '#') is the same from both, cited as a whole: the PDF section's file,
    page and section, the Markdown and HTML sections' file and section, the DOCX's
    file; the layout hopindex records under its reserved metadata key (offsets, and
    where each side read the file from) is not in the metadata."""
    found = pair.same(lambda c: c.get_document("files", doc_id))
    assert found.doc_id == doc_id and found.text
    assert found.citation is not None
    assert Citation.from_dict(found.citation.model_dump()) == cited
    assert RESERVED_METADATA_KEY not in found.metadata
