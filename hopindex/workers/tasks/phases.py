"""Phase tasks: one batch of an index method's phase (hopindex/workers/phase_runs.py).

One task per phase kind, whatever the method: documents on the stage1 queue, groups
and levels on the stage2 queue. The method and its phase come from the index.
"""

from __future__ import annotations

from typing import Any

from hopindex.methods.plugin import PhaseKind
from hopindex.scheduler.task_names import PHASE_TASKS
from hopindex.workers.app import app
from hopindex.workers.phase_runs import run_documents, run_groups
from hopindex.workers.runtime import current_runtime


@app.task(name=PHASE_TASKS[PhaseKind.DOCUMENTS])  # type: ignore[untyped-decorator]  # untyped
def documents(job_id: str, index: str, phase: str, level: int,
              doc_ids: list[str]) -> dict[str, Any]:
    return run_documents(current_runtime(), job_id, index, phase, doc_ids)


@app.task(name=PHASE_TASKS[PhaseKind.GROUPS])  # type: ignore[untyped-decorator]  # untyped
def groups(job_id: str, index: str, phase: str, level: int, keys: list[str]) -> dict[str, Any]:
    return run_groups(current_runtime(), job_id, index, phase, level=level, keys=keys)


@app.task(name=PHASE_TASKS[PhaseKind.LEVELS])  # type: ignore[untyped-decorator]  # untyped
def levels(job_id: str, index: str, phase: str, level: int, items: list[str]) -> dict[str, Any]:
    return run_groups(current_runtime(), job_id, index, phase, level=level, keys=items)
