"""Jobs of one index take turns with workers: a job submitted behind an unfinished one is
``queued`` with its place and the job it waits for, stores nothing until its turn, and
starts on a worker the moment the job ahead ends, ending with a clean build's units."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from hopindex.core.budget import BudgetLimits
from hopindex.core.ids import doc_id_from_title
from hopindex.core.models import JobState
from hopindex.readers import RawDocument, ReadResult
from hopindex.testing.llm_server import LlmTestServer
from tests.workers.conftest import (
    INDEX,
    Cluster,
    eager_reference,
    embedder_settings,
    hotpot_corpus,
    kinds_and_texts,
    local_client,
    wait_until,
)

pytestmark = pytest.mark.integration

DOCUMENTS = 4


def _changed(corpus: Path) -> list[RawDocument]:
    """The corpus with every document's text changed a little: the same ids."""
    records = [json.loads(line) for line in corpus.read_text().splitlines()]
    return [RawDocument(doc_id=None, title=r["title"], text=r["text"] + " It was revised.",
                        metadata={}, origin=f"changed:{n}") for n, r in enumerate(records)]


def test_a_job_behind_a_paused_one_is_queued_and_starts_when_that_one_ends(
        tmp_path: Path, start_server: Callable[..., LlmTestServer],
        cluster: Callable[..., Cluster]) -> None:
    """The first ingest pauses on a 10-token budget. A second ingest and a delete of the
    same index are queued: positions 1 and 2, each waiting for the job ahead, the
    second's changed texts not stored. Cancelling the paused job starts the second on a
    worker, then the delete; the index ends with a clean build of the changed texts
    less the deleted document."""
    server = start_server()
    corpus = hotpot_corpus(tmp_path, limit=DOCUMENTS)
    changed = _changed(corpus)
    kept = tmp_path / "kept.jsonl"
    kept.write_text("".join(json.dumps({"title": d.title, "text": d.text}) + "\n"
                            for d in changed[1:]))
    expected = eager_reference(tmp_path, server, kept)

    c = cluster(server, **embedder_settings(server))
    c.start("engines", "control,embed", concurrency=2)
    c.start("llm", "stage1,stage2", concurrency=2)
    with local_client(c.settings) as client:
        first = client.ingest(INDEX, [corpus], limits=BudgetLimits(max_llm_tokens=10),
                              wait=False)
        first = wait_until(client, first.job_id, lambda j: j.state is JobState.PAUSED)
        assert first.state is JobState.PAUSED, first.reason
        stored = {d.doc_id: d.text for d in client.service.get_documents(
            INDEX, list(client.service.backends.state.document_hashes(INDEX)))}

        second = client.ingest_read(INDEX, ReadResult(documents=changed), wait=False)
        assert (second.state, second.queue_position, second.waits_for) == (
            JobState.QUEUED, 1, first.job_id)
        removed = doc_id_from_title(changed[0].title)
        assert removed in stored
        deleting = client.delete_documents(INDEX, [removed], wait=False)
        assert (deleting.state, deleting.queue_position, deleting.waits_for) == (
            JobState.QUEUED, 2, second.job_id)
        kept = client.service.get_documents(INDEX, list(stored))
        assert {d.doc_id: d.text for d in kept} == stored

        client.jobs.cancel_job(first.job_id)
        second = wait_until(client, second.job_id, lambda j: j.state.is_final)
        assert second.state is JobState.SUCCEEDED, second.reason
        deleting = wait_until(client, deleting.job_id, lambda j: j.state.is_final)
        assert deleting.state is JobState.SUCCEEDED, deleting.reason
        assert client.indexes.describe_index(INDEX, verify=True).status.value == "ready"
        got = kinds_and_texts(client)
    assert sorted(got.values()) == sorted(expected.values())
