"""A job's steps in time, and what each cost: wall time, planning time, messages and
bytes.

Sources, all written while the job ran:

- the event log: each step's ``job.progress`` event carries its name (``phase``) and is
  appended as the step is claimed (``start_phase``), inside the task that plans it;
- the task log (task_log.py): every task run's start and end and every message sent,
  with its bytes, in every process;
- the workers' JSON logs: ``phase_planned`` (a phase step's items, logged between its
  claim and its fan-out).

A step runs from its event to the next step's event (the last one to the job's end).
Its tasks are the runs that start inside that window, and its messages the ones sent
inside it (its fan-out, and the chord callback the last task sends). The control run
holding a step's event is the callback that planned it: its time before the event
(``plan_s``: reading what to do, choosing the items) and after it (``fan_out_s``:
building, recording and sending the fan-out; split at ``phase_planned`` for a phase).
"""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

CONTROL_PREFIX = "hopindex.control."


@dataclass(frozen=True, slots=True)
class StepStart:
    name: str
    at: float


def step_starts(events: Iterable[Any], job_id: str) -> list[StepStart]:
    """The job's steps in order, from its ``job.progress`` events that name one."""
    starts = [StepStart(str(e.data["phase"]), float(e.created_at)) for e in events
              if e.job_id == job_id and e.event_type.value == "job.progress"
              and "phase" in e.data]
    return sorted(starts, key=lambda s: s.at)


def planned_phases(log_paths: Iterable[Path], job_id: str) -> dict[str, dict[str, Any]]:
    """``phase_planned`` lines of the job in the workers' JSON logs: phase → time, items."""
    found: dict[str, dict[str, Any]] = {}
    for path in log_paths:
        for line in path.read_text(errors="replace").splitlines():
            if '"phase_planned"' not in line:
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            if record.get("job_id") != job_id:
                continue
            at = datetime.fromisoformat(str(record["timestamp"]).replace("Z", "+00:00"))
            found[str(record["phase"])] = {"at": at.timestamp(), "items": record.get("items")}
    return found


def _message_stats(messages: list[dict[str, Any]]) -> dict[str, Any]:
    wire = [m["wire"] for m in messages]
    return {"messages": len(messages), "wire_bytes": sum(wire),
            "body_bytes": sum(m["body"] for m in messages),
            "header_bytes": sum(m["headers"] for m in messages),
            "wire_bytes_mean": round(statistics.fmean(wire), 1) if wire else 0,
            "wire_bytes_max": max(wire, default=0)}


def by_task(messages: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Messages and bytes per task name."""
    grouped: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for m in messages:
        grouped[str(m["task"])].append(m)
    return {name: _message_stats(ms) for name, ms in sorted(grouped.items())}


def steps(starts: list[StepStart], end: float, runs: list[dict[str, Any]],
          messages: list[dict[str, Any]], planned: dict[str, dict[str, Any]]
          ) -> list[dict[str, Any]]:
    """One record per step: window, tasks, planning callback, messages."""
    control = [r for r in runs if str(r["task"]).startswith(CONTROL_PREFIX)]
    work = [r for r in runs if not str(r["task"]).startswith(CONTROL_PREFIX)]
    out = []
    for i, step in enumerate(starts):
        until = starts[i + 1].at if i + 1 < len(starts) else end
        tasks = [r for r in work if step.at <= r["start"] < until]
        record: dict[str, Any] = {
            "step": step.name, "start_s": step.at, "wall_s": round(until - step.at, 3),
            "tasks": len(tasks),
            "task_s": round(sum(r["end"] - r["start"] for r in tasks), 3),
            "task_s_max": round(max((r["end"] - r["start"] for r in tasks), default=0.0), 3),
        }
        if tasks:
            # From the last task's end to the next step's claim: the chord's join and
            # the callback that plans the next step.
            record["tail_to_next_s"] = round(until - max(r["end"] for r in tasks), 3)
        planner = next((r for r in control if r["start"] <= step.at <= r["end"]), None)
        if planner is not None:
            split = planned.get(step.name, {}).get("at", step.at)
            record["planned_by"] = str(planner["task"]).removeprefix(CONTROL_PREFIX)
            record["plan_s"] = round(step.at - planner["start"], 3)
            record["fan_out_s"] = round(planner["end"] - split, 3)
            record["callback_s"] = round(planner["end"] - planner["start"], 3)
        if step.name in planned:
            record["items"] = planned[step.name]["items"]
        record["sent"] = _message_stats([m for m in messages if step.at <= m["at"] < until])
        out.append(record)
    return out


def relative(records: list[dict[str, Any]], origin: float) -> list[dict[str, Any]]:
    """``start_s`` counted from ``origin`` (the job's creation)."""
    return [{**r, "start_s": round(r["start_s"] - origin, 3)} for r in records]
