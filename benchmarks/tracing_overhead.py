"""What OpenTelemetry tracing adds to query latency, on the 2Wiki index of
ingest_2wiki.py: five processes asked the same questions side by side.

- ``base``: the build before tracing existed (commit a6c3b6d, checked out with
  ``git worktree add`` under /tmp and imported through PYTHONPATH);
- ``off``: this tree, tracing off (no ``OTEL_*`` variable: the default);
- ``off2``: ``off`` again, in a process of its own: what two identical processes
  differ by, the floor under every ratio below;
- ``on``: this tree, ``OTEL_TRACES_EXPORTER=otlp``, ``OTEL_TRACES_SAMPLER=always_on``,
  exporting over OTLP/HTTP to a receiver in this process that answers 200 and counts
  the spans it decodes;
- ``dead``: as ``on``, the collector a loopback listener that accepts connections and
  never answers.

Every process has its own copy of the index's data dir (the embedded engines take one
process per data dir) and its own environment. Each question goes to every process,
in a fresh random order per question. Two identical processes differ by up to ~5%
for their whole lives (the one that warms up first is the slower), more than the
differences measured here: so the run is cut into rounds of fresh processes, the
warm-up order turning a mode a round, and each mode's figures pool its rounds.
Targets: p50 of ``off`` at most 1% above ``base``; ``on`` and ``dead`` at most 5% above
``off``, with spans received from ``on`` and no query of ``dead`` failing.

    .venv/bin/python benchmarks/tracing_overhead.py [--queries N] [--rounds R] [--method M]

Builds the index (one ingest of the 2Wiki corpus, ~5 min) when ingest_2wiki.py has
not. Needs git (the worktree of the base build); the default run takes ~9 min.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import os
import queue
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import OUT, ROOT, WIKI_CORPUS, local_client, read_json, write_result
from query_latency import INDEX, wiki_questions

# The last commit without the tracing code: the build ``base`` runs.
BASE_COMMIT = "a6c3b6d"
MODES = ("base", "off", "off2", "on", "dead")
# The comparisons, each (mode, against): their p50s' ratio is the figure.
PAIRS = (("off", "base"), ("off2", "off"), ("on", "off"), ("dead", "off"))
K = 10
WARMUP = 10
# A query takes tens of ms: one not answered in this long is a hung process.
ANSWER_TIMEOUT_S = 120.0
START_TIMEOUT_S = 300.0
STOP_TIMEOUT_S = 60.0
SPAN_LOOPS = 2000


# --- the collectors ------------------------------------------------------------------


class SpanReceiver:
    """An OTLP/HTTP collector on loopback that answers 200 to every POST /v1/traces and
    counts the spans and traces it decoded."""

    def __init__(self) -> None:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
            ExportTraceServiceResponse,
        )

        self.lock = threading.Lock()
        self.requests = 0
        self.spans = 0
        self.trace_ids: set[str] = set()
        self.span_names: dict[str, int] = {}
        self.errors: list[str] = []
        receiver = self
        reply = ExportTraceServiceResponse().SerializeToString()

        class Handler(BaseHTTPRequestHandler):
            # Keep-alive, as a collector answers: the exporter's session reuses it.
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self.path != "/v1/traces":
                    self._answer(404, b"")
                    return
                try:
                    if self.headers.get("Content-Encoding", "") == "gzip":
                        body = gzip.decompress(body)
                    request = ExportTraceServiceRequest.FromString(body)
                except Exception as exc:  # counted: spans we cannot read are not received
                    with receiver.lock:
                        receiver.errors.append(repr(exc))
                    self._answer(400, b"")
                    return
                with receiver.lock:
                    receiver.requests += 1
                    for resource in request.resource_spans:
                        for scope in resource.scope_spans:
                            for span in scope.spans:
                                receiver.spans += 1
                                receiver.trace_ids.add(span.trace_id.hex())
                                receiver.span_names[span.name] = (
                                    receiver.span_names.get(span.name, 0) + 1)
                self._answer(200, reply)

            def _answer(self, status: int, payload: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:
                return None  # a line per export on stderr would bury the figures

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True,
                                       name="span-receiver")
        self.thread.start()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1/traces"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class DeadCollector:
    """A loopback listener that accepts every connection and holds it open without
    reading a byte or answering: a collector that hung, on this machine."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(128)
        # A timeout so that the accept loop sees ``close`` rather than blocking past it.
        self.sock.settimeout(0.2)
        self.held: list[socket.socket] = []
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._accept, daemon=True,
                                       name="dead-collector")
        self.thread.start()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1/traces"

    @property
    def connections(self) -> int:
        return len(self.held)

    def _accept(self) -> None:
        while not self.stopping.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            # Kept, so that the exporter sees an open connection that stays silent
            # (closed, it would fail at once: a different case, and an easy one).
            self.held.append(conn)

    def close(self) -> None:
        self.stopping.set()
        self.thread.join(timeout=5)
        for conn in self.held:
            conn.close()
        self.sock.close()


