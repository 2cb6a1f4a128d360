"""What a flood of wrong API keys costs a real ``hopindex serve`` with a scrypt keys file:
one client's query latency quiet, then with 8 clients sending wrong keys as fast as
they can, side by side in one run.

The server is a ``hopindex serve`` subprocess over the HotpotQA-100 index, with
HOPINDEX_API_KEYS_FILE holding one scrypt entry (``hopindex api-key --scrypt``). The
legitimate client asks the 100 questions in turn on one keep-alive connection
(``extractive``, k=10); phases alternate quiet / flood, twice each, so machine drift
hits both alike. Floods, by 8 client processes on their own connections:

- ``random``: keys of the right shape with random ids (what guessing sends): refused by
  the id lookup without any scrypt work, then 429s once the address's budget is spent;
- ``known-id``: wrong secrets under the real key's id, the worst case (each a scrypt
  check until the budget is spent, then 429s).

429s are held back up to a second (ratelimit.FailurePause), so each flooding
connection then sends about one request a second. ``--failures-per-minute 0`` turns
the limit off, to see the key lookup alone: every wrong key a 401 at once.

Target: legitimate p50 under the random flood within 1.5x of quiet. The server's own
CPU time per phase is read from /proc.

An attacker's CPU is not the server's, but here both are on one machine: the flood
clients (Python, as busy as the server per request) would take the server's CPU, and
the figure would measure them, not the key checks. So with 2 or more CPUs the server
and the legitimate client run on the first half of them and the flood clients on the
rest (``os.sched_setaffinity``); the split is in the output.

    .venv/bin/python benchmarks/api_key_flood.py [--phase-s S] [--flooders N]
        [--failures-per-minute N]

Builds the HotpotQA-100 index in benchmarks/out/key-flood-data on first use (~1 min).
"""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing as mp
import os
import socket
import subprocess
import sys
import time
from collections import Counter
from importlib.resources import files
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import OUT, ROOT, local_client, write_result

from hopindex.api.http.keys import HashScheme, key_file_entry, key_id, new_key
from hopindex.core.settings import Settings
from hopindex.evaluation.metrics import percentile
from hopindex.readers import RawDocument, ReadResult

INDEX = "hotpot"
METHOD = "extractive"
K = 10
DATA = OUT / "key-flood-data"
START_TIMEOUT_S = 120.0
TARGET_RATIO = 1.5
ROUNDS = 2


def sample(name: str) -> Any:
    return json.loads((files("hopindex") / "sample" / "hotpotqa-100" / name).read_text())


