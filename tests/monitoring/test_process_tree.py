"""``process_*`` on a worker's endpoint cover the whole worker: the serving process and every
process under it, read from the real ``/proc`` of real child processes."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from hopindex.monitoring.process_tree import (
    PROC,
    ProcessTreeCollector,
    parse_stat,
    proportional_bytes,
    read_stats,
    tree_of,
)
from tests.monitoring.test_multiprocess import last_json, run_python

pytestmark = pytest.mark.skipif(not (PROC / "self" / "stat").exists(),
                                reason="process metrics read Linux's /proc")

MIB = 1024 * 1024
HOLD_MIB = 40
# A process that touches HOLD_MIB of its own memory, starts ``depth`` - 1 generations
# of the same under it (``width`` children each), says "up" once they all are, and
# waits to be killed.
HOLDER = f"""
import subprocess, sys, time
depth, width = int(sys.argv[1]), int(sys.argv[2])
held = bytearray({HOLD_MIB} * {MIB})
under = [subprocess.Popen([sys.executable, "-c", sys.orig_argv[2], str(depth - 1), "1"],
                          stdout=subprocess.PIPE, text=True)
         for _ in range(width if depth > 1 else 0)]
for child in under:
    child.stdout.readline()
print("up", flush=True)
time.sleep(600)  # holds its memory until the test kills it: not a wait for anything
"""


def sample(registry: CollectorRegistry, name: str) -> float:
    value = registry.get_sample_value(name)
    assert value is not None, f"{name} not exported"
    return value


def tree_registry(root: int | None = None) -> CollectorRegistry:
    registry = CollectorRegistry()
    registry.register(ProcessTreeCollector(root))
    return registry


@pytest.fixture
def holder() -> Iterator[subprocess.Popen[str]]:
    """A root process with two children, each with a child: five processes holding
    memory, in a session of their own (this test process may have other children)."""
    root = subprocess.Popen([sys.executable, "-c", HOLDER, "3", "2"], stdout=subprocess.PIPE,
                            text=True, start_new_session=True)
    assert root.stdout is not None
    assert root.stdout.readline().strip() == "up"
    yield root
    os.killpg(root.pid, 9)
    root.wait()


def test_stat_lines_parse_even_with_odd_command_names() -> None:
    """The command name may hold spaces and parentheses; fields count from its last ')'."""
    tail = " ".join(str(n) for n in range(4, 53))  # fields 4.. of proc(5), each its number
    stat = parse_stat(7, f"7 (a) b (c)) S {tail}".encode())
    assert stat.ppid == 4
    assert stat.cpu_s == (14 + 15) / os.sysconf("SC_CLK_TCK")
    assert stat.reaped_children_cpu_s == (16 + 17) / os.sysconf("SC_CLK_TCK")
    assert stat.start_ticks == 22
    assert stat.virtual_bytes == 23
    assert stat.resident_bytes == 24 * os.sysconf("SC_PAGE_SIZE")


def test_the_tree_sums_memory_of_children_and_grandchildren(
        holder: subprocess.Popen[str]) -> None:
    """A root, two children and two grandchildren, 40 MiB each: five processes, resident
    memory at least the 200 MiB they hold, PSS no more than RSS, and the root's start
    time and descriptor limit."""
    registry = tree_registry(holder.pid)
    assert sample(registry, "hopindex_worker_processes") == 5
    resident = sample(registry, "process_resident_memory_bytes")
    assert resident >= 5 * HOLD_MIB * MIB
    proportional = sample(registry, "hopindex_worker_proportional_memory_bytes")
    assert 5 * HOLD_MIB * MIB <= proportional <= resident
    assert sample(registry, "process_virtual_memory_bytes") >= resident
    assert sample(registry, "process_open_fds") >= 5 * 3
    assert sample(registry, "process_max_fds") > 0
    # The root's start time (it started after this test process), not a child's.
    stats = read_stats()
    boot_s = next(float(line.split()[1]) for line in (PROC / "stat").read_text().splitlines()
                  if line.startswith("btime "))
    ticks = os.sysconf("SC_CLK_TCK")
    started = sample(registry, "process_start_time_seconds")
    assert started == pytest.approx(boot_s + stats[holder.pid].start_ticks / ticks)
    assert stats[os.getpid()].start_ticks <= stats[holder.pid].start_ticks


def test_series_carry_no_pid_label(holder: subprocess.Popen[str]) -> None:
    """One series per name, unlabelled: replaced pool children add no new series."""
    families = list(tree_registry(holder.pid).collect())
    assert {f.name for f in families} == {
        "process_resident_memory_bytes", "process_virtual_memory_bytes", "process_cpu_seconds",
        "process_start_time_seconds", "process_open_fds", "process_max_fds",
        "hopindex_worker_processes", "hopindex_worker_proportional_memory_bytes"}
    for family in families:
        assert [s.labels for s in family.samples] == [{}], family.name


def test_cpu_of_a_child_that_exited_stays_counted() -> None:
    """A child burns CPU and exits; once reaped its time moves to this process's
    ``cutime``, so the counter does not drop when a pool child is replaced."""
    registry = tree_registry()
    child = subprocess.Popen([sys.executable, "-c", """
