"""``process_*`` series for a whole worker: the serving process and every process under it.

A prefork worker's tasks run in pool children, so the serving process's own numbers
(what prometheus_client's ProcessCollector reports, and what its multiprocess
registry leaves out) say little about the memory a container limit or a systemd
``MemoryMax`` is measured against. On a worker's metrics endpoint the standard names
therefore cover the tree rooted at the serving process: memory, virtual memory and
open descriptors are sums over the live processes; CPU is theirs plus what the
processes they reaped used (the kernel's ``cutime``/``cstime``), so the counter
never drops when a pool child is replaced; start time and the descriptor limit are
the serving process's. Not labelled by pid: children come and go
(``--max-tasks-per-child``), and every pid would be a new series.

Summed resident memory counts a page shared by fork once per process, so it
overstates what the tree occupies; ``hopindex_worker_proportional_memory_bytes`` (the
kernel's PSS, shared pages split between their sharers) sums to the tree's real
footprint. Linux only: without ``/proc`` the collector exports nothing, like
ProcessCollector.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

PROC = Path("/proc")
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_PSS_LINE = b"Pss:"


@dataclass(frozen=True, slots=True)
class ProcessStat:
    """What ``/proc/<pid>/stat`` says about one process (times in seconds)."""

    pid: int
    ppid: int
    cpu_s: float  # utime + stime
    reaped_children_cpu_s: float  # cutime + cstime
    start_ticks: int
    virtual_bytes: int
    resident_bytes: int


def parse_stat(pid: int, raw: bytes) -> ProcessStat:
    """``raw``, the content of ``/proc/<pid>/stat`` (proc(5)); the command name may hold
    spaces and parentheses, so fields are counted from its closing one."""
    fields = raw.rsplit(b")", 1)[1].split()
    # fields[0] is field 3 (state) of proc(5).
    return ProcessStat(
        pid=pid, ppid=int(fields[1]),
        cpu_s=(int(fields[11]) + int(fields[12])) / CLOCK_TICKS,
        reaped_children_cpu_s=(int(fields[13]) + int(fields[14])) / CLOCK_TICKS,
        start_ticks=int(fields[19]), virtual_bytes=int(fields[20]),
        resident_bytes=int(fields[21]) * PAGE_SIZE)


def read_stats(proc: Path = PROC) -> dict[int, ProcessStat]:
    """Every process visible in ``proc``; ones that exit while being read are skipped."""
    stats: dict[int, ProcessStat] = {}
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stats[int(entry.name)] = parse_stat(int(entry.name), (entry / "stat").read_bytes())
        except (OSError, IndexError, ValueError):
            continue
    return stats


def tree_of(root: int, stats: dict[int, ProcessStat]) -> list[ProcessStat]:
    """``root`` and its descendants among ``stats`` (empty when ``root`` is gone)."""
    if root not in stats:
        return []
    children: dict[int, list[int]] = {}
    for stat in stats.values():
        children.setdefault(stat.ppid, []).append(stat.pid)
    found, pending = [], [root]
    while pending:
        pid = pending.pop()
        found.append(stats[pid])
        pending.extend(children.get(pid, ()))
    return found


def proportional_bytes(pid: int, proc: Path = PROC) -> int | None:
    """The process's PSS from ``smaps_rollup`` (Linux 4.14+); None when unreadable. A
    zombie's file is empty: it occupies no memory."""
    try:
        with (proc / str(pid) / "smaps_rollup").open("rb") as rollup:
            for line in rollup:
                if line.startswith(_PSS_LINE):
                    return int(line.split()[1]) * 1024  # in kB
    except (OSError, IndexError, ValueError):
        return None
    return 0


def open_fds(pid: int, proc: Path = PROC) -> int | None:
    try:
        return sum(1 for _ in (proc / str(pid) / "fd").iterdir())
    except OSError:
        return None


def max_fds(pid: int, proc: Path = PROC) -> int | None:
    try:
        with (proc / str(pid) / "limits").open("rb") as limits:
            for line in limits:
                if line.startswith(b"Max open files"):
                    return int(line.split()[3])
    except (OSError, IndexError, ValueError):
        return None
    return None


def boot_time_s(proc: Path = PROC) -> float | None:
    try:
        with (proc / "stat").open("rb") as stat:
            for line in stat:
                if line.startswith(b"btime "):
                    return float(line.split()[1])
    except (OSError, IndexError, ValueError):
        return None
    return None


class ProcessTreeCollector(Collector):
    """The module docstring's series for the tree rooted at ``root_pid`` (default: this
    process), read from ``proc`` at each scrape."""

    def __init__(self, root_pid: int | None = None, proc: Path = PROC) -> None:
        self._root = root_pid if root_pid is not None else os.getpid()
        self._proc = proc
        self._boot_s = boot_time_s(proc)

    def describe(self) -> Iterable[Metric]:
        # Names only (no /proc reads): what registering checks for clashes.
        return list(_families().values())

    def collect(self) -> Iterator[Metric]:
        if self._boot_s is None:
            return
        tree = tree_of(self._root, read_stats(self._proc))
        if not tree:
            return
        root = tree[0]
        families = _families()
        families["resident"].add_metric([], float(sum(p.resident_bytes for p in tree)))
        families["virtual"].add_metric([], float(sum(p.virtual_bytes for p in tree)))
        families["cpu"].add_metric([], sum(p.cpu_s + p.reaped_children_cpu_s for p in tree))
        families["start"].add_metric([], self._boot_s + root.start_ticks / CLOCK_TICKS)
        families["processes"].add_metric([], float(len(tree)))
        fds = [n for n in (open_fds(p.pid, self._proc) for p in tree) if n is not None]
        if fds:
            families["open_fds"].add_metric([], float(sum(fds)))
        limit = max_fds(root.pid, self._proc)
        if limit is not None:
            families["max_fds"].add_metric([], float(limit))
        pss = [proportional_bytes(p.pid, self._proc) for p in tree]
        if all(n is not None for n in pss):
            families["proportional"].add_metric([], float(sum(n or 0 for n in pss)))
        yield from (family for family in families.values() if family.samples)


def _families() -> dict[str, GaugeMetricFamily | CounterMetricFamily]:
    return {
        "resident": GaugeMetricFamily(
            "process_resident_memory_bytes",
            "Resident memory of the worker's processes (the serving process and its "
            "pool), summed: pages shared by fork count once per process."),
        "virtual": GaugeMetricFamily(
            "process_virtual_memory_bytes",
            "Virtual memory of the worker's processes, summed."),
        "cpu": CounterMetricFamily(
            "process_cpu_seconds_total",
            "User and system CPU of the worker's processes, the pool children it "
            "replaced included."),
        "start": GaugeMetricFamily(
            "process_start_time_seconds",
            "Start time of the worker's serving process since the Unix epoch."),
        "open_fds": GaugeMetricFamily(
            "process_open_fds", "Open file descriptors of the worker's processes, summed."),
        "max_fds": GaugeMetricFamily(
            "process_max_fds", "The serving process's limit of open file descriptors."),
        "processes": GaugeMetricFamily(
            "hopindex_worker_processes",
            "Live processes of the worker: the serving process and its descendants."),
        "proportional": GaugeMetricFamily(
            "hopindex_worker_proportional_memory_bytes",
            "Proportional set size (PSS) of the worker's processes, summed: shared pages "
            "split between their sharers, so the sum is what the worker occupies."),
    }
