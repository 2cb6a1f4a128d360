"""Peak memory of process trees, read from /proc (psutil is not a dependency).

A worker is a tree: the ``hopindex worker`` process and its prefork children. The
peak of a tree is the highest sum of its processes' RSS seen by a sampler thread
(every ``interval_s``); each process's own ``VmHWM`` (the kernel's exact peak of that
process) is kept beside it, and their sum bounds the tree's peak from above, since
the children need not peak at the same moment.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path

PROC = Path("/proc")


def _status_kb(pid: int, name: str) -> int:
    try:
        for line in (PROC / str(pid) / "status").read_text().splitlines():
            if line.startswith(f"{name}:"):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass  # the process ended between listing and reading
    return 0


def _children(pid: int) -> list[int]:
    found: list[int] = []
    try:
        for task in (PROC / str(pid) / "task").iterdir():
            found += [int(c) for c in (task / "children").read_text().split()]
    except OSError:
        pass
    return found


def tree(pid: int) -> list[int]:
    """``pid`` and every descendant alive now."""
    pids, queue = [], [pid]
    while queue:
        current = queue.pop()
        pids.append(current)
        queue += _children(current)
    return pids


@dataclass
class TreePeak:
    name: str
    pid: int
    # False: the process alone (the harness's own process, whose children are Redis
    # and the embedding server, not part of what it runs).
    children: bool = True
    peak_rss_kb: int = 0
    # Each process's VmHWM as last read (it only grows), by pid.
    hwm_kb: dict[int, int] = field(default_factory=dict)

    def sample(self) -> None:
        pids = tree(self.pid) if self.children else [self.pid]
        self.peak_rss_kb = max(self.peak_rss_kb, sum(_status_kb(p, "VmRSS") for p in pids))
        for p in pids:
            self.hwm_kb[p] = max(self.hwm_kb.get(p, 0), _status_kb(p, "VmHWM"))

    def as_dict(self) -> dict[str, float]:
        return {"peak_rss_mb": round(self.peak_rss_kb / 1024, 1),
                "sum_of_process_peaks_mb": round(sum(self.hwm_kb.values()) / 1024, 1),
                "processes": len(self.hwm_kb)}


class Sampler:
    """Samples the trees of ``trees`` (name → pid) and the processes ``alone`` every
    ``interval_s`` until stopped."""

    def __init__(self, trees: dict[str, int], alone: dict[str, int],
                 interval_s: float = 0.25) -> None:
        self.trees = {name: TreePeak(name, pid) for name, pid in trees.items()}
        self.trees |= {name: TreePeak(name, pid, children=False) for name, pid in alone.items()}
        self._interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="rss-sampler")

    def _run(self) -> None:
        while not self._stop.wait(self._interval_s):
            self.sample()

    def sample(self) -> None:
        for peak in self.trees.values():
            peak.sample()

    def __enter__(self) -> Sampler:
        self.sample()
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()

    def as_dict(self) -> dict[str, dict[str, float]]:
        return {name: peak.as_dict() for name, peak in self.trees.items()}
