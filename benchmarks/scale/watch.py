"""What a running job leaves in Redis only while it runs, read by a thread as it goes.

- its fan-out records (``JobStore.add_dispatch``: the frozen signatures of each step's
  tasks and callback, what the reaper would send again), which the job clears when it
  ends: each record is read once as it is appended to the job's dispatch list
  (``hopindex:dispatch:<job>``, backends/state/redis_jobs.py), every ``interval_s``. A
  record appended and cleared between two reads is missed; the count says so;
- the size of the job's stored JSON record (``hopindex:job:<job>``, field ``data``),
  which grows with every task it settles: its peak;
- Redis's ``used_memory``: its peak while the job ran.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any

import redis

STATE_PREFIX = "hopindex"


@dataclass
class Fanout:
    step: str
    record_bytes: int
    tasks: int
    task_bytes: list[int]
    callback_bytes: int

    def as_dict(self) -> dict[str, Any]:
        return {"step": self.step, "record_bytes": self.record_bytes, "tasks": self.tasks,
                "task_record_bytes_mean": round(sum(self.task_bytes) / self.tasks, 1)
                if self.tasks else 0,
                "task_record_bytes_max": max(self.task_bytes, default=0),
                "callback_record_bytes": self.callback_bytes}


def fanout_of(raw: bytes) -> Fanout:
    record = json.loads(raw)
    tasks = [len(json.dumps(t).encode()) for t in record.get("tasks", [])]
    return Fanout(step=str(record.get("phase", "?")), record_bytes=len(raw), tasks=len(tasks),
                  task_bytes=tasks,
                  callback_bytes=len(json.dumps(record.get("callback")).encode()))


@dataclass
class JobWatch:
    client: redis.Redis
    job_id: str
    interval_s: float = 0.05
    fanouts: list[Fanout] = field(default_factory=list)
    job_record_peak_bytes: int = 0
    dispatch_list_peak_bytes: int = 0
    used_memory_peak: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    @property
    def dispatch_key(self) -> str:
        return f"{STATE_PREFIX}:dispatch:{self.job_id}"

    @property
    def job_key(self) -> str:
        return f"{STATE_PREFIX}:job:{self.job_id}"

    def poll(self) -> None:
        with self.client.pipeline(transaction=False) as pipe:
            pipe.lrange(self.dispatch_key, len(self.fanouts), -1)
            pipe.hstrlen(self.job_key, "data")
            pipe.info("memory")
            new, job_bytes, memory = pipe.execute()
        self.fanouts += [fanout_of(raw) for raw in new]
        self.dispatch_list_peak_bytes = max(self.dispatch_list_peak_bytes,
                                            sum(f.record_bytes for f in self.fanouts))
        self.job_record_peak_bytes = max(self.job_record_peak_bytes, int(job_bytes or 0))
        self.used_memory_peak = max(self.used_memory_peak, int(memory["used_memory"]))

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.poll()

    def __enter__(self) -> JobWatch:
        self._thread = threading.Thread(target=self._run, daemon=True, name="job-watch")
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def as_dict(self) -> dict[str, Any]:
        return {"fan_out_records_seen": len(self.fanouts),
                "fan_out_records_bytes": sum(f.record_bytes for f in self.fanouts),
                "fan_out_records": [f.as_dict() for f in self.fanouts],
                "job_record_peak_bytes": self.job_record_peak_bytes,
                "redis_used_memory_peak": self.used_memory_peak}