# --- the processes -------------------------------------------------------------------


class Worker:
    """A process answering over stdin/stdout, one JSON object a line."""

    def __init__(self, mode: str, proc: subprocess.Popen[str], log_path: Path) -> None:
        self.mode = mode
        self.proc = proc
        self.log_path = log_path
        self.lines: queue.Queue[str | None] = queue.Queue()
        # Read in a thread, so that a process that hangs is a timeout here, not a hang.
        threading.Thread(target=self._read, daemon=True, name=f"read-{mode}").start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def ask(self, message: dict[str, Any], timeout_s: float = ANSWER_TIMEOUT_S
            ) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()
        return self.answer(timeout_s)

    def answer(self, timeout_s: float) -> dict[str, Any]:
        try:
            line = self.lines.get(timeout=timeout_s)
        except queue.Empty:
            raise RuntimeError(f"{self.mode}: no answer in {timeout_s:.0f} s"
                               f"{self.log_tail()}") from None
        if line is None:
            raise RuntimeError(f"{self.mode}: the process exited "
                               f"(code {self.proc.wait()}){self.log_tail()}")
        answer: dict[str, Any] = json.loads(line)
        if "fatal" in answer:
            raise RuntimeError(f"{self.mode}: {answer['fatal']}{self.log_tail()}")
        return answer

    def stop(self) -> dict[str, float]:
        """Close its client, then wait for the process to exit: the seconds to each
        (an exit waits for the spans still queued, and a traced process's exit is
        meant to wait at most ~2 s for them)."""
        started = time.perf_counter()
        times = {"close_s": 0.0, "exit_s": 0.0}
        if self.proc.poll() is None:
            with contextlib.suppress(OSError, RuntimeError, ValueError):
                self.ask({"op": "stop"}, timeout_s=STOP_TIMEOUT_S)
            times["close_s"] = time.perf_counter() - started
            try:
                self.proc.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        times["exit_s"] = time.perf_counter() - started
        return times

    def log_tail(self) -> str:
        with contextlib.suppress(OSError):
            tail = self.log_path.read_text(errors="replace").splitlines()[-20:]
            return f"\n--- the end of {self.log_path}:\n" + "\n".join(tail)
        return ""


def start_worker(mode: str, data_dir: Path, method: str, env: dict[str, str],
                 expect_root: Path, cwd: Path) -> Worker:
    log_path = OUT / f"tracing-overhead-{mode}.log"
    with log_path.open("w") as log:  # the child keeps its own descriptor
        proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--worker",
             "--data-dir", str(data_dir), "--method", method,
             "--expect-root", str(expect_root)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True, env=env,
            cwd=cwd)
    return Worker(mode, proc, log_path)


