"""The engine queue's one task: another process's call to the embedded engines this
worker owns (see hopindex/workers/engine_route.py for who sends them and why).

Like the judge it takes its input, not ids, and never retries: the caller waits with a
deadline of its own, and every failure comes back as the answer, raised there again.
"""

from __future__ import annotations

import time
from typing import Any

from hopindex.backends.engine_calls import Answer, Request, answer_request, error_answer
from hopindex.backends.engine_lock import held_here
from hopindex.backends.registry import embedded_engine_folders
from hopindex.core.errors import ConfigError
from hopindex.core.logging import get_logger
from hopindex.workers.app import app
from hopindex.workers.queues import ENGINE_TASK
from hopindex.workers.runtime import current_runtime

log = get_logger(__name__)


def owner_view() -> dict[str, Any]:
    """Who answers: this process's record for each engine folder it holds."""
    settings = current_runtime().settings
    found = {role: held_here(folder) for role, folder in embedded_engine_folders(settings).items()}
    owner = next((o for o in found.values() if o is not None), None)
    return {"owner": owner.as_dict() if owner is not None else None,
            "folders": {role: str(folder)
                        for role, folder in embedded_engine_folders(settings).items()}}


@app.task(name=ENGINE_TASK, job_bound=False)  # type: ignore[untyped-decorator]  # celery is untyped
def engine(request: Request) -> Answer:
    started = time.perf_counter()
    runtime = current_runtime()
    folders = embedded_engine_folders(runtime.settings)
    if not folders or any(held_here(folder) is None for folder in folders.values()):
        # Only the owner takes this queue; anyone else would send the call on again.
        return error_answer(ConfigError(
            "this worker does not own the embedded engines, so it cannot answer engine "
            "calls: only the worker that takes the embed queue should take the engine queue"))
    backends = runtime.backends
    answer = answer_request(lambda: backends.vectors, lambda: backends.keywords, owner_view,
                            request)
    log.debug("engine_call_answered", engine=request.get("engine"), op=request.get("op"),
              failed="error" in answer, duration_s=round(time.perf_counter() - started, 4))
    return answer
