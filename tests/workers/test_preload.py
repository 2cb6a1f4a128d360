"""A worker that takes LLM work imports the LLM client's stack before its pool starts,
so that no prefork child spends its first task's time limit importing it; a worker
without LLM work starts without it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hopindex.workers.preload import LLM_MODULES, takes_llm_work
from tests.workers.logged_processes import LoggedProcess, celery_argv, hopindex_argv, settings_env
from tests.workers.test_json_logs import process_settings

PRELOADED = "worker_modules_preloaded"


@pytest.mark.parametrize(("queues", "expected"), [
    (["stage1"], True),
    (["control", "stage2"], True),
    (["judge"], True),
    (["control", "embed", "engine"], False),
    (["webhooks"], False),
    (None, True),  # no queues named: the worker takes every queue
    ([], True),
])
def test_which_workers_take_llm_work(queues: list[str] | None, expected: bool) -> None:
    assert takes_llm_work(queues) is expected


def _events(stderr: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]


@pytest.mark.integration
@pytest.mark.parametrize("door", ["hopindex", "celery"])
def test_an_llm_worker_imports_the_client_before_its_pool_starts(
        door: str, private_redis: str, tmp_path: Path) -> None:
    """Both ways of starting a worker (``hopindex worker`` and Celery's own command)
    log the preload, naming the LLM client's modules, before the worker is ready: the
    pool's children are forked after it and inherit them."""
    settings = process_settings(tmp_path, private_redis)
    env = settings_env(settings, HOPINDEX_LOG_LEVEL="debug", HOPINDEX_LOG_FORMAT="json")
    common = ("--pool", "prefork", "--concurrency", "1")
    argv = (hopindex_argv("worker", "--json", "--queues", "stage1,control", *common,
                          "--name", "preload@%h") if door == "hopindex"
            else celery_argv("worker", "-Q", "stage1,control", *common, "-n", "preload@%h"))
    with LoggedProcess(argv, env, log_dir=tmp_path, name="worker",
                       ready_mark=" ready.") as worker:
        worker.wait_ready()
        events = _events(worker.stderr())
    preloads = [e for e in events if e["event"] == PRELOADED]
    assert len(preloads) == 1, worker.stderr()[-3000:]
    assert preloads[0]["modules"] == list(LLM_MODULES)
    ready = next(i for i, e in enumerate(events) if " ready." in str(e["event"]))
    assert events.index(preloads[0]) < ready


@pytest.mark.integration
def test_a_worker_without_llm_queues_does_not_import_the_client(
        private_redis: str, tmp_path: Path) -> None:
    settings = process_settings(tmp_path, private_redis)
    env = settings_env(settings, HOPINDEX_LOG_LEVEL="debug")
    argv = hopindex_argv("worker", "--json", "--queues", "webhooks", "--pool", "prefork",
                         "--concurrency", "1", "--name", "nollm@%h")
    with LoggedProcess(argv, env, log_dir=tmp_path, name="worker",
                       ready_mark=" ready.") as worker:
        worker.wait_ready()
        stderr = worker.stderr()
    assert " ready." in stderr
    assert PRELOADED not in stderr
