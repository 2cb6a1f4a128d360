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
from hopindex.scheduler.task_names import QUERY_TASK
from hopindex.workers.app import TASK_ROUTES, app

log = get_logger(__name__)


def send_and_wait(name: str, kwargs: dict[str, Any], timeout_s: float, *,
                  no_answer: str) -> dict[str, Any]:
    """Send task ``name`` and return its result (a JSON object); raises
    ``BackendUnavailableError`` with ``no_answer`` when none comes within ``timeout_s``.

    Callable from inside a task (a control task's engine call): the task waited for
    runs on another worker, never this one, so the wait cannot deadlock.
    """
    queue = TASK_ROUTES.get(name, {}).get("queue", "default")
    try:
        result = app.send_task(name, kwargs=kwargs, expires=timeout_s)
        try:
            value = result.get(timeout=timeout_s, propagate=False,
                               disable_sync_subtasks=False)
            failed = result.failed()
        finally:
            # Read once: left in Redis the answer would stay a day (result_expires).
            result.forget()
    except CeleryTimeoutError:
        log.warning("query_task_timed_out", task=name, queue=queue, timeout_s=timeout_s)
        raise BackendUnavailableError(no_answer) from None
    except (OperationalError, OSError) as exc:
        raise BackendUnavailableError(f"cannot reach the broker for {name}: {exc}") from exc
    if failed or not isinstance(value, dict):
        raise BackendError(f"{name} failed on its worker: {value!r}")
    return value


class CeleryQueryTasks:
    """Sends query-time tasks to workers; the API process stays light."""

    def run_task(self, name: str, payload: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        queue = TASK_ROUTES.get(QUERY_TASK, {}).get("queue", "default")
        return send_and_wait(
            QUERY_TASK, {"name": name, "payload": payload}, timeout_s,
            no_answer=(f"no worker answered {name} within {timeout_s:g}s: is a worker taking "
                       f"the {queue} queue running (hopindex worker --queues {queue})?"))
