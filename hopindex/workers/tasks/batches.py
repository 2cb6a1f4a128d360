"""The provider-batch poller as a beat task (hopindex/scheduler/provider_batches.py): every
``llm_batch_poll_interval_s`` it follows the batches of the jobs waiting on them."""

from __future__ import annotations

from hopindex.scheduler.provider_batches import poll_provider_batches
from hopindex.scheduler.task_names import POLL_BATCHES
from hopindex.workers.app import app
from hopindex.workers.runtime import current_runtime


@app.task(name=POLL_BATCHES, job_bound=False)  # type: ignore[untyped-decorator]  # celery is untyped
def poll_batches() -> int:
    """Returns how many batches ended (their results stored, their tasks sent again)."""
    return poll_provider_batches(current_runtime())
