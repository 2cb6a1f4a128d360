"""The ingest pipeline end to end on embedded backends: bridges, incremental updates, deletes."""

from __future__ import annotations

import pytest

from hopindex.api.client.local import LocalClient
from hopindex.core.models import Job, JobState, UnitKind
from hopindex.readers import RawDocument, ReadResult
from tests.conftest import CURIE_CORPUS, raw
from tests.methods.indexrag.conftest import ClientFactory

pytestmark = pytest.mark.integration

INDEX = "curie"


def ingest(client: LocalClient, documents: list[RawDocument], index: str = INDEX,
           method: str | None = None) -> Job:
    """``documents`` (already read) ingested, waiting for the job."""
    return client.ingest_read(index, ReadResult(documents=documents), method=method)


def unit_snapshot(client: LocalClient, index: str = INDEX) -> set[tuple[str, str, str]]:
    """Every unit of the index as (id, kind, text), read from the state store."""
    state = client.service.backends.state
    units = state.units_of_documents(index, sorted(state.document_hashes(index)))
    return {(u.unit_id, u.kind.value, u.text) for u in units}


def engine_counts(client: LocalClient, index: str = INDEX) -> tuple[int, int]:
    backends = client.service.backends
    return backends.vectors.count_vectors(index), backends.keywords.count_units(index)


def test_ingest_writes_passages_and_cross_document_bridges(make_client: ClientFactory) -> None:
    """Every document becomes a passage; shared entities become bridges over 2+ documents."""
    client = make_client()
    job = ingest(client, CURIE_CORPUS)
    assert job.state is JobState.SUCCEEDED, job.reason
    assert job.count("extractive.stage1").done == len(CURIE_CORPUS)
    units = client.service.backends.state.count_units(INDEX)
    assert units[UnitKind.PASSAGE] == len(CURIE_CORPUS)
    assert units[UnitKind.BRIDGE] >= 3
    snapshot = unit_snapshot(client)
    bridges = [text for _, kind, text in snapshot if kind == "bridge"]
    assert all(text.count(" | ") >= 1 for text in bridges)
    assert any(text.startswith(("Marie Curie:", "Warsaw:")) and "Warsaw" in text
               for text in bridges)
    assert engine_counts(client) == (len(snapshot), len(snapshot))


def test_reingest_unchanged_embeds_and_extracts_nothing(make_client: ClientFactory) -> None:
    """A second ingest of the same documents skips them all and writes no unit."""
    client = make_client()
    ingest(client, CURIE_CORPUS)
    before = unit_snapshot(client)
    again = ingest(client, CURIE_CORPUS)
    assert again.state is JobState.SUCCEEDED
    assert again.count("extractive.stage1").skipped == len(CURIE_CORPUS)
    assert again.count("extractive.stage1").done == 0
    assert again.units_embedded == 0
    assert again.groups_rebuilt == 0
    assert unit_snapshot(client) == before


def test_incremental_ingest_equals_ingesting_everything_at_once(
        make_client: ClientFactory) -> None:
    """Ingesting in two jobs yields exactly the units of one job over the union."""
    split = make_client("split")
    ingest(split, CURIE_CORPUS[:3])
    added = ingest(split, CURIE_CORPUS[3:])
    whole = make_client("whole")
    ingest(whole, CURIE_CORPUS)
    assert unit_snapshot(split) == unit_snapshot(whole)
    assert engine_counts(split) == engine_counts(whole)
    # Only entities the new documents touch were recomputed, not every bridge.
    whole_job = whole.jobs.list_jobs(INDEX)[0]
    assert 0 < added.groups_rebuilt <= whole_job.groups_rebuilt


def test_adding_one_document_recomputes_only_touched_bridges(make_client: ClientFactory) -> None:
    """A new document about Warsaw recomputes few bridges and embeds only what changed."""
    client = make_client()
    first = ingest(client, CURIE_CORPUS)
    extra = raw("Vistula", "The Vistula is the longest river in Poland. It flows through Warsaw.")
    job = ingest(client, [extra])
    assert job.count("extractive.stage1").done == 1
    assert job.count("extractive.stage1").skipped == 0
    assert 1 <= job.groups_rebuilt < first.groups_rebuilt + 2
    warsaw = [t for _, k, t in unit_snapshot(client) if k == "bridge" and "Vistula:" in t]
    assert warsaw, "the new document joins the bridges of the entities it mentions"


def test_changed_document_replaces_its_units(make_client: ClientFactory) -> None:
    """A changed text replaces the old passage everywhere and refreshes bridges quoting it."""
    client = make_client()
    ingest(client, CURIE_CORPUS)
    changed = raw("Poland", "Poland is a country in Central Europe whose capital, Warsaw, "
                  "lies on the Vistula.")
    job = ingest(client, [changed])
    assert job.count("extractive.stage1").done == 1
    texts = {t for _, _, t in unit_snapshot(client)}
    assert "Poland\n" + changed.text in texts
    assert not any("Its capital is Warsaw." in t for t in texts)
    fresh = make_client("fresh")
    ingest(fresh, [*CURIE_CORPUS[:4], changed, CURIE_CORPUS[5]])
    assert unit_snapshot(client) == unit_snapshot(fresh)
    assert engine_counts(client) == engine_counts(fresh)


def test_delete_equals_never_having_ingested(make_client: ClientFactory) -> None:
    """Deleting a document leaves the index as if it had never been ingested."""
    client = make_client()
    ingest(client, CURIE_CORPUS)
    warsaw_id = next(d for d, _ in client.service.backends.state.document_hashes(INDEX).items()
                     if client.service.get_documents(INDEX, [d])[0].title == "Warsaw")
    job = client.delete_documents(INDEX, [warsaw_id, "no-such-doc"])
    assert job.state is JobState.SUCCEEDED
    assert [e.item for e in job.errors] == ["no-such-doc"]
    without = make_client("without")
    ingest(without, [d for d in CURIE_CORPUS if d.title != "Warsaw"])
    assert unit_snapshot(client) == unit_snapshot(without)
    assert engine_counts(client) == engine_counts(without)


def test_queries_return_passages_with_provenance(make_client: ClientFactory) -> None:
    """naive returns passages; extractive can reach a passage through a bridge unit."""
    client = make_client()
    ingest(client, CURIE_CORPUS)
    naive = client.query(INDEX, "Where was Marie Curie born?", method="naive", k=5)
    assert naive.passages[0].title in {"Marie Curie", "Warsaw"}
    assert all(p.via_kind == "passage" for p in naive.passages)
    result = client.query(INDEX, "In which country was the wife of Pierre Curie born?",
                          method="extractive", k=5)
    titles = [p.title for p in result.passages]
    assert len(titles) == len(set(titles)) == 5
    assert "Marie Curie" in titles
    assert result.usage.phases_s.keys() >= {"embed", "dense_search", "keyword_search", "fusion"}
    assert [p.rank for p in result.passages] == [1, 2, 3, 4, 5]
