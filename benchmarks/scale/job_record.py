"""The job as its users see it, and which code measured it.

- the job record: its stored JSON (``hopindex:job:<id>``, field ``data``) in bytes, its
  counts and settle keys;
- ``hopindex jobs JOB_ID`` and ``hopindex jobs JOB_ID --json``: run as a user runs them,
  in a fresh process with the run's ``HOPINDEX_*`` settings; their output in bytes and
  lines and the command's wall time (interpreter start included);
- the code: the commit and a hash of the package's sources, uncommitted changes
  included.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import redis
from common import ROOT
from watch import STATE_PREFIX

from hopindex.core.models import Job
from hopindex.core.settings import Settings


def code_version() -> dict[str, str]:
    """The commit and a hash of the package's sources as they are now: sizes measured
    on different trees (uncommitted changes included) are not one series, and fit.py
    says so."""
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                          capture_output=True, text=True, check=False).stdout.strip()
    digest = hashlib.sha256()
    for path in sorted((ROOT / "hopindex").rglob("*.py")):
        digest.update(path.relative_to(ROOT).as_posix().encode())
        digest.update(path.read_bytes())
    return {"commit": head, "sources_sha256": digest.hexdigest()[:16]}


def jobs_cli(settings: Settings, job_id: str) -> dict[str, Any]:
    """``hopindex jobs JOB_ID`` (and ``--json``) in a fresh process, as a user runs it."""
    env = {**os.environ, **settings.to_env()}
    hopindex = Path(sys.executable).with_name("hopindex")
    out: dict[str, Any] = {}
    for label, extra in (("text", []), ("json", ["--json"])):
        started = time.perf_counter()
        done = subprocess.run([str(hopindex), "jobs", job_id, *extra], env=env,
                              capture_output=True, check=False)
        out[label] = {"bytes": len(done.stdout), "lines": done.stdout.count(b"\n"),
                      "seconds": round(time.perf_counter() - started, 2),
                      "exit": done.returncode}
    return out


def job_figures(job: Job, raw: redis.Redis) -> dict[str, Any]:
    stored = raw.hget(f"{STATE_PREFIX}:job:{job.job_id}", "data")
    return {"state": job.state.value, "reason": job.reason,
            "counts": {k: c.as_dict() for k, c in job.counts.items()},
            "units_embedded": job.units_embedded, "groups_rebuilt": job.groups_rebuilt,
            "settled_keys": len(job.settled),
            "record_bytes_stored": len(stored) if isinstance(stored, bytes) else None,
            "wall_s": round((job.finished_at or time.time()) - job.created_at, 2)}


