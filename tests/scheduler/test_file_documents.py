"""A file ingested again replaces its documents (scheduler/file_documents.py): a
section gone from it is deleted with its units in the same job, a changed one is
recomputed, an unchanged one is skipped, and one whose pages moved keeps its units
with their citations brought up to date; a file that now cannot be read at all
leaves what the index holds of it alone. Through ``Client.local`` into extractive
indexes, the files written by hopindex.testing.document_files."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from hopindex.api.client.local import LocalClient
from hopindex.core.citations import Citation, passage_citation
from hopindex.core.models import Job, JobState, Unit, UnitKind
from hopindex.core.settings import Settings
from hopindex.testing.document_files import (
    Section,
    encrypted_pdf,
    write_markdown,
    write_pdf,
)
from tests.conftest import ClientFactory, local_client

pytestmark = pytest.mark.integration

INDEX = "files"
STAGE1 = "extractive.stage1"

ALPHA = Section("Alpha", "Marie Curie was born in Warsaw in 1867 and later studied in Paris.")
BRAVO = Section("Bravo", "The Flying University was a secret school in Warsaw where Marie "
                "Curie attended lectures.")
CHARLIE = Section("Charlie", "Pierre Curie taught physics at the University of Paris.")
CHARLIE_CHANGED = Section("Charlie", "Pierre Curie taught physics at the Sorbonne in Paris "
                          "until his death in 1906.")
BRAVO_WORDS = "Flying University"
# Questions asked of every query method after Bravo is removed.
METHODS = ("naive", "extractive", "hops")


def units(client: LocalClient, doc_ids: list[str] | None = None,
          kinds: tuple[UnitKind, ...] = ()) -> list[Unit]:
    state = client.service.backends.state
    ids = sorted(state.document_hashes(INDEX)) if doc_ids is None else doc_ids
    return sorted(state.units_of_documents(INDEX, ids, kinds=kinds), key=lambda u: u.unit_id)


def passage_units(client: LocalClient, doc_id: str) -> list[Unit]:
    return units(client, [doc_id], kinds=(UnitKind.PASSAGE,))


def snapshot(client: LocalClient) -> set[tuple[str, str, str]]:
    """Every unit of the index as (id, kind, text)."""
    return {(u.unit_id, u.kind.value, u.text) for u in units(client)}


def engine_counts(client: LocalClient) -> tuple[int, int]:
    backends = client.service.backends
    return backends.vectors.count_vectors(INDEX), backends.keywords.count_units(INDEX)


def document_ids(client: LocalClient) -> list[str]:
    return sorted(client.service.backends.state.document_hashes(INDEX))


def stage1(job: Job) -> tuple[int, int]:
    """(recomputed, skipped as unchanged) documents of the job's first phase."""
    counts = job.count(STAGE1)
    return counts.done, counts.skipped


@dataclass
class Replaced:
    """The Markdown scenario: its client (read only from here on), the fresh index of
    the second version, and the jobs and snapshots along the way."""

    client: LocalClient
    first: Job
    second: Job
    again: Job
    after_second: set[tuple[str, str, str]]
    alpha_units_before: list[Unit]  # Alpha's passage units after the first ingest
    fresh: set[tuple[str, str, str]]
    fresh_engines: tuple[int, int]


@pytest.fixture(scope="module")
def replaced(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Replaced]:
    """notes.md with sections Alpha, Bravo, Charlie ingested; then rewritten without
    Bravo and with Charlie's text changed and ingested again; then ingested a third
    time unchanged. ``fresh`` is the units of another index holding only the second
    version, ingested once (its client is opened last: a process runs its jobs on the
    runtime of the service opened last)."""
    root = tmp_path_factory.mktemp("replaced")
    path = root / "notes.md"
    client = local_client(Settings(data_dir=root / "data").resolved())
    try:
        write_markdown(path, [ALPHA, BRAVO, CHARLIE], title="Notes")
        first = client.ingest(INDEX, [path])
        alpha_units = passage_units(client, "notes.md#alpha")
        write_markdown(path, [ALPHA, CHARLIE_CHANGED], title="Notes")
        second = client.ingest(INDEX, [path])
        after_second = snapshot(client)
        again = client.ingest(INDEX, [path])
        with local_client(Settings(data_dir=root / "fresh").resolved()) as fresh:
            assert fresh.ingest(INDEX, [path]).state is JobState.SUCCEEDED
            fresh_units, fresh_engines = snapshot(fresh), engine_counts(fresh)
        yield Replaced(client, first, second, again, after_second, alpha_units, fresh_units,
                       fresh_engines)
    finally:
        client.close()


