"""Flower, started as ``celery -A hopindex.workers.app flower`` on hopindex's broker, sees
hopindex's tasks: the app sends task events without anyone enabling them."""

from __future__ import annotations

import json
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from hopindex.core.settings import Settings
from hopindex.testing.redis_server import free_port
from hopindex.testing.workers import WorkerProcess
from hopindex.workers.queues import Queue
from tests import waiting
from tests.workers.logged_processes import LoggedProcess, celery_argv, settings_env

pytestmark = pytest.mark.integration

FLOWER_TIMEOUT_S = 120.0
# How long a ping may take to show in flower before another is sent: a ping's trip
# (``celery call``, the worker, its events, flower) takes well under a second on a quiet
# machine; this leaves room for a loaded one, where the call's own process start counts.
RESEND_AFTER_S = 20.0


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as answer:
        return json.loads(answer.read())


def wait_for_flower(base: str, flower: LoggedProcess) -> None:
    def healthy() -> bool:
        assert flower.process.poll() is None, f"flower exited ({flower.process.returncode})"
        try:
            with urllib.request.urlopen(f"{base}/healthcheck", timeout=5) as answer:
                return bool(answer.read() == b"OK")
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            return False  # not listening yet

    try:
        waiting.wait_until(healthy, what="flower's healthcheck", timeout_s=FLOWER_TIMEOUT_S,
                           interval_s=0.5)
    except AssertionError as failed:
        failed.add_note(f"flower did not start:\n{flower.stderr()[-3000:]}")
        raise


def test_flower_lists_a_hopindex_task(private_redis: str, tmp_path: Path) -> None:
    """A ping sent with ``celery call`` shows in Flower's ``/api/tasks`` as a succeeded
    ``hopindex.control.ping`` run by the hopindex worker, routed to the control queue."""
    pytest.importorskip("flower")
    settings = Settings(data_dir=tmp_path / "data", broker_url=private_redis,
                        state_url=private_redis).resolved()
    env = settings_env(settings)
    base = f"http://127.0.0.1:{free_port()}"
    port = base.rsplit(":", 1)[1]
    flower_argv = celery_argv("flower", "--address=127.0.0.1", f"--port={port}")
    with WorkerProcess(settings, [Queue.CONTROL.value], concurrency=1, pool="threads",
                       name="flowered", log_path=tmp_path / "worker.log") as worker, \
            LoggedProcess(flower_argv, {**env, "FLOWER_UNAUTHENTICATED_API": "true"},
                          log_dir=tmp_path, name="flower") as flower:
        worker.wait_ready()
        wait_for_flower(base, flower)
        # Flower sees only the events sent once it listens: a task sent while its event
        # consumer was still connecting is missed, so another is sent when the last one
        # has not shown for RESEND_AFTER_S, until one is seen.
        sent: list[str] = []
        last_sent = float("-inf")

        def seen_in_flower() -> dict[str, Any] | None:
            nonlocal last_sent
            if time.monotonic() - last_sent > RESEND_AFTER_S:
                sent.append(subprocess.run(
                    celery_argv("call", "hopindex.control.ping", "--args", "[7]"), env=env,
                    capture_output=True, text=True, timeout=120, check=True).stdout.strip())
                last_sent = time.monotonic()
            tasks = get_json(f"{base}/api/tasks")
            done = [tasks[t] for t in sent if t in tasks and tasks[t]["state"] == "SUCCESS"]
            return done[0] if done else None

        try:
            seen = waiting.wait_until(seen_in_flower, what="a ping to reach flower",
                                      timeout_s=FLOWER_TIMEOUT_S, interval_s=0.5)
        except AssertionError as failed:
            failed.add_note(f"flower's stderr ends:\n{flower.stderr()[-3000:]}")
            raise
    assert seen is not None  # wait_until returns a truthy value
    assert seen["name"] == "hopindex.control.ping"
    assert seen["result"] == "7"
    assert seen["routing_key"] == Queue.CONTROL.value
    assert seen["worker"].startswith("flowered@")