def ensure_index() -> None:
    # Before the server starts: this process opens the data dir's engines itself.
    with local_client(settings=Settings(data_dir=DATA).resolved()) as client:
        corpus = sample("corpus.json")
        hashes = client.service.backends.state.document_hashes(INDEX)
        if len(hashes) >= len(corpus) and all(hashes.values()):
            return
        print(f"building the {INDEX} index ({len(corpus)} documents)", flush=True)
        client.ingest_read(INDEX, ReadResult(documents=[
            RawDocument(doc_id=None, title=title, text="".join(sentences), metadata={},
                        origin=f"corpus.json[{i}]")
            for i, (title, sentences) in enumerate(corpus.items())]))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(keys_file: Path, port: int, failures_per_minute: int | None
                 ) -> subprocess.Popen[bytes]:
    env = {**os.environ, "HOPINDEX_DATA_DIR": str(DATA),
           "HOPINDEX_API_KEYS_FILE": str(keys_file)}
    if failures_per_minute is not None:
        env["HOPINDEX_API_AUTH_FAILURES_PER_MINUTE"] = str(failures_per_minute)
    server = subprocess.Popen([str(ROOT / ".venv" / "bin" / "hopindex"), "serve", "--port",
                               str(port)], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE)
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"hopindex serve exited: {server.stderr.read().decode()[-2000:]}"
                               if server.stderr else "hopindex serve exited")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/healthz")
            if conn.getresponse().status == 200:
                return server
        except OSError:
            time.sleep(0.2)
    server.kill()
    raise RuntimeError("hopindex serve did not answer /healthz")


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process so far (/proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_split() -> tuple[set[int], set[int]]:
    """(server and legitimate client, flood clients): halves of this process's CPUs."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        return set(cpus), set(cpus)
    half = len(cpus) // 2
    return set(cpus[:half]), set(cpus[half:])


FLOOD_MODES = {"quiet": 0, "random": 1, "known-id": 2}


def flood(port: int, known_id: str, mode: Any, phase: Any, stop: Any, out: Any) -> None:
    """One flooding client: while ``mode`` says so, wrong keys back to back on a
    keep-alive connection; the answers' statuses per phase go to ``out`` at the end."""
    statuses: Counter[tuple[int, int]] = Counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    out.put("ready")
    while not stop.is_set():
        kind = mode.value
        if kind == FLOOD_MODES["quiet"]:
            time.sleep(0.01)
            continue
        number, key = phase.value, new_key()
        if kind == FLOOD_MODES["known-id"]:
            key = f"hpx_{known_id}_{key.rsplit('_', 1)[1]}"
        try:
            conn.request("GET", "/v1/indexes", headers={"Authorization": f"Bearer {key}"})
            response = conn.getresponse()
            response.read()
            statuses[(number, response.status)] += 1
        except (OSError, http.client.HTTPException):
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    out.put(dict(statuses))


class Flood:
    """``count`` flooding processes, started once on ``cpus`` (their start-up costs the
    server nothing) and switched on and off per phase."""

    def __init__(self, port: int, known_id: str, count: int, cpus: set[int]) -> None:
        ctx = mp.get_context("spawn")
        self.mode, self.phase = ctx.Value("i", 0), ctx.Value("i", 0)
        self._stop, self._out = ctx.Event(), ctx.Queue()
        mine = os.sched_getaffinity(0)
        os.sched_setaffinity(0, cpus)  # inherited by the processes started now
        self._procs = [ctx.Process(target=flood, args=(port, known_id, self.mode, self.phase,
                                                       self._stop, self._out))
                       for _ in range(count)]
        for proc in self._procs:
            proc.start()
        os.sched_setaffinity(0, mine)
        for _ in self._procs:
            assert self._out.get(timeout=START_TIMEOUT_S) == "ready"

    def switch(self, kind: str, phase: int) -> None:
        self.phase.value = phase
        self.mode.value = FLOOD_MODES[kind]

    def close(self) -> Counter[tuple[int, int]]:
        """Stop every flooder; the statuses they got, per (phase, status)."""
        self._stop.set()
        statuses: Counter[tuple[int, int]] = Counter()
        for _ in self._procs:
            statuses.update(self._out.get(timeout=60))
        for proc in self._procs:
            proc.join(timeout=30)
        return statuses


class Client:
    """The legitimate client: one keep-alive connection, one query at a time."""

    def __init__(self, port: int, key: str, questions: list[str]) -> None:
        self._conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        self._headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
        self._questions = questions
        self._next = 0

    def query_ms(self) -> float:
        question = self._questions[self._next % len(self._questions)]
        self._next += 1
        body = json.dumps({"question": question, "method": METHOD, "k": K})
        started = time.perf_counter()
        self._conn.request("POST", f"/v1/indexes/{INDEX}/query", body=body,
                           headers=self._headers)
        response = self._conn.getresponse()
        data = response.read()
        elapsed_ms = (time.perf_counter() - started) * 1000
        if response.status != 200:
            raise RuntimeError(f"the legitimate query got {response.status}: {data[:200]!r}")
        return elapsed_ms


def run_phase(client: Client, server_pid: int, flood: Flood, kind: str, number: int,
              phase_s: float) -> dict[str, Any]:
    flood.switch(kind, number)
    time.sleep(1.0)  # the flood (or the quiet) under way before measuring
    cpu_before, started = cpu_s(server_pid), time.monotonic()
    latencies: list[float] = []
    while time.monotonic() - started < phase_s:
        latencies.append(client.query_ms())
    elapsed_s = time.monotonic() - started
    server_cpu = cpu_s(server_pid) - cpu_before
    flood.switch("quiet", number)
    return {"kind": kind, "number": number, "latencies_ms": latencies, "elapsed_s": elapsed_s,
            "server_cpu_s": server_cpu, "flood_statuses": {}}


def summary(phases: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    chosen = [p for p in phases if p["kind"] == kind]
    latencies = [ms for p in chosen for ms in p["latencies_ms"]]
    elapsed = sum(p["elapsed_s"] for p in chosen)
    statuses: Counter[int] = Counter()
    for p in chosen:
        statuses.update(p["flood_statuses"])
    flood_requests = sum(statuses.values())
    return {"queries": len(latencies), "p50_ms": percentile(latencies, 50),
            "p95_ms": percentile(latencies, 95), "qps": len(latencies) / elapsed,
            "server_cpu_share": sum(p["server_cpu_s"] for p in chosen) / elapsed,
            "flood_requests_per_s": flood_requests / elapsed,
            "flood_statuses": {str(k): v for k, v in sorted(statuses.items())}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--phase-s", type=float, default=15.0, help="seconds per phase")
    parser.add_argument("--flooders", type=int, default=8)
    parser.add_argument("--failures-per-minute", type=int, default=None,
                        help="HOPINDEX_API_AUTH_FAILURES_PER_MINUTE for the server (0: no "
                             "limit, to see what the key lookup alone costs); default: its "
                             "default")
    args = parser.parse_args()
    ensure_index()
    key = new_key()
    keys_file = OUT / "key-flood-keys.toml"
    keys_file.write_text(key_file_entry(key, HashScheme.SCRYPT, name="bench", access="read",
                                        indexes=[INDEX]))
    port = free_port()
    server_cpus, flood_cpus = cpu_split()
    # The server inherits this process's CPUs; the flood clients move to the others.
    os.sched_setaffinity(0, server_cpus)
    server = start_server(keys_file, port, args.failures_per_minute)
    try:
        flood = Flood(port, key_id(key), args.flooders, flood_cpus)
        questions = [q["question"] for q in sample("questions.json")]
        client = Client(port, key, questions)
        for _ in range(10):  # the key's one scrypt check, the model, the searchers
            client.query_ms()
        phases = []
        for kind in ("quiet", "random", "quiet", "known-id") * ROUNDS:
            phase = run_phase(client, server.pid, flood, kind, len(phases), args.phase_s)
            print(f"{kind:>8}: {len(phase['latencies_ms'])} queries, p50 "
                  f"{percentile(phase['latencies_ms'], 50):.1f} ms", flush=True)
            phases.append(phase)
        for (number, status), count in flood.close().items():
            phases[number]["flood_statuses"][status] = count
    finally:
        server.terminate()
        server.wait(timeout=60)
    limit = args.failures_per_minute
    figures: dict[str, Any] = {"flooders": args.flooders, "phase_s": args.phase_s,
                               "failures_per_minute": limit,
                               "server_cpus": sorted(server_cpus),
                               "flood_cpus": sorted(flood_cpus),
                               "rounds": ROUNDS, "method": METHOD, "k": K,
                               **{kind.replace("-", "_"): summary(phases, kind)
                                  for kind in ("quiet", "random", "known-id")}}
    for kind in ("random", "known_id"):
        figures[f"{kind}_p50_ratio"] = figures[kind]["p50_ms"] / figures["quiet"]["p50_ms"]
    print(json.dumps({k: v for k, v in figures.items() if k != "phases"}, indent=2))
    print(f"p50 under the random-key flood: {figures['random_p50_ratio']:.2f}x quiet "
          f"(target <= {TARGET_RATIO}x)")
    name = "api_key_flood" if limit is None else f"api_key_flood_limit{limit}"
    print(f"wrote {write_result(name, figures)}")


if __name__ == "__main__":
    main()