def test_first_ingest_makes_a_document_per_section(replaced: Replaced) -> None:
    """The starting point: one document per section, each with passage units that
    cite the file and section."""
    assert replaced.first.state is JobState.SUCCEEDED and not replaced.first.errors
    assert stage1(replaced.first) == (3, 0)
    assert [passage_citation(u.metadata) for u in replaced.alpha_units_before] == [
        Citation("notes.md", None, None, "Alpha")]


def test_a_removed_section_is_deleted_with_its_units(replaced: Replaced) -> None:
    """After the rewrite, Bravo's document and every unit from it (its passage, and
    any bridge quoting it) are gone from the store and both engines, in the job that
    ingested the file: the index is unit for unit what a fresh ingest of the new file
    makes."""
    client = replaced.client
    assert replaced.second.state is JobState.SUCCEEDED and not replaced.second.errors
    assert document_ids(client) == ["notes.md#alpha", "notes.md#charlie"]
    assert client.service.backends.state.get_documents(INDEX, ["notes.md#bravo"]) == []
    assert units(client, ["notes.md#bravo"]) == []
    assert not [text for _, _, text in replaced.after_second if BRAVO_WORDS in text]
    assert replaced.after_second == replaced.fresh
    assert engine_counts(client) == replaced.fresh_engines == (
        len(replaced.after_second), len(replaced.after_second))


def test_only_the_changed_section_is_recomputed(replaced: Replaced) -> None:
    """The second job recomputes Charlie (changed) and skips Alpha (unchanged), whose
    passage units are the same as before; Charlie's passage holds its new text."""
    assert stage1(replaced.second) == (1, 1)
    client = replaced.client
    assert passage_units(client, "notes.md#alpha") == replaced.alpha_units_before
    [charlie] = units(client, ["notes.md#charlie"], kinds=(UnitKind.PASSAGE,))
    assert CHARLIE_CHANGED.text in charlie.text


@pytest.mark.parametrize("method", METHODS)
def test_queries_never_return_the_removed_section(replaced: Replaced, method: str) -> None:
    """A question Bravo alone answered finds neither its document nor its text, by any
    route (passage or bridge)."""
    result = replaced.client.query(INDEX, "What was the Flying University in Warsaw?",
                                   method=method, k=10)
    assert result.passages
    for passage in result.passages:
        assert passage.doc_id != "notes.md#bravo"
        assert BRAVO_WORDS not in passage.text and BRAVO_WORDS not in passage.via_text


def test_an_unchanged_file_ingested_again_recomputes_nothing(replaced: Replaced) -> None:
    """The third ingest of the same file skips both sections, embeds nothing, rebuilds
    no group and leaves every unit as it was."""
    again = replaced.again
    assert again.state is JobState.SUCCEEDED and not again.errors
    assert stage1(again) == (0, 2)
    assert again.units_embedded == 0 and again.groups_rebuilt == 0
    assert snapshot(replaced.client) == replaced.after_second


def cited(client: LocalClient, question: str, doc_id: str) -> Citation:
    """The citation the passage of ``doc_id`` has in the answer to ``question``, the
    same from every query method."""
    citations: set[Citation] = set()
    for method in METHODS:
        result = client.query(INDEX, question, method=method, k=10)
        found = [p for p in result.passages if p.doc_id == doc_id]
        assert found, (method, [p.doc_id for p in result.passages])
        assert found[0].citation is not None
        citations.add(found[0].citation)
    [citation] = citations
    return citation


RADIUM = Section("Radium", "Radium is a radioactive element the Curies found in 1898.")
POLONIUM = Section("Polonium", "Polonium was named after Poland, the homeland of Marie Curie.")
HELIUM = Section("Helium", "Helium was first seen in the spectrum of the Sun in 1868.")
# Inserted before Helium: its own page, so Helium moves from page 3 to page 4.
NEON = Section("Neon", "Neon glows red-orange in a discharge tube and names the sign.")


