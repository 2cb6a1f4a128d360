"""``celery -A hopindex.workers.app ...`` finds hopindex's broker, queues and routes in
the environment: the control commands reach a live ``hopindex worker``, ``call`` lands
on a queue it takes, ``purge`` empties hopindex's queues, and a plain ``celery worker``
takes the stage queues."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from hopindex.core.settings import Settings
from hopindex.testing.workers import WorkerProcess
from hopindex.workers.queues import Queue
from tests.workers.logged_processes import LoggedProcess, celery_argv, settings_env

CLI_TIMEOUT_S = 120.0
# Remote-control replies wait this long; a busy machine answers late.
REPLY_TIMEOUT_S = "15"

pytestmark = pytest.mark.integration


def cli_settings(data_dir: Path, redis_url: str) -> Settings:
    return Settings(data_dir=data_dir, broker_url=redis_url, state_url=redis_url).resolved()


def celery(settings: Settings, *args: str) -> subprocess.CompletedProcess[str]:
    """``celery -A hopindex.workers.app ARGS`` with ``settings`` in the environment only."""
    done = subprocess.run(celery_argv(*args), env=settings_env(settings), capture_output=True,
                          text=True, timeout=CLI_TIMEOUT_S, check=False)
    assert done.returncode == 0, f"celery {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def worker(tmp_path_factory: pytest.TempPathFactory, private_redis: str
           ) -> Iterator[WorkerProcess]:
    """A ``hopindex worker`` on the control and stage2 queues (not stage1)."""
    tmp = tmp_path_factory.mktemp("celery-cli")
    settings = cli_settings(tmp / "data", private_redis)
    with WorkerProcess(settings, [Queue.CONTROL.value, Queue.STAGE2.value], concurrency=1,
                       pool="threads", name="cli", log_path=tmp / "worker.log") as process:
        yield process.wait_ready()


def node_of(worker: WorkerProcess, replies: dict[str, object]) -> str:
    """The reply's node name of ``worker`` (``cli@<host>``)."""
    nodes = [n for n in replies if n.startswith(f"{worker.name}@")]
    assert len(nodes) == 1, f"{worker.name} not among the replies {sorted(replies)}"
    return nodes[0]


def test_inspect_ping_reaches_the_worker(worker: WorkerProcess, private_redis: str,
                                         tmp_path: Path) -> None:
    """``celery inspect ping`` goes to hopindex's Redis and the worker answers pong (it
    said "No nodes replied" when the app read no settings outside ``hopindex worker``)."""
    done = celery(cli_settings(tmp_path, private_redis), "inspect", "ping", "--json",
                  "--timeout", REPLY_TIMEOUT_S)
    replies = json.loads(done.stdout)
    assert replies[node_of(worker, replies)] == {"ok": "pong"}


def test_inspect_active_queues_lists_the_workers_queues(
        worker: WorkerProcess, private_redis: str, tmp_path: Path) -> None:
    """The worker reports the queues it was started on, each a direct exchange of its
    own name as the routes declare them."""
    done = celery(cli_settings(tmp_path, private_redis), "inspect", "active_queues",
                  "--json", "--timeout", REPLY_TIMEOUT_S)
    replies = json.loads(done.stdout)
    queues = replies[node_of(worker, replies)]
    assert sorted(q["name"] for q in queues) == ["control", "stage2"]
    assert all(q["exchange"]["name"] == q["name"] == q["routing_key"] for q in queues)


def test_call_lands_on_a_queue_a_worker_takes(worker: WorkerProcess, private_redis: str,
                                              tmp_path: Path) -> None:
    """``celery call`` of a hopindex task is routed as hopindex routes it (control), so the
    worker runs it and ``celery result`` reads its value; it went to the ``celery``
    queue, which no hopindex worker takes, before."""
    settings = cli_settings(tmp_path, private_redis)
    task_id = celery(settings, "call", "hopindex.control.ping", "--args", "[7]").stdout.strip()
    assert celery(settings, "result", task_id).stdout.strip() == "7"
    assert redis.Redis.from_url(private_redis).llen("celery") == 0


def test_purge_empties_hopindex_queues(worker: WorkerProcess, private_redis: str,
                                       tmp_path: Path) -> None:
    """A message waiting on stage1 (which the worker does not take) is among the
    messages ``celery purge`` removes from hopindex's queues."""
    settings = cli_settings(tmp_path, private_redis)
    client = redis.Redis.from_url(private_redis)
    client.delete(Queue.STAGE1.value)
    celery(settings, "call", "hopindex.control.ping", "--args", "[1]", "--queue", "stage1")
    assert client.llen(Queue.STAGE1.value) == 1
    done = celery(settings, "purge", "-f")
    assert "Purged 1 message from 6 known task queues" in done.stdout
    assert client.llen(Queue.STAGE1.value) == 0


def test_a_plain_celery_worker_takes_the_stage_queues(private_redis: str,
                                                      tmp_path: Path) -> None:
    """``celery -A hopindex.workers.app worker`` with no ``-Q`` takes the six stage queues,
    never the engine queue (only the engine owner may answer engine calls)."""
    settings = cli_settings(tmp_path / "data", private_redis)
    argv = celery_argv("worker", "--pool", "solo", "--hostname", "plain@%h", "-l", "INFO")
    with LoggedProcess(argv, settings_env(settings), log_dir=tmp_path, name="plain",
                       ready_mark=" ready.") as plain:
        plain.wait_ready()
        done = celery(settings, "inspect", "active_queues", "--json",
                      "--timeout", REPLY_TIMEOUT_S)
    replies = json.loads(done.stdout)
    queues = replies[next(n for n in replies if n.startswith("plain@"))]
    assert sorted(q["name"] for q in queues) == sorted(q.value for q in Queue)
