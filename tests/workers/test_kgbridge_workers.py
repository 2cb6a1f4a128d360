"""kgbridge on real worker processes and a real Redis: a stage2 worker killed while it
adjudicates SAME_AS candidates loses and duplicates no link; the job ends with the
units, graphs and links an undisturbed in-process build makes."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hopindex.api.client.local import LocalClient
from hopindex.core.models import JobState, Stage
from hopindex.methods.kgbridge.graphs import GRAPHS, LINKS
from hopindex.readers import RawDocument, ReadResult
from hopindex.testing.llm_server import LlmTestServer
from tests.conftest import raw
from tests.methods.indexrag.conftest import llm_settings, local_client
from tests.methods.kgbridge.corpus import CORPUS, LINKED_KEYS
from tests.workers.conftest import (
    INDEX,
    Cluster,
    embedder_settings,
    engine_counts,
    kinds_and_texts,
    wait_until,
)

pytestmark = pytest.mark.integration

PHASE = "kgbridge.links"
ADJUDICATE = "kg_adjudicate"  # the test server's kind for an adjudication request
# Every request to the workers' server takes this long, so a request counted by the
# server is still in flight for about this long: a kill right after the count rises
# lands inside an adjudication.
LATENCY_S = 0.4
# Two names' pairs asked before the kill: the batches before it finished and stored
# their links, the ones after it have not started.
KILL_AFTER_ADJUDICATIONS = 6
# Short enough that the killed worker's batch comes back within seconds; the stall
# timeout must exceed the visibility timeout, so the reaper may re-drive the same
# batch the broker redelivers (which must then be harmless too).
VISIBILITY_S, STALL_S = 10, 12
JOB_TIMEOUT_S = 180.0

# One name per row: two documents describing the same person (their first sentences
# share content words, so the test model says "same") and one about a namesake
# (sharing nothing, so "different"). Each name is a key with three candidate pairs.
_NAMESAKES = (
    ("Marta Kell", "designed steel bridges across the northern valley",
     "designed steel bridges for a railway company",
     "painted quiet harbour scenes in watercolour"),
    ("Orin Vasse", "brewed dark cider in a stone cellar", "brewed dark cider for village fairs",
     "taught chess openings to schoolchildren"),
    ("Tavi Brunn", "carved walnut violins by candlelight",
     "carved walnut violins for touring orchestras",
     "raced sailing yachts along windy coasts"),
    ("Elsa Morrow", "mapped glacier caves with lanterns",
     "mapped glacier caves during long winters", "baked rye bread for a busy bakery"),
    ("Iven Stroud", "bred mountain goats on terraced farms",
     "bred mountain goats for cheese makers", "wrote detective novels about forgers"),
    ("Nadia Quell", "restored clockwork automata in workshops",
     "restored clockwork automata for museums", "coached rowing crews on misty rivers"),
    ("Bram Holloway", "translated medieval poetry from manuscripts",
     "translated medieval poetry into plain prose", "repaired fishing trawlers in drydock"),
    ("Celia Yarrow", "grew rare orchids under glass", "grew rare orchids for botanical shows",
     "played bass trombone in marching bands"),
)


def kg_corpus() -> list[RawDocument]:
    """The kgbridge tests' corpus and three documents per name of ``_NAMESAKES``: 30
    documents, 12 names in several documents, 28 candidate pairs, of which 10 link."""
    documents = list(CORPUS)
    for name, first, second, other in _NAMESAKES:
        slug = _slug(name)
        for role, deed in (("a", first), ("b", second), ("namesake", other)):
            documents.append(raw(f"{name} ({role})", f"{name} {deed}.", doc_id=f"{slug}-{role}"))
    return documents


def _slug(name: str) -> str:
    return name.lower().replace(" ", "-")


def _keys(client: LocalClient) -> list[str]:
    state = client.service.backends.state
    mentions = state.mentions_of_documents(INDEX, sorted(state.document_hashes(INDEX)))
    return sorted({m.entity for found in mentions.values() for m in found})


def built_state(client: LocalClient) -> dict[str, Any]:
    """What a build leaves: units (id → kind, text), graph records by document, each
    stored link as (entity, link id, its two documents, S_link) with how many times it
    is stored, and each name's candidate tallies."""
    state = client.service.backends.state
    records = state.get_records(INDEX, LINKS, _keys(client))
    links = Counter((key, x["link_id"], x["a"]["doc_id"], x["b"]["doc_id"], round(x["s_link"], 4))
                    for key, record in records.items() for x in record["links"])
    tallies = {key: {name: record[name] for name in ("candidates", "prefiltered",
                                                     "adjudicated", "rejected")}
               for key, record in records.items()}
    return {"units": kinds_and_texts(client),
            "graphs": state.get_records(INDEX, GRAPHS, sorted(state.document_hashes(INDEX))),
            "links": links, "tallies": tallies}


