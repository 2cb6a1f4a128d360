"""With JSON logs, every line ``hopindex worker``, ``beat`` and ``serve`` write on stderr is
one JSON object with timestamp, level, logger and event: Celery's own records and a
failed task's traceback included."""

from __future__ import annotations

import json
import subprocess
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from hopindex.core.settings import Settings
from hopindex.testing.redis_server import free_port
from tests import waiting
from tests.workers.logged_processes import LoggedProcess, celery_argv, hopindex_argv, settings_env

pytestmark = pytest.mark.integration

REQUIRED_KEYS = {"timestamp", "level", "logger", "event"}
WAIT_S = 120.0


def json_records(text: str) -> list[dict[str, Any]]:
    """Every non-empty line as a JSON object holding the four keys (fails on any other)."""
    records = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise AssertionError(f"stderr line {number} is not JSON: {line!r}") from exc
        assert isinstance(record, dict) and record.keys() >= REQUIRED_KEYS, line
        records.append(record)
    return records


def wait_for(process: LoggedProcess, text: str) -> None:
    def written() -> bool:
        assert process.process.poll() is None, f"{process.name} ended:\n{process.stderr()}"
        return text in process.stderr()

    try:
        waiting.wait_until(written, what=f"{text!r} from {process.name}", timeout_s=WAIT_S,
                           interval_s=0.2)
    except AssertionError as failed:
        failed.add_note(f"{process.name}'s stderr ends:\n{process.stderr()[-3000:]}")
        raise


def process_settings(tmp_path: Path, redis_url: str | None, **overrides: object) -> Settings:
    values: dict[str, object] = {"data_dir": tmp_path / "data", **overrides}
    if redis_url is not None:
        values.update(broker_url=redis_url, state_url=redis_url)
    return Settings(**values).resolved()  # type: ignore[arg-type]


def test_a_json_worker_logs_a_failed_task_as_json(private_redis: str, tmp_path: Path) -> None:
    """``hopindex worker --json`` (prefork: the task runs in a pool process) given a ping
    without its argument: the failure's traceback is the ``exception`` of one record,
    and no line of stderr, Celery's start-up and task records included, is anything but
    a JSON record; the plain-text banner is not printed."""
    settings = process_settings(tmp_path, private_redis)
    env = settings_env(settings, HOPINDEX_LOG_LEVEL="info")
    argv = hopindex_argv("worker", "--json", "--queues", "control", "--pool", "prefork",
                         "--concurrency", "1", "--name", "jsonlogs@%h")
    with LoggedProcess(argv, env, log_dir=tmp_path, name="worker",
                       ready_mark=" ready.") as worker:
        worker.wait_ready()
        subprocess.run(celery_argv("call", "hopindex.control.ping", "--args", "[]"), env=env,
                       capture_output=True, timeout=WAIT_S, check=True)
        wait_for(worker, "raised unexpected")
    records = json_records(worker.stderr())
    failed = [r for r in records if r["logger"] == "celery.app.trace" and "exception" in r]
    assert len(failed) == 1
    assert failed[0]["level"] == "error"
    assert failed[0]["exception"].startswith("Traceback (most recent call last)")
    assert "TypeError: ping() missing 1 required positional argument" in failed[0]["exception"]
    assert any(r["event"] == "task_failed" and r["logger"] == "hopindex.workers.base"
               for r in records)
    assert any(r["event"].endswith(" ready.") for r in records)
    assert "[queues]" not in worker.stdout()


def test_a_json_beat_logs_json(private_redis: str, tmp_path: Path) -> None:
    """``hopindex beat`` with HOPINDEX_LOG_FORMAT=json (the setting, not the flag): Celery
    beat's start-up and its sending of the reaper are JSON records, and nothing else
    reaches stderr or stdout."""
    settings = process_settings(tmp_path, private_redis, reaper_interval_s=1,
                                log_format="json", log_level="info")
    env = settings_env(settings)
    with LoggedProcess(hopindex_argv("beat"), env, log_dir=tmp_path, name="beat",
                       ready_mark="beat: Starting...") as beat:
        beat.wait_ready()
        wait_for(beat, "Sending due task reap-stalled-jobs")
    records = json_records(beat.stderr())
    assert any(r["logger"] == "celery.beat" and "reap-stalled-jobs" in r["event"]
               for r in records)
    assert beat.stdout() == ""


def test_a_json_server_logs_json(tmp_path: Path) -> None:
    """``hopindex serve --json`` reports where it listens as a record (not a line for
    people) and logs as JSON until it stops."""
    port = free_port()
    settings = process_settings(tmp_path, None)
    env = settings_env(settings, HOPINDEX_LOG_LEVEL="info")
    argv = hopindex_argv("serve", "--json", "--port", str(port))
    with LoggedProcess(argv, env, log_dir=tmp_path, name="serve",
                       ready_mark='"api_listening"') as server:
        server.wait_ready()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=30) as answer:
            assert answer.status == 200
        with pytest.raises(urllib.error.HTTPError):
            urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/nothing", timeout=30)
    records = json_records(server.stderr())
    listening = [r for r in records if r["event"] == "api_listening"]
    assert [r["url"] for r in listening] == [f"http://127.0.0.1:{port}"]
