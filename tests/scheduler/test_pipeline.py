"""The ingest pipeline end to end on embedded backends: bridges, incremental updates, deletes."""

from __future__ import annotations

import pytest

from hopindex.api.service import Hopindex
from hopindex.core.models import JobState, UnitKind
from tests.conftest import CURIE_CORPUS, ServiceFactory, raw

pytestmark = pytest.mark.integration

INDEX = "curie"


def unit_snapshot(service: Hopindex, index: str = INDEX) -> set[tuple[str, str, str]]:
    """Every unit of the index as (id, kind, text), read from the state store."""
    state = service.backends.state
    units = state.units_of_documents(index, sorted(state.document_hashes(index)))
    return {(u.unit_id, u.kind.value, u.text) for u in units}


def engine_counts(service: Hopindex, index: str = INDEX) -> tuple[int, int]:
    return (service.backends.vectors.count_vectors(index),
            service.backends.keywords.count_units(index))


def test_ingest_writes_passages_and_cross_document_bridges(make_service: ServiceFactory) -> None:
    """Every document becomes a passage; shared entities become bridges over 2+ documents."""
    service = make_service()
    job = service.ingest_documents(INDEX, CURIE_CORPUS)
    assert job.state is JobState.SUCCEEDED, job.reason
    assert job.count("extractive.stage1").done == len(CURIE_CORPUS)
    units = service.backends.state.count_units(INDEX)
    assert units[UnitKind.PASSAGE] == len(CURIE_CORPUS)
    assert units[UnitKind.BRIDGE] >= 3
    snapshot = unit_snapshot(service)
    bridges = [text for _, kind, text in snapshot if kind == "bridge"]
    assert all(text.count(" | ") >= 1 for text in bridges)
    assert any(text.startswith(("Marie Curie:", "Warsaw:")) and "Warsaw" in text
               for text in bridges)
    assert engine_counts(service) == (len(snapshot), len(snapshot))


def test_reingest_unchanged_embeds_and_extracts_nothing(make_service: ServiceFactory) -> None:
    """A second ingest of the same documents skips them all and writes no unit."""
    service = make_service()
    service.ingest_documents(INDEX, CURIE_CORPUS)
    before = unit_snapshot(service)
    again = service.ingest_documents(INDEX, CURIE_CORPUS)
    assert again.state is JobState.SUCCEEDED
    assert again.count("extractive.stage1").skipped == len(CURIE_CORPUS)
    assert again.count("extractive.stage1").done == 0
    assert again.units_embedded == 0
    assert again.groups_rebuilt == 0
    assert unit_snapshot(service) == before


def test_incremental_ingest_equals_ingesting_everything_at_once(
        make_service: ServiceFactory) -> None:
    """Ingesting in two jobs yields exactly the units of one job over the union."""
    split = make_service("split")
    split.ingest_documents(INDEX, CURIE_CORPUS[:3])
    added = split.ingest_documents(INDEX, CURIE_CORPUS[3:])
    whole = make_service("whole")
    whole.ingest_documents(INDEX, CURIE_CORPUS)
    assert unit_snapshot(split) == unit_snapshot(whole)
    assert engine_counts(split) == engine_counts(whole)
    # Only entities the new documents touch were recomputed, not every bridge.
    whole_job = whole.list_jobs(INDEX)[0]
    assert 0 < added.groups_rebuilt <= whole_job.groups_rebuilt


def test_adding_one_document_recomputes_only_touched_bridges(make_service: ServiceFactory) -> None:
    """A new document about Warsaw recomputes few bridges and embeds only what changed."""
    service = make_service()
    first = service.ingest_documents(INDEX, CURIE_CORPUS)
    extra = raw("Vistula", "The Vistula is the longest river in Poland. It flows through Warsaw.")
    job = service.ingest_documents(INDEX, [extra])
    assert job.count("extractive.stage1").done == 1
    assert job.count("extractive.stage1").skipped == 0
    assert 1 <= job.groups_rebuilt < first.groups_rebuilt + 2
    warsaw = [t for _, k, t in unit_snapshot(service) if k == "bridge" and "Vistula:" in t]
    assert warsaw, "the new document joins the bridges of the entities it mentions"


def test_changed_document_replaces_its_units(make_service: ServiceFactory) -> None:
    """A changed text replaces the old passage everywhere and refreshes bridges quoting it."""
    service = make_service()
    service.ingest_documents(INDEX, CURIE_CORPUS)
    changed = raw("Poland", "Poland is a country in Central Europe whose capital, Warsaw, "
                  "lies on the Vistula.")
    job = service.ingest_documents(INDEX, [changed])
    assert job.count("extractive.stage1").done == 1
    texts = {t for _, _, t in unit_snapshot(service)}
    assert "Poland\n" + changed.text in texts
    assert not any("Its capital is Warsaw." in t for t in texts)
    fresh = make_service("fresh")
    fresh.ingest_documents(INDEX, [*CURIE_CORPUS[:4], changed, CURIE_CORPUS[5]])
    assert unit_snapshot(service) == unit_snapshot(fresh)
    assert engine_counts(service) == engine_counts(fresh)


def test_delete_equals_never_having_ingested(make_service: ServiceFactory) -> None:
    """Deleting a document leaves the index as if it had never been ingested."""
    service = make_service()
    service.ingest_documents(INDEX, CURIE_CORPUS)
    warsaw_id = next(d for d, _ in service.backends.state.document_hashes(INDEX).items()
                     if service.get_documents(INDEX, [d])[0].title == "Warsaw")
    job = service.delete_documents(INDEX, [warsaw_id, "no-such-doc"])
    assert job.state is JobState.SUCCEEDED
    assert [e.item for e in job.errors] == ["no-such-doc"]
    without = make_service("without")
    without.ingest_documents(INDEX, [d for d in CURIE_CORPUS if d.title != "Warsaw"])
    assert unit_snapshot(service) == unit_snapshot(without)
    assert engine_counts(service) == engine_counts(without)


def test_queries_return_passages_with_provenance(make_service: ServiceFactory) -> None:
    """naive returns passages; extractive can reach a passage through a bridge unit."""
    service = make_service()
    service.ingest_documents(INDEX, CURIE_CORPUS)
    naive = service.query(INDEX, "Where was Marie Curie born?", "naive")
    assert naive.passages[0].title in {"Marie Curie", "Warsaw"}
    assert all(p.via_kind == "passage" for p in naive.passages)
    result = service.query(INDEX, "In which country was the wife of Pierre Curie born?",
                           "extractive")
    titles = [p.title for p in result.passages]
    assert len(titles) == len(set(titles)) == 5
    assert "Marie Curie" in titles
    assert result.usage.phases_s.keys() >= {"embed", "dense_search", "keyword_search", "fusion"}
    assert [p.rank for p in result.passages] == [1, 2, 3, 4, 5]
