"""Query-time tasks: work a query method sends to the ``judge`` queue (a batched judge).

One task for every method: it finds the method's handler in the registry by the
task's qualified name (``<method>.<task>``) and runs it with this worker's LLM. It
never retries: the query waiting for it has a deadline of its own, and a handler
answers every failure as an outcome the query falls back from.
"""

from __future__ import annotations

from typing import Any

from hopindex.core.errors import InvalidInputError
from hopindex.methods.registry import get_query_method
from hopindex.scheduler.task_names import QUERY_TASK
from hopindex.workers.app import app
from hopindex.workers.runtime import current_runtime


@app.task(name=QUERY_TASK, job_bound=False)  # type: ignore[untyped-decorator]  # celery is untyped
def query_task(name: str, payload: dict[str, Any]) -> dict[str, Any]:
    method, _, task = name.partition(".")
    handler = get_query_method(method).tasks.get(task)
    if handler is None:
        raise InvalidInputError(f"query method {method!r} has no task {task!r}", where="name")
    return handler(current_runtime().backends.llm, payload)
