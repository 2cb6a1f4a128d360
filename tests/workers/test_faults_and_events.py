"""A distributed ingest under injected 429s and 5xx with one document that always
fails: the job succeeds with errors naming that document, and index.ready reaches a subscriber
that connected late (resuming by id) and a webhook whose Standard Webhooks signature
checks out, delivered by a worker of the webhooks queue."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
import standardwebhooks

from hopindex.api.client.local import LocalClient
from hopindex.core.events import Event, EventType
from hopindex.core.models import JobState
from hopindex.testing.llm_server import LlmTestServer
from tests.scheduler.webhook_receiver import WebhookReceiver
from tests.waiting import wait_until as wait_for
from tests.workers.conftest import INDEX, Cluster, hotpot_corpus, local_client, wait_until

pytestmark = pytest.mark.integration

MARKER = "zz-always-broken-zz"
POISONED = {"id": "poisoned", "title": "Poisoned page",
            "text": f"This page makes the model answer garbage every time. {MARKER}"}


def test_faults_one_failing_document_late_subscriber_and_webhook(
        tmp_path: Path, start_server: Callable[..., LlmTestServer],
        cluster: Callable[..., Cluster]) -> None:
    """20% of calls get a 429 or a 500 and one document's replies are never valid JSON;
    the job still finishes, lists exactly that document with the reason, and the
    index.ready event reaches both consumers with its unit counts."""
    server = start_server(fail_429=0.1, fail_500=0.1, invalid_json_marker=MARKER, seed=7)
    corpus = hotpot_corpus(tmp_path, limit=60, extra=[POISONED])
    # The receiver listens on loopback, which webhooks may reach only when allowed.
    c = cluster(server, webhook_allow_private=True)
    c.start("w1", "stage1,stage2,control,embed")
    c.start("w2", "stage1,stage2,control,webhooks")
    with WebhookReceiver() as receiver, local_client(c.settings) as client:
        hook = client.webhooks.add_webhook(INDEX, receiver.url)
        cursor = client.service.backends.events.last_event_id()
        job = client.ingest(INDEX, [corpus], wait=False)
        # The subscriber connects only once the job has started, from the id it kept.
        started = _first(list(client.events.iterate_events(INDEX, cursor)),
                         EventType.JOB_STARTED)
        assert started is not None and started.job_id == job.job_id
        seen: list[Event] = []

        def subscribe() -> None:
            for event in client.events.iterate_events(INDEX, cursor, follow=True):
                seen.append(event)
                if event.event_type is EventType.INDEX_READY:
                    break

        subscriber = threading.Thread(target=subscribe, daemon=True)
        subscriber.start()
        job = client.jobs.wait_for_job(job.job_id, timeout_s=600)
        subscriber.join(timeout=60)
        deliveries = receiver.wait_for(lambda r: any(
            h.get("x-hopindex-event") == "index.ready" for _, h in r), timeout_s=60)

    assert job.state is JobState.SUCCEEDED_WITH_ERRORS, job.reason
    assert [(e.item, e.stage) for e in job.errors] == [("poisoned", "indexrag.stage1")]
    assert "JSON" in job.errors[0].reason or "json" in job.errors[0].reason
    assert job.llm_total.retries > 0  # the faults happened and were absorbed
    ready = _first(seen, EventType.INDEX_READY)
    assert ready is not None and ready.job_id == job.job_id
    assert seen[0].event_id == started.event_id  # resumed exactly after the cursor
    assert ready.data["failed"] == ["poisoned"] and ready.data["units"]["aku"] > 0
    body, headers = next((b, h) for b, h in deliveries
                         if h.get("x-hopindex-event") == "index.ready")
    assert standardwebhooks.Webhook(hook.secret).verify(body, headers)["id"] == ready.event_id
    with pytest.raises(standardwebhooks.WebhookVerificationError):
        standardwebhooks.Webhook("whsec_" + "A" * 43 + "=").verify(body, headers)
    assert json.loads(body)["id"] == ready.event_id


def _first(events: list[Event], event_type: EventType) -> Event | None:
    return next((e for e in events if e.event_type is event_type), None)


def test_cancel_stops_scheduling_and_publishes(
        tmp_path: Path, start_server: Callable[..., LlmTestServer],
        cluster: Callable[..., Cluster]) -> None:
    """Cancelling a running job marks it cancelling at once and cancelled once its running
    tasks have returned; its queued tasks do nothing, no later phase starts, and
    job.cancelled is in the log."""
    server = start_server(latency_s=0.05)
    corpus = hotpot_corpus(tmp_path, limit=200)
    c = cluster(server, stage1_batch_docs=4)
    c.start("w1", "stage1,stage2,control,embed", concurrency=2)
    with local_client(c.settings) as client:
        job = client.ingest(INDEX, [corpus], wait=False)
        wait_until(client, job.job_id, lambda j: j.count("indexrag.stage1").done > 0,
                   timeout_s=120)
        cancelled = client.jobs.cancel_job(job.job_id)
        assert cancelled.state is JobState.CANCELLING
        after = client.jobs.wait_for_job(job.job_id, timeout_s=120)
        # The event log is another store than the job record: the worker appends the
        # event just after the state changes, so the client waits for it to land.
        types = wait_for(lambda: _types_once(client, EventType.JOB_CANCELLED),
                         what="job.cancelled in the event log")
    assert after.state is JobState.CANCELLED
    assert after.count("indexrag.stage1").done < after.count("indexrag.stage1").total
    assert after.count("indexrag.stage2").total == 0  # stage 2 was never planned
    assert EventType.JOB_CANCELLED in types and EventType.INDEX_READY not in types


def _types_once(client: LocalClient, expected: EventType) -> list[EventType] | None:
    """The index's event types once ``expected`` is among them, else None."""
    types = [e.event_type for e in client.events.iterate_events(INDEX)]
    return types if expected in types else None
