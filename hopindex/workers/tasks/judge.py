"""The BridgeRAG judge as a task on the ``judge`` queue (docs/architecture.md).

Unlike ingest tasks it takes its inputs, not ids: they exist nowhere else (the
question, the entities the model named a moment ago), they are bounded (at most
20 candidates cut to ``passage_chars``), and a judge worker then needs nothing but
the LLM. It never retries: the query waiting for it has a deadline of its own,
and every failure comes back as an outcome the query falls back from.
"""

from __future__ import annotations

import time
from typing import Any

from hopindex.core.errors import ConfigError
from hopindex.core.logging import get_logger
from hopindex.methods.bridgerag.judge import (
    JUDGE_TASK,
    JudgeOutcome,
    JudgeRequest,
    JudgeStatus,
    judge_in_process,
)
from hopindex.workers.app import app
from hopindex.workers.runtime import current_runtime

log = get_logger(__name__)


@app.task(name=JUDGE_TASK, job_bound=False)  # type: ignore[untyped-decorator]  # celery is untyped
def judge(payload: dict[str, Any]) -> dict[str, Any]:
    """Score every candidate of one query's pool in one LLM call."""
    started = time.perf_counter()
    request = JudgeRequest.from_payload(payload)
    llm = current_runtime().backends.llm
    if llm is None:
        outcome = JudgeOutcome(JudgeStatus.FAILED,
                               error="no LLM is configured on this judge worker: set "
                                     "HOPINDEX_LLM_MODEL (and HOPINDEX_LLM_BASE_URL)")
    else:
        try:
            outcome = judge_in_process(llm, request)
        except ConfigError as exc:  # a refused key: the query must hear why
            outcome = JudgeOutcome(JudgeStatus.FAILED, error=f"{type(exc).__name__}: {exc}")
    log.info("judge_finished", candidates=len(request.candidates), status=outcome.status.value,
             llm_calls=outcome.usage.calls, duration_s=round(time.perf_counter() - started, 3))
    return outcome.as_payload()