def test_a_page_inserted_before_a_section_moves_its_citation_not_its_units(
        make_client: ClientFactory, tmp_path: Path) -> None:
    """A PDF of one section per page gets a page inserted before Helium, whose text is
    the same: the job recomputes only the new section, Helium's passage units keep
    their ids and text, and its document's layout, its units' citations and a
    query's citation now say page 4 (was 3)."""
    client = make_client()
    path = tmp_path / "elements.pdf"
    write_pdf(path, [RADIUM, POLONIUM, HELIUM], sections_per_page=1)
    first = client.ingest(INDEX, [path])
    assert first.state is JobState.SUCCEEDED and not first.errors
    question = "Where was helium first seen?"
    assert cited(client, question, "elements.pdf#helium") == Citation(
        "elements.pdf", 3, 3, "Helium")
    before = passage_units(client, "elements.pdf#helium")
    assert before and all(passage_citation(u.metadata) == Citation("elements.pdf", 3, 3,
                                                                   "Helium") for u in before)

    write_pdf(path, [RADIUM, POLONIUM, NEON, HELIUM], sections_per_page=1)
    second = client.ingest(INDEX, [path])
    assert second.state is JobState.SUCCEEDED and not second.errors
    assert stage1(second) == (1, 3)
    after = passage_units(client, "elements.pdf#helium")
    assert [(u.unit_id, u.text) for u in after] == [(u.unit_id, u.text) for u in before]
    assert all(passage_citation(u.metadata) == Citation("elements.pdf", 4, 4, "Helium")
               for u in after)
    [helium] = client.service.backends.state.get_documents(INDEX, ["elements.pdf#helium"])
    assert helium.metadata["hopindex"]["pages"] == [4, 4]
    assert cited(client, question, "elements.pdf#helium") == Citation(
        "elements.pdf", 4, 4, "Helium")
    # The sections before the new page stay where they were.
    assert cited(client, "Which element was named after Poland?",
                 "elements.pdf#polonium") == Citation("elements.pdf", 2, 2, "Polonium")
    assert cited(client, "What glows red-orange?", "elements.pdf#neon") == Citation(
        "elements.pdf", 3, 3, "Neon")


def test_a_file_that_now_fails_keeps_its_old_documents(make_client: ClientFactory,
                                                       tmp_path: Path) -> None:
    """A PDF ingested, then replaced by a password-protected one: the ingest lists the
    file as refused and deletes nothing, its sections stay queryable with their units
    and citations as before."""
    client = make_client()
    path = tmp_path / "elements.pdf"
    write_pdf(path, [RADIUM, POLONIUM], sections_per_page=1)
    client.ingest(INDEX, [path])
    before_documents, before_units = document_ids(client), snapshot(client)
    assert before_documents == ["elements.pdf#polonium", "elements.pdf#radium"]

    encrypted_pdf(path)
    job = client.ingest(INDEX, [path])
    assert [(e.item, e.stage, e.reason) for e in job.errors] == [
        (str(path), "validate", "encrypted PDF: remove its password to ingest it")]
    assert document_ids(client) == before_documents
    assert snapshot(client) == before_units
    assert engine_counts(client) == (len(before_units), len(before_units))
    assert cited(client, "Which element was named after Poland?",
                 "elements.pdf#polonium") == Citation("elements.pdf", 2, 2, "Polonium")


def test_a_section_the_new_reading_refuses_keeps_its_old_document(
        make_client: ClientFactory, tmp_path: Path) -> None:
    """A Markdown file whose Bravo section grows over the document limit: the ingest
    lists that section as refused, and, as for a file refused whole, what the index
    holds of it stays (it was not removed from the file, only not read this time);
    Alpha, unchanged, is skipped."""
    client = make_client(max_document_bytes=2_000)
    path = tmp_path / "notes.md"
    write_markdown(path, [ALPHA, BRAVO], title="Notes")
    client.ingest(INDEX, [path])
    bravo_units = units(client, ["notes.md#bravo"])
    assert bravo_units

    grown = Section(BRAVO.title, BRAVO.text + " It met in private flats." * 100)
    write_markdown(path, [ALPHA, grown], title="Notes")
    job = client.ingest(INDEX, [path])
    [error] = job.errors
    assert (error.where, error.stage) == (f"{path}#bravo", "validate")
    assert error.reason.startswith("document 'notes.md#bravo' is ")
    assert error.reason.endswith("over the 2,000-byte limit (HOPINDEX_MAX_DOCUMENT_BYTES)")
    assert stage1(job) == (0, 1)
    assert document_ids(client) == ["notes.md#alpha", "notes.md#bravo"]
    assert units(client, ["notes.md#bravo"]) == bravo_units