def _clean_reference(tmp_path: Path, server: LlmTestServer) -> dict[str, Any]:
    with local_client(llm_settings(tmp_path / "clean", server, **embedder_settings(server))
                      ) as s:
        job = s.ingest_read(INDEX, ReadResult(documents=kg_corpus()), method="kgbridge")
        assert job.state is JobState.SUCCEEDED and not job.errors, job.reason
        return built_state(s)


def test_a_stage2_worker_killed_mid_adjudication_loses_and_duplicates_no_link(
        tmp_path: Path, start_server: Callable[..., LlmTestServer],
        cluster: Callable[..., Cluster]) -> None:
    """SIGKILL the stage2 worker while its adjudication requests are in flight, one name
    per batch: once its batches come back (redelivered or re-driven) to a replacement,
    the job succeeds with the clean build's exact units, graph records and links, each
    link stored once, every name counted once, and the interrupted requests asked
    again."""
    clean_server = start_server()
    expected = _clean_reference(tmp_path, clean_server)
    clean_asked = clean_server.stats.by_kind[ADJUDICATE]
    # The reference holds both outcomes, or "nothing lost" would mean little: each
    # name's same-entity pair links, its namesake pairs and the John Smiths do not.
    assert {(key, a, b) for key, _, a, b, _ in expected["links"]} == {
        *((key, "ada", "engine") for key in LINKED_KEYS),
        *((name.lower(), f"{_slug(name)}-a", f"{_slug(name)}-b") for name, *_ in _NAMESAKES)}
    assert set(expected["links"].values()) == {1}
    assert clean_asked == sum(t["adjudicated"] for t in expected["tallies"].values()) == 28

    server = start_server(latency_s=LATENCY_S)
    c = cluster(server, stage2_batch_entities=1, visibility_timeout_s=VISIBILITY_S,
                task_time_limit_s=VISIBILITY_S - 2, job_stall_timeout_s=STALL_S,
                reaper_interval_s=1, **embedder_settings(server))
    c.start("engines", "control,embed", concurrency=2)
    c.start_beat()
    c.start("stage1", "stage1")
    victim = c.start("stage2-1", "stage2", concurrency=2, pool="threads")
    with local_client(c.settings) as client:
        job = client.ingest_read(INDEX, ReadResult(documents=kg_corpus()), method="kgbridge",
                                 wait=False)
        job = wait_until(client, job.job_id, lambda j: server.stats.by_kind.get(
            ADJUDICATE, 0) >= KILL_AFTER_ADJUDICATIONS, timeout_s=JOB_TIMEOUT_S)
        victim.kill()
        links = job.count(PHASE)
        assert job.state is JobState.RUNNING, "the job ended before the kill"
        assert links.done + links.failed + links.skipped < links.total, (
            "the links phase ended before the kill")
        c.start("stage2-2", "stage2", concurrency=2, pool="threads")
        job = client.jobs.wait_for_job(job.job_id, timeout_s=JOB_TIMEOUT_S)
        got = built_state(client)
        stored = sum(client.service.backends.state.count_units(INDEX).values())
    c.stop_all()
    assert job.state is JobState.SUCCEEDED, job.reason
    assert not job.errors
    assert got["units"] == expected["units"]
    assert stored == len(expected["units"])
    assert engine_counts(c) == (len(expected["units"]), len(expected["units"]))
    assert got["graphs"] == expected["graphs"]
    assert got["links"] == expected["links"]  # same links, each stored once
    assert got["tallies"] == expected["tallies"]
    # Requests in flight at the kill were never answered, so never cached: asked again.
    assert server.stats.by_kind[ADJUDICATE] > clean_asked
    for phase in ("kgbridge.graphs", Stage.EMBED, PHASE):
        counts = job.counts[phase]
        assert counts.done + counts.failed + counts.skipped == counts.total, phase
