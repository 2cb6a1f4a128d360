"""A worker's metrics across its processes (prometheus_client's multiprocess mode).

Each case runs in a fresh interpreter: the mode is fixed when prometheus_client is
first imported, and this test process imported it long ago.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

PREPARE_AND_FORK = """
import json, os, sys
from pathlib import Path
from celery import signals
from hopindex.core.settings import Settings
from hopindex.monitoring.multiprocess import prepare_multiprocess

folder = Path(sys.argv[1])
folder.mkdir(exist_ok=True)
(folder / "counter_999999.db").write_bytes(b"left by an earlier run")
prepare_multiprocess(Settings(metrics_dir=str(folder)))
from hopindex.monitoring import metrics as m
from hopindex.monitoring.exposition import multiprocess_registry, render_metrics

children = []
for i in range(3):  # three pool children, each running tasks in its own memory
    pid = os.fork()
    if pid == 0:
        m.STAGE_TASKS.labels(stage="stage1", outcome="succeeded").inc(i + 1)
        m.STAGE_TASKS_IN_PROGRESS.labels(stage="stage1").inc()
        os._exit(0)
    os.waitpid(pid, 0)
    children.append(pid)
registry = multiprocess_registry()
done = {"stage": "stage1", "outcome": "succeeded"}
report = {"stale_gone": not (folder / "counter_999999.db").exists(),
          "total": registry.get_sample_value("hopindex_stage_tasks_total", done),
          "running": registry.get_sample_value("hopindex_stage_tasks_in_progress",
                                               {"stage": "stage1"})}
signals.worker_process_shutdown.send(sender=None, pid=children[0], exitcode=0)
report["running_after_one_exit"] = registry.get_sample_value(
    "hopindex_stage_tasks_in_progress", {"stage": "stage1"})
report["total_after_one_exit"] = registry.get_sample_value("hopindex_stage_tasks_total", done)
report["exposed"] = b'hopindex_stage_tasks_total{outcome="succeeded",stage="stage1"} 6.0' in (
    render_metrics()[0])
print(json.dumps(report))
"""


def run_python(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args],
                          capture_output=True, text=True, timeout=60, check=False)


def last_json(done: subprocess.CompletedProcess[str]) -> Any:
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_children_values_are_summed_and_dead_ones_leave_live_gauges(tmp_path: Path) -> None:
    """Three forked children's counters add up at the endpoint; the directory is emptied
    of an earlier run's files first; a child marked dead (worker_process_shutdown) drops
    out of the in-progress gauge but keeps its counted tasks."""
    report = last_json(run_python(PREPARE_AND_FORK, str(tmp_path / "metrics")))
    assert report == {"stale_gone": True, "total": 6.0, "running": 3.0,
                      "running_after_one_exit": 2.0, "total_after_one_exit": 6.0,
                      "exposed": True}


def test_a_worker_without_a_metrics_dir_gets_a_private_one_removed_at_exit() -> None:
    """No HOPINDEX_METRICS_DIR: a fresh temporary directory, gone when the worker exits."""
    done = run_python("""
        import os
        from hopindex.core.settings import Settings
        from hopindex.monitoring.multiprocess import prepare_multiprocess
        path = prepare_multiprocess(Settings())
        print(os.environ["PROMETHEUS_MULTIPROC_DIR"] == str(path), path.is_dir(), path)
    """)
    assert done.returncode == 0, done.stderr
    same, existed, path = done.stdout.strip().splitlines()[-1].split()
    assert (same, existed) == ("True", "True")
    assert not Path(path).exists()


def test_setting_up_after_prometheus_client_was_imported_fails_clearly() -> None:
    """Too late to switch modes: a ConfigError says so instead of metrics silently lost."""
    done = run_python("""
        import prometheus_client
        from hopindex.core.errors import ConfigError
        from hopindex.core.settings import Settings
        from hopindex.monitoring.multiprocess import prepare_multiprocess
        try:
            prepare_multiprocess(Settings())
        except ConfigError as exc:
            print("refused:", exc)
    """)
    assert "refused: prometheus_client was imported before" in done.stdout, done.stderr


def test_a_worker_refuses_a_metrics_port_it_cannot_serve() -> None:
    """Metrics off, or a port outside TCP's range: the worker says so before starting."""
    from hopindex.core.errors import ConfigError, InvalidInputError
    from hopindex.core.settings import MetricsMode, Settings
    from hopindex.workers.launch import run_worker
    from hopindex.workers.queues import Queue

    settings = Settings(broker_url="redis://127.0.0.1:1/0")
    with pytest.raises(InvalidInputError, match="--metrics-port"):
        run_worker(settings, [Queue.STAGE1], 1, metrics_port=70_000)
    with pytest.raises(ConfigError, match="HOPINDEX_METRICS=on"):
        run_worker(replace(settings, metrics=MetricsMode.OFF), [Queue.STAGE1], 1,
                   metrics_port=9100)
