"""Embedded (no broker): failed work is remembered on the index and re-planned.

After an LLM outage in stage 2, ingesting the unchanged corpus again skips every
document yet re-plans exactly the failed bridge entities, and the index ends with the
clean build's units: 0 lost, 0 duplicated. Progress counts skipped work as finished.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from hopindex.core.errors import HopindexError
from hopindex.core.ids import content_hash, doc_id_from_title
from hopindex.core.models import Document, Job, JobKind, JobState
from hopindex.methods.plugin import Scope
from hopindex.scheduler.outstanding import IndexStatus
from hopindex.scheduler.pipeline import finalize, keep_scope
from hopindex.testing.llm_server import LlmTestServer
from tests.conftest import CURIE_CORPUS, raw
from tests.methods.indexrag.conftest import ClientFactory, llm_settings, local_client
from tests.scheduler.test_pipeline import engine_counts, ingest, unit_snapshot
from tests.scheduler.test_submit_faults import CONTROL, Step, inject
from tests.workers.conftest import (
    FAST_GIVE_UP,
    INDEX,
    eager_reference,
    embedder_settings,
    hotpot_corpus,
    kinds_and_texts,
)

pytestmark = pytest.mark.integration

INDEX_CURIE = "curie"


def test_next_ingest_of_the_same_input_brings_failed_entities_back(
        tmp_path: Path, start_server: Callable[..., LlmTestServer]) -> None:
    """A 2 s outage fails stage-2 calls for good; the second ingest of the same corpus
    skips all 30 documents, plans only the failed entities, and ends clean at 100 %."""
    server = start_server(outage_on_kind="stage2", outage_s=2.0, latency_s=0.02)
    corpus = hotpot_corpus(tmp_path, limit=30)
    expected = eager_reference(tmp_path, start_server(), corpus)
    settings = llm_settings(tmp_path / "data", server, **embedder_settings(server),
                            **FAST_GIVE_UP)
    with local_client(settings) as client:
        first = client.ingest(INDEX, [corpus])
        assert first.state is JobState.SUCCEEDED_WITH_ERRORS
        failed = first.missing()["indexrag.stage2"]
        server.api.outage.wait_over()
        assert client.service.outstanding(INDEX).failed_per_phase() == {"indexrag.stage2": failed}
        again = client.ingest(INDEX, [corpus])
        assert again.state is JobState.SUCCEEDED, again.errors
        assert again.count("indexrag.stage1").skipped == again.count("indexrag.stage1").total == 30
        assert again.count("indexrag.stage2").total == failed
        assert again.progress()["percent"] == 100.0
        assert kinds_and_texts(client) == expected
        assert client.service.outstanding(INDEX).status is IndexStatus.READY


def test_repair_of_a_ready_index_does_nothing_and_succeeds(
        tmp_path: Path, start_server: Callable[..., LlmTestServer]) -> None:
    """With nothing outstanding a repair is an empty job that succeeds at 100 %."""
    server = start_server()
    corpus = hotpot_corpus(tmp_path, limit=5)
    with local_client(llm_settings(tmp_path / "data", server, **embedder_settings(server))
                      ) as s:
        s.ingest(INDEX, [corpus])
        calls = server.stats.count("chat.completions", "ok")
        repair = s.indexes.repair_index(INDEX)
        assert repair.kind is JobKind.REPAIR and repair.state is JobState.SUCCEEDED
        assert repair.progress()["percent"] == 100.0
        assert server.stats.count("chat.completions", "ok") == calls


def test_finished_job_with_skipped_work_reads_100_percent() -> None:
    """Progress is done + failed + skipped of total per stage: a job that skipped most of
    its stage-2 entities is 100 % through once finished (it used to read 13 %)."""
    job = Job(job_id="j", index="i", kind=JobKind.INGEST, state=JobState.RUNNING)
    stage2 = job.count("indexrag.stage2")
    stage2.total, stage2.done, stage2.skipped = 6647, 867, 5780
    assert job.progress()["stages"]["indexrag.stage2"] == {"finished": 6647, "total": 6647,
                                                   "percent": 100.0}
    stage2.skipped = 0
    assert job.progress()["stages"]["indexrag.stage2"]["percent"] == 13.0
    job.state = JobState.SUCCEEDED
    assert job.progress()["percent"] == 100.0


@pytest.mark.parametrize("redo", ["ingest", "repair"])
def test_bridges_replaced_by_a_job_that_died_are_purged_later(
        redo: str, make_client: ClientFactory, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A re-ingest with changed text fails between stage 2 and its embed phase: the bridge
    units it replaced are reachable only from its job record, so they are kept on the index
    as outstanding purges, and the next ingest or a repair removes them from every store:
    the index ends with the clean build's units and engine counts."""
    changed = [raw(d.title, d.text.replace("born in Warsaw", "born in Warsaw, Poland"))
               if d.title == "Marie Curie" else d for d in CURIE_CORPUS]
    clean = make_client("clean")
    assert ingest(clean, changed, INDEX_CURIE).state is JobState.SUCCEEDED
    expected = (unit_snapshot(clean, INDEX_CURIE), engine_counts(clean, INDEX_CURIE))

    client = make_client("data")
    assert ingest(client, CURIE_CORPUS, INDEX_CURIE).state is JobState.SUCCEEDED
    # after_phase(results, job_id, index, position, ...): position 2 is extractive's stage 2.
    inject(monkeypatch, client, Step("after_stage2", "task", CONTROL + "after_phase",
                                     when=lambda *args, **_: args[3] == 2))
    with pytest.raises(HopindexError, match="injected at after_stage2"):
        ingest(client, changed, INDEX_CURIE)
    outstanding = client.service.outstanding(INDEX_CURIE)
    assert outstanding.status is IndexStatus.PARTIAL
    assert outstanding.failed_per_phase().get("purge", 0) > 0
    job = (ingest(client, changed, INDEX_CURIE) if redo == "ingest"
           else client.indexes.repair_index(INDEX_CURIE))
    assert job.state is JobState.SUCCEEDED, job.reason
    assert client.service.outstanding(INDEX_CURIE).status is IndexStatus.READY
    assert (unit_snapshot(client, INDEX_CURIE), engine_counts(client, INDEX_CURIE)) == expected