import sys, time
deadline = time.process_time() + 0.5
while time.process_time() < deadline:
    pass
print("done", flush=True)
sys.stdin.readline()
"""], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None and child.stdin is not None
    assert child.stdout.readline().strip() == "done"
    while_alive = sample(registry, "process_cpu_seconds_total")
    child_cpu = read_stats()[child.pid].cpu_s
    assert child_cpu >= 0.4
    child.stdin.close()
    child.wait()
    assert child.pid not in {p.pid for p in tree_of(os.getpid(), read_stats())}
    assert sample(registry, "process_cpu_seconds_total") >= while_alive


def test_a_root_that_is_gone_exports_nothing() -> None:
    """A pid no process has: no series, rather than zeros a dashboard would believe."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert list(tree_registry(child.pid).collect()) == []
    assert tree_of(child.pid, read_stats()) == []


def test_pss_of_a_process_we_cannot_read_is_unknown() -> None:
    """No such process: None, so a partial sum is never exported."""
    assert proportional_bytes(2**22 + 1) is None
    own = proportional_bytes(os.getpid())
    assert own is not None and own > 0


WORKER_ENDPOINT = """
import json, os, sys, time
from pathlib import Path
from hopindex.core.settings import Settings
from hopindex.monitoring.multiprocess import prepare_multiprocess

prepare_multiprocess(Settings(metrics_dir=sys.argv[1]))
from hopindex.monitoring.exposition import multiprocess_registry

children = []
held_r, held_w = os.pipe()
for _ in range(2):  # two pool children, alive while the endpoint is read
    pid = os.fork()
    if pid == 0:
        held = bytearray(30 * 1024 * 1024)
        os.write(held_w, b"h")  # its memory is held (and resident): the parent may read
        time.sleep(600)  # stays alive until killed below: not a wait for anything
        os._exit(0)
    children.append(pid)
got = b""
while len(got) < 2:  # one byte from each child; run_python's timeout bounds a hang
    got += os.read(held_r, 2 - len(got))
registry = multiprocess_registry()
report = {name: registry.get_sample_value(name) for name in (
    "hopindex_worker_processes", "process_resident_memory_bytes",
    "process_cpu_seconds_total", "hopindex_worker_proportional_memory_bytes")}
for pid in children:
    os.kill(pid, 9)
    os.waitpid(pid, 0)
report["after_exit"] = registry.get_sample_value("hopindex_worker_processes")
print(json.dumps(report))
"""


def test_the_multiprocess_registry_serves_the_worker_tree(tmp_path: Path) -> None:
    """A worker's registry (multiprocess mode, which drops prometheus_client's
    ProcessCollector) exports process_* for the serving process and its pool children."""
    report = last_json(run_python(WORKER_ENDPOINT, str(tmp_path / "metrics")))
    assert report["hopindex_worker_processes"] == 3
    assert report["process_resident_memory_bytes"] >= 2 * 30 * MIB
    assert report["hopindex_worker_proportional_memory_bytes"] >= 2 * 30 * MIB
    assert report["process_cpu_seconds_total"] > 0
    assert report["after_exit"] == 1
