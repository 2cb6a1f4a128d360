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
from tests.workers.logged_processes import LoggedProcess, celery_argv, settings_env

pytestmark = pytest.mark.integration

FLOWER_TIMEOUT_S = 120.0


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as answer:
        return json.loads(answer.read())


def wait_for_flower(base: str, flower: LoggedProcess) -> None:
    deadline = time.monotonic() + FLOWER_TIMEOUT_S
    while time.monotonic() < deadline:
        if flower.process.poll() is not None:
            break
        try:
            with urllib.request.urlopen(f"{base}/healthcheck", timeout=5) as answer:
                if answer.read() == b"OK":
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.5)
    raise AssertionError(f"flower did not start:\n{flower.stderr()[-3000:]}")


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
        seen: dict[str, Any] | None = None
        deadline = time.monotonic() + FLOWER_TIMEOUT_S
        # Flower sees only the events sent once it listens: a task sent while its event
        # consumer was still connecting is missed, so send another until one is seen.
        while seen is None and time.monotonic() < deadline:
            sent = subprocess.run(celery_argv("call", "hopindex.control.ping", "--args", "[7]"),
                                  env=env, capture_output=True, text=True, timeout=120,
                                  check=True).stdout.strip()
            waited = time.monotonic() + 20
            while time.monotonic() < waited:
                task = get_json(f"{base}/api/tasks").get(sent)
                if task is not None and task["state"] == "SUCCESS":
                    seen = task
                    break
                time.sleep(0.5)
    assert seen is not None, f"no task reached flower:\n{flower.stderr()[-3000:]}"
    assert seen["name"] == "hopindex.control.ping"
    assert seen["result"] == "7"
    assert seen["routing_key"] == Queue.CONTROL.value
    assert seen["worker"].startswith("flowered@")
