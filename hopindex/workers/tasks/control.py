"""Control tasks: the chord callbacks that plan each next step of a job
(hopindex/scheduler/pipeline.py holds the planning)."""

from __future__ import annotations

from typing import Any

from hopindex.scheduler import pipeline
from hopindex.scheduler.task_names import AFTER_PHASE, FINALIZE, PING, START_QUEUED, START_STEP
from hopindex.scheduler.turns import start_next
from hopindex.workers.app import app
from hopindex.workers.runtime import current_runtime


@app.task(name=AFTER_PHASE)  # type: ignore[untyped-decorator]  # celery is untyped
def after_phase(results: list[dict[str, Any]], job_id: str, index: str, position: int,
                level: int) -> None:
    pipeline.after_phase(current_runtime(), results, job_id, index, position=position,
                         level=level)


@app.task(name=START_STEP)  # type: ignore[untyped-decorator]  # celery is untyped
def start_step(job_id: str, index: str, position: int, level: int) -> None:
    runtime = current_runtime()
    pipeline.start_step(runtime, job_id, index, position=position, level=level,
                        scope=pipeline.job_scope(runtime, job_id))


@app.task(name=FINALIZE)  # type: ignore[untyped-decorator]  # celery is untyped
def finalize(job_id: str, index: str) -> None:
    pipeline.finalize(current_runtime(), job_id, index)


@app.task(name=START_QUEUED, job_bound=False)  # type: ignore[untyped-decorator]  # celery is untyped
def start_queued(index: str) -> str | None:
    """Start the index's next queued job (its job ahead ended); returns its id."""
    return start_next(current_runtime(), index)


@app.task(name=PING, job_bound=False)  # type: ignore[untyped-decorator]  # celery is untyped
def ping(value: int) -> int:
    """A task that does nothing: measures what the queue alone can carry (benchmarks)."""
    return value