def test_deleting_a_failed_document_clears_its_failed_item(
        tmp_path: Path, start_server: Callable[..., LlmTestServer]) -> None:
    """A document whose stage 1 failed for good is outstanding until it is deleted; then
    the index is ready, with nothing left to repair."""
    marker = "zz-never-valid-zz"
    server = start_server(invalid_json_marker=marker)
    with local_client(llm_settings(tmp_path / "data", server, **embedder_settings(server))
                      ) as s:
        bad = raw("Broken", f"The model answers {marker} badly every time.", doc_id="broken")
        job = ingest(s, [*CURIE_CORPUS[:2], bad], INDEX_CURIE)
        assert job.missing() == {"indexrag.stage1": 1}
        assert [f.item for f in s.service.outstanding(INDEX_CURIE).failed] == ["broken"]
        assert s.delete_documents(INDEX_CURIE, ["broken"]).state is JobState.SUCCEEDED
        assert s.service.backends.state.list_failed_items(INDEX_CURIE) == []
        assert s.service.outstanding(INDEX_CURIE).status is IndexStatus.READY


def test_text_marked_indexed_that_no_unit_was_built_from_is_found_and_repaired(
        tmp_path: Path, start_server: Callable[..., LlmTestServer]) -> None:
    """Text stored behind a job's back and marked with its own hash (what a finalize that
    hashed whatever was stored used to do) passes the quick status; the verifying one
    (``repair --check``) finds that the document's passage is not a piece of it, and a
    repair rebuilds it: the index ends with a clean build's units of the text it holds."""
    server = start_server()
    settings = llm_settings(tmp_path / "data", server, **embedder_settings(server))
    changed = [{"id": doc_id_from_title(d.title), "title": d.title,
                "text": d.text + (" Revised." if n == 1 else "")}
               for n, d in enumerate(CURIE_CORPUS)]
    corpus = tmp_path / "changed.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in changed))
    with local_client(llm_settings(tmp_path / "clean", server, **embedder_settings(server))
                      ) as s:
        s.ingest(INDEX, [corpus], method="extractive")
        expected = sorted(kinds_and_texts(s).values())
    with local_client(settings) as client:
        ingest(client, CURIE_CORPUS, INDEX, method="extractive")
        state = client.service.backends.state
        target = changed[1]
        state.put_documents([Document(
            doc_id=target["id"], index=INDEX, title=target["title"], text=target["text"],
            content_hash=content_hash(target["title"], target["text"]), metadata={})])
        assert client.service.outstanding(INDEX).status is IndexStatus.READY
        found = client.service.outstanding(INDEX, verify=True)
        assert (found.status, found.documents, found.changed) == (
            IndexStatus.PARTIAL, [target["id"]], [target["id"]])
        repaired = client.indexes.repair_index(INDEX)
        assert repaired.state is JobState.SUCCEEDED, repaired.reason
        assert client.service.outstanding(INDEX, verify=True).status is IndexStatus.READY
        assert sorted(kinds_and_texts(client).values()) == expected


def test_finalize_marks_a_document_only_with_the_text_its_job_read(
        make_client: ClientFactory) -> None:
    """A document whose stored text changed while its job ran keeps no mark (the next
    ingest or a repair redoes it); one unchanged gets the hash of the text the job read."""
    client = make_client()
    ingest(client, CURIE_CORPUS[:2], INDEX_CURIE)
    state = client.service.backends.state
    first, second = state.get_documents(INDEX_CURIE, [doc_id_from_title(d.title)
                                                      for d in CURIE_CORPUS[:2]])
    read = {d.doc_id: d.content_hash for d in (first, second)}
    state.put_documents([replace(first, content_hash=""),
                         replace(second, text=second.text + " Changed.", content_hash="")])
    job = Job(job_id="finalizing", index=INDEX_CURIE, kind=JobKind.INGEST,
              state=JobState.RUNNING)
    state.create_job(job)
    keep_scope(client.service.runtime, job.job_id,
               Scope(doc_ids=[first.doc_id, second.doc_id], hashes=read))
    finalize(client.service.runtime, job.job_id, INDEX_CURIE)
    assert state.document_hashes(INDEX_CURIE) == {first.doc_id: read[first.doc_id],
                                                  second.doc_id: ""}
