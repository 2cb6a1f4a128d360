"""HotpotQA laid out as PDFs retrieves as the same corpus ingested as records, and every
gold passage it returns is cited with the file, page and section it was written to.

The bundled HotpotQA-100's 994 paragraphs are written as 25 multi-page PDFs, one
section per paragraph headed by its title, and ingested as files beside the records
build every module shares (``hotpot_built``): about two minutes, the price of a check
at the resolution of the whole set (on a slice one gold passage moves R@5 by more
than the 0.01 allowed). ``benchmarks/hotpot_as_files.py`` also runs DOCX and HTML.
"""

from __future__ import annotations

from collections.abc import Iterator
from importlib.resources import files
from pathlib import Path

import pytest

from hopindex.api.client.local import LocalClient
from hopindex.core.models import JobState
from hopindex.evaluation.datasets import DatasetFormat, Question, load_questions
from hopindex.evaluation.runner import GoldMatch, evaluate_method
from hopindex.testing.document_files import hotpot_files, hotpot_records, outline_pages
from tests.conftest import HOTPOT_INDEX, hotpot_client

pytestmark = pytest.mark.integration

QUESTIONS = Path(str(files("hopindex") / "sample" / "hotpotqa-100" / "questions.json"))
PER_FILE = 40
METHODS = ("naive", "hops")


@pytest.fixture(scope="module")
def built(hotpot_built: Path, tmp_path_factory: pytest.TempPathFactory
          ) -> Iterator[tuple[LocalClient, dict[str, Path]]]:
    """A copy of the records build (index ``hotpot``) with the PDF build beside it
    (index ``pdfs``); and the PDF each paragraph title was written to."""
    paragraphs = hotpot_records()
    folder = tmp_path_factory.mktemp("hotpot-pdfs")
    written = hotpot_files(paragraphs, folder, per_file=PER_FILE, formats=("pdf",))
    where = {p["title"]: written[n // PER_FILE] for n, p in enumerate(paragraphs)}
    with hotpot_client(hotpot_built, tmp_path_factory) as client:
        job = client.ingest("pdfs", [folder])
        assert job.state is JobState.SUCCEEDED and not job.errors, job.errors
        assert job.counts["validate"].done == len(paragraphs)
        yield client, where


@pytest.fixture(scope="module")
def questions() -> list[Question]:
    return load_questions(QUESTIONS, DatasetFormat.HOTPOTQA)


@pytest.mark.parametrize("method", METHODS)
def test_the_pdf_build_recalls_as_the_records_build(
        built: tuple[LocalClient, dict[str, Path]], questions: list[Question],
        method: str) -> None:
    """R@5 over the PDFs is within 0.01 of R@5 over the same paragraphs as records, gold
    passages matched by title (a PDF section's text is its text layer's)."""
    client, _ = built
    by_records, _ = evaluate_method(client.service, HOTPOT_INDEX, questions, method,
                                    match=GoldMatch.TITLE)
    by_pdfs, _ = evaluate_method(client.service, "pdfs", questions, method,
                                 match=GoldMatch.TITLE)
    assert by_records.recall[5] > 0.5  # the comparison means something
    # Recalls are means of fractions: a difference of exactly 0.01 carries float error.
    assert round(abs(by_pdfs.recall[5] - by_records.recall[5]), 9) <= 0.01


def test_every_gold_passage_returned_is_cited_by_file_page_and_section(
        built: tuple[LocalClient, dict[str, Path]], questions: list[Question]) -> None:
    """Each gold paragraph in a query's top 10 names the PDF it was written to, the page
    its section starts on (read back from the PDF), and its heading as the section."""
    client, where = built
    pages = {title: page for pdf in set(where.values())
             for title, page in outline_pages(pdf).items()}
    checked = 0
    for question in questions:
        gold = {g.split("\n", 1)[0] for g in question.gold_passages}
        result = client.query("pdfs", question.question, method="hops", k=10)
        for passage in result.passages:
            if passage.title not in gold:
                continue
            assert passage.citation is not None, passage
            assert passage.citation.file == where[passage.title].name
            assert passage.citation.section == passage.title
            assert passage.citation.page == pages[passage.title]
            checked += 1
    assert checked >= len(questions)  # most questions have both gold paragraphs in reach
