"""A server shutting down while its embedded job runs cancels the job, and the job says
why: the server shut down, not a request, with what redoes its work."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import requests

from hopindex.api.http.keys import KeyRing
from hopindex.api.http.server import BackgroundServer
from hopindex.api.service import Hopindex
from hopindex.core.events import EventType
from hopindex.core.models import JobState
from hopindex.testing.llm_server import LlmTestServer
from tests.conftest import CURIE_CORPUS
from tests.methods.indexrag.conftest import llm_settings
from tests.waiting import wait_until

pytestmark = pytest.mark.integration

INDEX = "curie"


def test_a_job_cut_short_by_shutdown_says_the_server_shut_down(
        tmp_path: Path, start_server: Callable[..., LlmTestServer]) -> None:
    """An ingest running in the server (one slow LLM call at a time) when the server
    stops ends cancelled, with one job.cancelled event, its record saying the server
    shut down and how to redo it, never "cancelled by request"."""
    llm = start_server(latency_s=0.25)
    settings = llm_settings(tmp_path / "data", llm, llm_concurrency=1, stage1_batch_docs=1)
    records = [{"id": f"d{i}", "title": d.title, "text": d.text}
               for i, d in enumerate(CURIE_CORPUS)]
    with Hopindex(settings) as service:
        server = BackgroundServer(service, KeyRing()).__enter__()
        try:
            answer = requests.post(f"{server.url}/v1/indexes/{INDEX}/documents", json=records,
                                   timeout=60)
            assert answer.status_code == 202, answer.text
            job_id = answer.json()["job_id"]
            wait_until(lambda: sum(llm.stats.by_kind.values()) >= 1,
                       what="the job's first LLM call", timeout_s=60, interval_s=0.05)
        finally:
            server.__exit__(None, None, None)  # waits for the job's thread
        job = service.get_job(job_id)
        events = [e for e in service.backends.events.read_events(index=INDEX, limit=1000)
                  if e.job_id == job_id]
    assert job.state is JobState.CANCELLED, (job.state, job.reason)
    assert job.reason.startswith("cancelled because the server running it shut down; "
                                 "ingest the same input again"), job.reason
    assert "by request" not in job.reason
    assert [e.event_type for e in events].count(EventType.JOB_CANCELLED) == 1
