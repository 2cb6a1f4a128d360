"""Whether a webhook may reach internal addresses is decided where it is registered and
recorded with it: a process delivering its events obeys that decision whatever its own
``HOPINDEX_WEBHOOK_ALLOW_PRIVATE``, and each delivery still resolves the name and
refuses an internal address for a webhook registered as public."""

from __future__ import annotations

import ipaddress
import json
import os
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from hopindex.core.events import Event, EventType, Webhook
from hopindex.scheduler.webhook_targets import IPAddress, WebhookTargetRefusedError
from hopindex.scheduler.webhooks import DeliveryOptions, deliver_once, new_secret
from tests.conftest import CURIE_CORPUS
from tests.scheduler.webhook_receiver import WebhookReceiver

INDEX = "curie"
EVENT = Event(event_id="7", event_type=EventType.JOB_STARTED, index=INDEX, job_id="job-1",
              data={}, created_at=1.0)
# A CLI process: the models load, the corpus is ingested, the deliveries are sent.
PROCESS_TIMEOUT_S = 300


class LoopbackResolver:
    """Resolves every name to 127.0.0.1, where the test's receiver listens: a public
    looking name whose DNS now points inside."""

    def resolve_host(self, host: str, port: int) -> list[IPAddress]:
        return [ipaddress.ip_address("127.0.0.1")]


def hopindex(*args: str, data_dir: Path, allow_private: bool) -> subprocess.CompletedProcess[str]:
    """``hopindex ARGS`` as a process of its own, with only the environment given here:
    HOPINDEX_WEBHOOK_ALLOW_PRIVATE set or absent."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOPINDEX_")}
    env["HOPINDEX_DATA_DIR"] = str(data_dir)
    env["HOPINDEX_LOG_FORMAT"] = "json"
    if allow_private:
        env["HOPINDEX_WEBHOOK_ALLOW_PRIVATE"] = "true"
    return subprocess.run([str(Path(sys.executable).with_name("hopindex")), *args], env=env,
                          capture_output=True, text=True, timeout=PROCESS_TIMEOUT_S,
                          check=False)


@pytest.mark.integration
def test_an_ingest_process_delivers_a_webhook_registered_where_private_was_allowed(
        tmp_path: Path) -> None:
    """A webhook on loopback registered by a process allowing private targets is
    delivered by a CLI ingest run without HOPINDEX_WEBHOOK_ALLOW_PRIVATE: the ingest's
    events reach the receiver and nothing is refused."""
    data_dir = tmp_path / "data"
    corpus = tmp_path / "curie.jsonl"
    corpus.write_text("".join(json.dumps({"id": f"d{i}", "title": d.title, "text": d.text})
                              + "\n" for i, d in enumerate(CURIE_CORPUS)), encoding="utf-8")
    with WebhookReceiver() as receiver:
        added = hopindex("webhooks", "add", "--index", INDEX, f"{receiver.url}",
                         data_dir=data_dir, allow_private=True)
        assert added.returncode == 0, added.stderr
        assert json.loads(added.stdout)["index"] == INDEX
        refused_here = hopindex("webhooks", "add", "--index", INDEX, f"{receiver.url}",
                                data_dir=data_dir, allow_private=False)
        assert refused_here.returncode == 65, refused_here.stderr

        ingested = hopindex("ingest", "--index", INDEX, "--quiet", str(corpus),
                            data_dir=data_dir, allow_private=False)
        assert ingested.returncode == 0, ingested.stderr
        # Closing, the ingest sent every due delivery: they are on record by now.
        types = [json.loads(body)["type"] for body, _ in receiver.received]
    assert types[0] == "job.started" and "index.ready" in types, types
    assert "webhook_refused" not in ingested.stderr


@pytest.mark.parametrize(("recorded", "process_allows", "delivered"), [
    (True, False, True),  # registered where private was allowed: delivered anywhere
    (False, True, False),  # registered as public: an internal answer is refused anywhere
    (None, True, True),  # registered before decisions were recorded: the process decides
    (None, False, False),
])
def test_delivery_obeys_the_recorded_decision(recorded: bool | None, process_allows: bool,
                                              delivered: bool) -> None:
    """A name resolving to loopback at delivery is reached or refused as the webhook's
    recorded decision says, whatever the delivering process's own setting; only a
    webhook with no recorded decision follows the process's setting."""
    options = DeliveryOptions(connect_timeout_s=2, read_timeout_s=2,
                              allow_private=process_allows, resolver=LoopbackResolver())
    with WebhookReceiver() as receiver:
        hook = Webhook(webhook_id="wh-decided", index=INDEX,
                       url=f"http://hooks.example.org:{receiver.port}/in", secret=new_secret(),
                       created_at=time.time(), allow_private=recorded)
        if delivered:
            assert deliver_once(hook, EVENT, options) == 200
            assert len(receiver.received) == 1
        else:
            with pytest.raises(WebhookTargetRefusedError, match="loopback") as caught:
                deliver_once(hook, EVENT, options)
            assert not caught.value.retryable
            # The receiver records a request before answering it: none was sent.
            assert receiver.received == []


def test_a_literal_internal_address_follows_the_recorded_decision_too() -> None:
    """No name to resolve: the literal address is checked against the recorded decision,
    so a webhook recorded as public is refused even by a process allowing private
    targets."""
    options = DeliveryOptions(connect_timeout_s=2, read_timeout_s=2, allow_private=True)
    with WebhookReceiver() as receiver:
        hook = Webhook(webhook_id="wh-literal", index=INDEX, url=receiver.url,
                       secret=new_secret(), created_at=time.time(), allow_private=False)
        with pytest.raises(WebhookTargetRefusedError, match="loopback"):
            deliver_once(hook, EVENT, options)
        assert deliver_once(replace(hook, allow_private=True), EVENT,
                            replace(options, allow_private=False)) == 200
