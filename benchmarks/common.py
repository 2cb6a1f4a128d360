"""Shared helpers for the benchmark scripts: where data lives, how results are written."""

from __future__ import annotations

import json
import os
import platform
import resource
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = ROOT.parent / "shared" / "data"
OUT = ROOT / "benchmarks" / "out"


def require(path: Path) -> Path:
    if not path.exists():
        sys.exit(f"benchmark data missing: {path} (the repo expects ../shared beside it)")
    return path


def peak_rss_mb() -> float:
    # ru_maxrss is in KiB on Linux.
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def write_result(name: str, figures: dict[str, Any]) -> Path:
    OUT.mkdir(parents=True, exist_ok=True)
    record = {"benchmark": name, "date": datetime.now(UTC).isoformat(timespec="seconds"),
              "machine": {"python": platform.python_version(), "cpus": _cpus()}, **figures}
    path = OUT / f"{name}.json"
    path.write_text(json.dumps(record, indent=2))
    return path


def _cpus() -> int:
    return len(os.sched_getaffinity(0))
