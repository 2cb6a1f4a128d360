"""Worker command lines: queue names are checked, and the pool follows the engines."""

from __future__ import annotations

from pathlib import Path

import pytest

from hopindex.core.errors import ConfigError, InvalidInputError
from hopindex.core.settings import Settings
from hopindex.workers.launch import Pool, choose_pool, parse_queues, run_worker, worker_argv
from hopindex.workers.queues import Queue


def _settings(tmp_path: Path, **overrides: object) -> Settings:
    return Settings(data_dir=tmp_path, **overrides).resolved()  # type: ignore[arg-type]


def test_queues_are_parsed_deduplicated_and_checked() -> None:
    """Known names keep their order once each; an unknown one is named in the error."""
    assert parse_queues("stage1, embed,stage1") == [Queue.STAGE1, Queue.EMBED]
    with pytest.raises(InvalidInputError, match=r"--queues: unknown queue.*stage3"):
        parse_queues("stage1,stage3")
    with pytest.raises(InvalidInputError, match="--queues"):
        parse_queues(" , ")


def test_the_engine_owner_gets_threads_and_others_prefork(tmp_path: Path) -> None:
    """Embedded engines allow one process: a worker writing them shares one process
    among its tasks; LLM stage workers fork; an explicit prefork embed worker is refused."""
    embedded = _settings(tmp_path)
    assert choose_pool(embedded, [Queue.CONTROL, Queue.EMBED], Pool.AUTO) is Pool.THREADS
    assert choose_pool(embedded, [Queue.STAGE1, Queue.STAGE2], Pool.AUTO) is Pool.PREFORK
    with pytest.raises(ConfigError, match="--pool threads"):
        choose_pool(embedded, [Queue.EMBED], Pool.PREFORK)
    argv = worker_argv(embedded, [Queue.EMBED], 3, Pool.AUTO, name="w@h")
    assert argv[argv.index("--pool") + 1] == "threads"
    assert argv[argv.index("--queues") + 1] == "embed,engine"  # it owns the engines
    assert argv[argv.index("--concurrency") + 1] == "3"


def test_a_worker_needs_a_broker(tmp_path: Path) -> None:
    """Without HOPINDEX_BROKER_URL there is nothing to take tasks from: say so."""
    with pytest.raises(ConfigError, match="HOPINDEX_BROKER_URL"):
        run_worker(_settings(tmp_path), [Queue.STAGE1], 1)


def test_worker_settings_are_ordered(tmp_path: Path) -> None:
    """A task limit at or above the visibility timeout would get tasks run twice while
    still running; a stall timeout within the visibility timeout would re-drive tasks
    the broker is about to redeliver anyway."""
    with pytest.raises(ConfigError, match="TASK_TIME_LIMIT_S"):
        _settings(tmp_path, task_time_limit_s=3600, visibility_timeout_s=3600)
    with pytest.raises(ConfigError, match="JOB_STALL_TIMEOUT_S"):
        _settings(tmp_path, job_stall_timeout_s=100, task_time_limit_s=50,
                  visibility_timeout_s=100)
    with pytest.raises(ConfigError, match="BROKER_URL must be a redis"):
        _settings(tmp_path, broker_url="amqp://guest@localhost//")
    env = _settings(tmp_path, broker_url="redis://h:6379/0").to_env()
    assert Settings.from_env(env).broker_url == "redis://h:6379/0"


def test_worker_metrics_listen_on_loopback_unless_told() -> None:
    """The worker's metrics endpoint has no authentication: by default it listens on
    127.0.0.1, like ``serve``; containers pass ``--metrics-host 0.0.0.0`` (compose does)."""
    import inspect

    from hopindex.api.cli_processes import worker
    from hopindex.workers.launch import run_worker

    option = next(p for p in worker.params if p.name == "metrics_host")
    assert option.default == "127.0.0.1"
    assert inspect.signature(run_worker).parameters["metrics_host"].default == "127.0.0.1"
