"""Query-time tasks on worker queues: ``QueryTasks`` over the Celery app.

A query sends the task by name (``TASK_ROUTES`` picks its queue), waits for its
result on the result backend (the broker's Redis) and gives up after the
caller's timeout. The message expires at that deadline too, so a worker that
comes up later does not spend an LLM call on an answer nobody waits for.
"""

from __future__ import annotations

from typing import Any

from celery.exceptions import TimeoutError as CeleryTimeoutError
from kombu.exceptions import OperationalError

from hopindex.core.errors import BackendError, BackendUnavailableError
from hopindex.core.logging import get_logger
from hopindex.workers.app import TASK_ROUTES, app

log = get_logger(__name__)


class CeleryQueryTasks:
    """Sends query-time tasks to workers; the API process stays light."""

    def run_task(self, name: str, payload: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        queue = TASK_ROUTES.get(name, {}).get("queue", "default")
        try:
            result = app.send_task(name, kwargs={"payload": payload}, expires=timeout_s)
            value = result.get(timeout=timeout_s, propagate=False)
        except CeleryTimeoutError:
            log.warning("query_task_timed_out", task=name, queue=queue, timeout_s=timeout_s)
            raise BackendUnavailableError(
                f"no worker answered {name} within {timeout_s:g}s: is a worker taking the "
                f"{queue} queue running (hopindex worker --queues {queue})?") from None
        except (OperationalError, OSError) as exc:
            raise BackendUnavailableError(f"cannot reach the broker for {name}: {exc}") from exc
        if result.failed() or not isinstance(value, dict):
            raise BackendError(f"{name} failed on its worker: {value!r}")
        return value