def worker_env(extra: dict[str, str]) -> dict[str, str]:
    """This environment without the caller's ``OTEL_*`` and PYTHONPATH: each mode is
    exactly what ``extra`` asks."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("OTEL_") and k != "PYTHONPATH"}
    env.update(extra)
    return env


def serve_worker(args: argparse.Namespace) -> None:
    """The process side: open the client, answer questions until told to stop."""
    # The protocol gets a descriptor of its own; whatever a library prints on stdout
    # goes to stderr (the log) instead of into it.
    channel = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)

    def send(message: dict[str, Any]) -> None:
        channel.write(json.dumps(message) + "\n")

    import hopindex

    where = Path(hopindex.__file__).resolve()
    if not where.is_relative_to(Path(args.expect_root).resolve()):
        send({"fatal": f"hopindex imported from {where}, not under {args.expect_root}"})
        sys.exit(2)
    from hopindex.core.settings import Settings
    from hopindex.methods.base import QueryOptions

    try:
        from hopindex.core.tracing import flush_spans, tracing_enabled
    except ImportError:  # the build before tracing existed
        flush_spans, tracing_enabled = None, None  # type: ignore[assignment]
    options = QueryOptions(k=K)
    settings = Settings(data_dir=Path(args.data_dir)).resolved()
    with local_client(settings=settings) as client:
        # Read after opening: the client's logging set-up is what configures tracing.
        traced = tracing_enabled() if tracing_enabled is not None else None
        send({"ready": True, "hopindex": str(where), "tracing": traced})
        for line in sys.stdin:
            message = json.loads(line)
            if message["op"] == "stop":
                break
            if message["op"] == "flush":
                send({"flushed": flush_spans(message["timeout_s"])
                      if flush_spans is not None else True})
                continue
            t0 = time.perf_counter()
            try:
                result = client.query(INDEX, message["q"], method=args.method, k=K,
                                      options=options)
            except Exception as exc:  # reported, not raised: a failed query is a figure
                send({"error": f"{type(exc).__name__}: {exc}",
                      "ms": (time.perf_counter() - t0) * 1000})
                continue
            ms = (time.perf_counter() - t0) * 1000
            send({"ms": ms, "latency_s": result.latency_s,
                  "trace_id": getattr(result, "trace_id", ""),
                  "docs": [p.doc_id for p in result.passages],
                  "phases_ms": {k: v * 1000 for k, v in result.usage.phases_s.items()}})
    send({"stopped": True})


# --- the run -------------------------------------------------------------------------


@contextlib.contextmanager
def base_worktree() -> Iterator[Path]:
    """The tree of BASE_COMMIT, checked out beside this one and removed after."""
    path = Path(tempfile.mkdtemp(prefix="hopindex-base-"))
    path.rmdir()  # git worktree add makes it
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "--quiet",
                    str(path), BASE_COMMIT], check=True)
    try:
        yield path
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(path)],
                       check=False)
        shutil.rmtree(path, ignore_errors=True)


def spans_alone_us(phases: list[str]) -> float:
    """Microseconds a query's spans take alone: its root span, one span per phase the
    receiver saw, the attributes the service sets, the trace id it reads, each ended
    into the batch processor the ``on`` process runs (its exporter a no-op, so that
    only the query thread's share is timed)."""
    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.sdk.trace.export import (
        BatchSpanProcessor,
        SpanExporter,
        SpanExportResult,
    )

    from hopindex.core.tracing import current_trace_id, span, stop_tracing, use_span_processor
    from hopindex.core.tracing.settings import SamplerName, TracesExporter, TracingSettings

    class Discard(SpanExporter):
        def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    use_span_processor(BatchSpanProcessor(Discard()),
                       TracingSettings(exporter=TracesExporter.OTLP,
                                       sampler=SamplerName.ALWAYS_ON))
    try:
        t0 = time.perf_counter()
        for _ in range(SPAN_LOOPS):
            with span("query", {"hopindex.index": INDEX, "hopindex.method": "x"}) as root:
                for phase in phases:
                    with span(phase, {"hopindex.query.phase": phase}):
                        pass
                root.set_attribute("hopindex.method", "x")
                root.set_attribute("hopindex.query.passages", K)
                root.set_attribute("hopindex.query.degraded", [])
                current_trace_id()
        return (time.perf_counter() - t0) / SPAN_LOOPS * 1e6
    finally:
        stop_tracing()


def summary(ms: list[float]) -> dict[str, float]:
    from hopindex.evaluation.metrics import percentile

    return {"p50_ms": percentile(ms, 50), "p95_ms": percentile(ms, 95),
            "mean_ms": statistics.fmean(ms)}


class Tally:
    """Every answer, per mode, aligned across modes: entry i of each list is the i-th
    question asked (None where the query failed)."""

    def __init__(self) -> None:
        self.ms: dict[str, list[float | None]] = {mode: [] for mode in MODES}
        self.phases: dict[str, dict[str, list[float]]] = {mode: {} for mode in MODES}
        self.failed: dict[str, list[str]] = {mode: [] for mode in MODES}
        self.differing = dict.fromkeys(MODES, 0)
        self.on_traces: list[str] = []
        self.rounds: list[tuple[int, int]] = []  # each round's slice of the lists
        self.stop_s: dict[str, list[dict[str, float]]] = {mode: [] for mode in MODES}
        self.flushed = True

    def add(self, answers: dict[str, dict[str, Any]]) -> None:
        for mode, answer in answers.items():
            if "error" in answer:
                self.failed[mode].append(answer["error"])
                self.ms[mode].append(None)
                continue
            self.ms[mode].append(answer["ms"])
            phases = self.phases[mode]
            for phase, ms in answer["phases_ms"].items():
                phases.setdefault(phase, []).append(ms)
            # The service's own share: the query's time outside its method's phases.
            phases.setdefault("(outside phases)", []).append(
                answer["ms"] - sum(answer["phases_ms"].values()))
            if answer["docs"] != answers["off"].get("docs"):
                self.differing[mode] += 1
        if answers["on"].get("trace_id"):
            self.on_traces.append(answers["on"]["trace_id"])

    def ratios(self, mode: str, against: str, lo: int = 0, hi: int | None = None
               ) -> dict[str, float]:
        """p50 of ``mode`` over p50 of ``against``, and the median of the per-question
        ratios, over the questions both answered in ``[lo:hi]``."""
        pairs = [(m, o) for m, o in zip(self.ms[mode][lo:hi], self.ms[against][lo:hi],
                                        strict=True) if m is not None and o is not None]
        return {"p50_ratio": statistics.median(m for m, _ in pairs)
                / statistics.median(o for _, o in pairs),
                "median_paired_ratio": statistics.median(m / o for m, o in pairs)}


def run_round(number: int, questions: list[str], workers: dict[str, Worker],
              tally: Tally, rng: random.Random) -> None:
    # The process that runs the first query of a round (the one that loads its
    # embedding model first) stays slower than the others for its whole life, by
    # 3-5% on the development machine, whatever its mode (in its embedding step): so
    # the warm-up order turns a mode a round, each mode first once in len(MODES).
    first = number % len(MODES)
    for q in questions[:WARMUP]:
        for mode in MODES[first:] + MODES[:first]:
            workers[mode].ask({"op": "query", "q": q})
    lo = len(tally.ms["off"])
    for q in questions:
        # A fresh order per question: a query is slower the later it comes among the
        # five (3-4% from first to last), so no mode may keep a place.
        order = list(MODES)
        rng.shuffle(order)
        tally.add({mode: workers[mode].ask({"op": "query", "q": q}) for mode in order})
    tally.rounds.append((lo, len(tally.ms["off"])))


def run_rounds(args: argparse.Namespace, questions: list[str], copies: Path, tally: Tally,
               receiver: SpanReceiver, dead: DeadCollector) -> None:
    traced = {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_TRACES_SAMPLER": "always_on"}
    # None: no tracing code at all.
    expected = {"base": None, "off": False, "off2": False, "on": True, "dead": True}
    rng = random.Random(args.seed)
    workers: dict[str, Worker] = {}
    with base_worktree() as base_tree, tempfile.TemporaryDirectory() as scratch:
        envs = {
            "base": worker_env({"PYTHONPATH": str(base_tree)}),
            "off": worker_env({}),
            "off2": worker_env({}),
            "on": worker_env({**traced, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": receiver.endpoint}),
            "dead": worker_env({**traced, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": dead.endpoint}),
        }
        try:
            for number in range(args.rounds):
                for mode in MODES:
                    # Run from an empty directory: nothing of this tree within base's
                    # reach but what PYTHONPATH names, and that is checked.
                    workers[mode] = start_worker(mode, copies / mode, args.method, envs[mode],
                                                 base_tree if mode == "base" else ROOT,
                                                 Path(scratch))
                for mode, worker in workers.items():
                    ready = worker.answer(START_TIMEOUT_S)
                    if ready["tracing"] != expected[mode]:
                        raise RuntimeError(f"{mode}: tracing {ready['tracing']}, expected "
                                           f"{expected[mode]}")
                    if number == 0:
                        print(f"{mode}: hopindex from {Path(ready['hopindex']).parent}, "
                              f"tracing {ready['tracing']}", flush=True)
                run_round(number, questions[number::args.rounds], workers, tally, rng)
                # Every span of the round in before its processes go.
                tally.flushed &= bool(
                    workers["on"].ask({"op": "flush", "timeout_s": 30.0})["flushed"])
                for mode in MODES:
                    tally.stop_s[mode].append(workers.pop(mode).stop())
                print(f"round {number + 1}/{args.rounds}: "
                      f"{len(tally.ms['off'])}/{len(questions)} questions", flush=True)
        finally:
            # Before the worktree goes: base runs from it.
            for worker in workers.values():
                worker.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=2000,
                        help="questions asked of each mode, over all rounds")
    parser.add_argument("--rounds", type=int, default=2 * len(MODES),
                        help="fresh processes this many times (a multiple of "
                             f"{len(MODES)} warms each mode first equally often)")
    parser.add_argument("--method", default="extractive")
    parser.add_argument("--seed", type=int, default=0, help="of the orders questions go in")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--data-dir", help=argparse.SUPPRESS)
    parser.add_argument("--expect-root", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        serve_worker(args)
        return

    from metrics_overhead import ensure_index

    corpus = read_json(WIKI_CORPUS)
    questions = wiki_questions(corpus, args.queries)
    data_dir = OUT / "2wiki-data"
    ensure_index(data_dir, corpus)

    tally = Tally()
    copies = OUT / "tracing-overhead-data"
    receiver = SpanReceiver()
    dead = DeadCollector()
    started = time.perf_counter()
    try:
        shutil.rmtree(copies, ignore_errors=True)
        for mode in MODES:
            shutil.copytree(data_dir, copies / mode)
        run_rounds(args, questions, copies, tally, receiver, dead)
    finally:
        receiver.close()
        dead.close()
        shutil.rmtree(copies, ignore_errors=True)
    report(args, questions, tally, receiver, dead, time.perf_counter() - started)


def report(args: argparse.Namespace, questions: list[str], tally: Tally,
           receiver: SpanReceiver, dead: DeadCollector, run_s: float) -> None:
    failed = tally.failed
    for mode in MODES:
        if failed[mode]:
            print(f"{mode}: {len(failed[mode])} queries failed, the first: {failed[mode][0]}")
    if failed["off"]:
        sys.exit("queries failed with tracing off: no baseline to compare with")
    stats = {mode: summary([m for m in values if m is not None])
             for mode, values in tally.ms.items() if any(m is not None for m in values)}
    ratios: dict[str, dict[str, Any]] = {}
    for mode, against in PAIRS:
        if mode in stats:
            ratios[f"{mode}/{against}"] = {
                **tally.ratios(mode, against),
                "round_p50_ratios": [tally.ratios(mode, against, lo, hi)["p50_ratio"]
                                     for lo, hi in tally.rounds]}
    phases = {mode: {phase: statistics.median(values) for phase, values in by_phase.items()}
              for mode, by_phase in tally.phases.items()}

    def within(name: str, limit: float) -> bool:
        return name in ratios and ratios[name]["p50_ratio"] <= limit

    with receiver.lock:
        spans, requests = receiver.spans, receiver.requests
        received = sum(t in receiver.trace_ids for t in tally.on_traces)
        names = dict(sorted(receiver.span_names.items(), key=lambda kv: -kv[1]))
        decode_errors = len(receiver.errors)
    # After the run, the other processes gone: this process's spans time nothing else.
    span_us = spans_alone_us([name for name in names if name != "query"])
    targets = {
        "off_within_1pct_of_base": within("off/base", 1.01) and not failed["base"],
        "on_within_5pct_of_off": within("on/off", 1.05) and spans > 0 and not failed["on"],
        "dead_within_5pct_of_off": within("dead/off", 1.05) and not failed["dead"]
        and dead.connections > 0,
    }
    stop_s = {mode: {key: max(s[key] for s in runs) for key in ("close_s", "exit_s")}
              for mode, runs in tally.stop_s.items()}
    asked = len(questions) + WARMUP * args.rounds
    figures: dict[str, Any] = {
        "queries": len(questions), "rounds": args.rounds, "warmup_per_round": WARMUP,
        "method": args.method, "k": K, "seed": args.seed, "base_commit": BASE_COMMIT,
        "run_s": run_s, "modes": stats, "ratios": ratios, "phases_p50_ms": phases,
        "failed": {mode: len(errors) for mode, errors in failed.items()},
        "passages_differing_from_off": tally.differing,
        "receiver": {"spans": spans, "export_requests": requests,
                     "decode_errors": decode_errors, "flushed": tally.flushed,
                     "queries_asked": asked, "on_traces": len(tally.on_traces),
                     "on_traces_received": received, "span_names": names},
        "dead_collector": {"connections": dead.connections},
        "stop_s_max": stop_s, "spans_alone_us_per_query": span_us,
        "spans_alone_pct_of_off_p50": span_us / 1000 / stats["off"]["p50_ms"] * 100,
        "targets": targets,
    }

    print(f"{args.method}, {len(questions)} questions to each of {len(MODES)} modes, in "
          f"{args.rounds} rounds of fresh processes ({WARMUP} questions each to warm up), "
          f"{run_s:.0f} s")
    for mode, s in stats.items():
        print(f"  {mode:5} p50 {s['p50_ms']:7.2f} ms  p95 {s['p95_ms']:7.2f} ms  "
              f"mean {s['mean_ms']:7.2f} ms  failed {len(failed[mode])}  "
              f"passages differing from off {tally.differing[mode]}")
    for name, r in ratios.items():
        rounds = " ".join(f"{x:.3f}" for x in r["round_p50_ratios"])
        print(f"  {name:9} p50 ratio {r['p50_ratio']:.4f}  median of per-question ratios "
              f"{r['median_paired_ratio']:.4f}  by round {rounds}")
    print("  p50 ms by phase: " + "  ".join(MODES))
    for phase in phases["off"]:
        print(f"    {phase:18} " + "  ".join(f"{phases[m].get(phase, float('nan')):6.2f}"
                                            for m in MODES))
    print(f"receiver: {spans} spans in {requests} exports ({spans / asked:.1f} a query); "
          f"{received} of {len(tally.on_traces)} measured queries' traces received; "
          f"flush {'complete' if tally.flushed else 'INCOMPLETE'}; "
          f"{decode_errors} undecodable")
    print(f"the spans alone: {span_us:.0f} us a query = "
          f"{figures['spans_alone_pct_of_off_p50']:.2f}% of p50 off")
    print(f"dead collector: {dead.connections} connections accepted, none answered")
    print("closed / exited after stop, slowest round: " + ", ".join(
        f"{m} {s['close_s']:.1f} / {s['exit_s']:.1f} s" for m, s in stop_s.items()))
    for name, met in targets.items():
        print(f"target {name}: {'met' if met else 'MISSED'}")
    print(f"wrote {write_result('tracing_overhead', figures)}")
    # Every time, for a second look at a ratio (where the slow queries fall, say).
    raw = OUT / "tracing_overhead-ms.json"
    raw.write_text(json.dumps({"rounds": tally.rounds, "ms": tally.ms}))
    print(f"wrote {raw}")


if __name__ == "__main__":
    main()
