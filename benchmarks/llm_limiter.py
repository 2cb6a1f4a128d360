"""Shared LLM rate limiter: throughput and 429s against the test server.

Target: with the test server at 200 ms latency and a 600 requests/min limit, 1, 2
and 4 worker processes sharing one Redis-backed limiter each sustain >= 90 % of
600/min with zero 429s from the server. A second part paces tokens/min against a
tokens/min limit (2 processes) and reports the same figures.

The server runs in a thread of this process; each worker is a spawned process
running an asyncio loop of ``--concurrency`` callers that send small answer-style
chat requests through ``LlmClient`` with a ``RedisRateLimiter``. Every run uses a
fresh model name, so no limiter budget carries over between runs. Throughput is
what the server answered (``ok``) over the steady part of the run, after
``--warmup-s``; 429s are counted over the whole run.

Redis: ``--redis-url`` (default ``$HOPINDEX_BENCH_REDIS_URL`` or database 15 on
localhost); when nothing answers there a private ``redis-server`` is started on a
free port and stopped at the end.

    .venv/bin/python benchmarks/llm_limiter.py [--duration-s 65] [--warmup-s 5]
        [--concurrency 16] [--processes 1 2 4] [--tpm 20000] [--redis-url URL]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import os
import sys
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import write_result

from hopindex.backends.llm.client import ChatRequest, LlmClient, LlmSettings
from hopindex.backends.llm.ratelimit import RateLimits, rate_limiter_for
from hopindex.backends.llm.usage import UsageMeter
from hopindex.core.errors import HopindexError
from hopindex.core.logging import configure_logging
from hopindex.core.settings import Settings
from hopindex.testing.llm_limits import Endpoint, LlmServerStats, Outcome
from hopindex.testing.llm_server import LlmServerConfig, LlmTestServer
from hopindex.testing.redis_server import running_redis

DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/15"
# Workers keep calling this long past the measured window, then cancel what is left
# (callers queued in the limiter would otherwise trickle in for many seconds).
GRACE_S = 1.0
LATENCY_S = 0.2
RPM_LIMIT = 600
TARGET_SHARE = 0.90

CONTEXT = (
    "Ada Lovelace was an English mathematician and writer, chiefly known for her work on "
    "Charles Babbage's proposed mechanical general-purpose computer, the Analytical Engine. "
    "She was the first to recognise that the machine had applications beyond pure "
    "calculation. Ada Lovelace was the only legitimate child of the poet Lord Byron and "
    "the reformer Anne Isabella Milbanke. Charles Babbage called her the Enchantress of "
    "Numbers. The Analytical Engine was never completed during their lifetimes.")
QUESTIONS = ("Who designed the Analytical Engine?", "Who was the father of the writer?",
             "Who called her the Enchantress of Numbers?", "Who was her mother?")


# --- Redis: the one running, or a private redis-server (as tests/redis_server.py) ----


# --- workers ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class WorkerJob:
    index: int
    base_url: str
    redis_url: str
    model: str  # the limiter key: fresh per run
    requests_per_minute: int | None
    tokens_per_minute: int | None
    concurrency: int
    duration_s: float
    max_tokens: int
    log_level: str


def _request(worker: int, caller: int, n: int, max_tokens: int) -> ChatRequest:
    question = QUESTIONS[(worker + caller + n) % len(QUESTIONS)]
    prompt = (f"Answer the question from the context in a few words.\n\n"
              f"Context: {CONTEXT}\n\nQuestion: {question}\nAnswer:")
    return ChatRequest(stage="bench_answer", messages=(("user", prompt),),
                       max_tokens=max_tokens)


async def _worker_main(job: WorkerJob, start_at: float) -> dict[str, Any]:
    configure_logging(Settings(log_level=job.log_level))
    limits = RateLimits(requests_per_minute=job.requests_per_minute,
                        tokens_per_minute=job.tokens_per_minute)
    limiter = rate_limiter_for(job.redis_url, limits)
    client = LlmClient(LlmSettings(base_url=job.base_url, model=job.model, api_key="bench"),
                       limiter)
    usage = UsageMeter()
    errors: list[str] = []
    # Everyone starts at the same wall-clock instant (processes spawn at different speeds).
    await asyncio.sleep(max(0.0, start_at - time.time()))

    async def caller(number: int) -> None:
        n = 0
        while True:
            try:
                await client.complete(_request(job.index, number, n, job.max_tokens), usage)
            except HopindexError as exc:
                errors.append(f"{type(exc).__name__}: {exc}")
            n += 1

    tasks = [asyncio.create_task(caller(i)) for i in range(job.concurrency)]
    try:
        await asyncio.sleep(job.duration_s + GRACE_S)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await client.close()
    stage = usage.stages.get("bench_answer")
    return {"worker": job.index, "calls": stage.calls if stage else 0,
            "retries": stage.retries if stage else 0,
            "limiter_wait_s": round(stage.limiter_wait_s, 3) if stage else 0.0,
            "errors": len(errors), "first_error": errors[0] if errors else None}


def _worker(job: WorkerJob, start_at: float, results: Any) -> None:
    try:
        results.put(asyncio.run(_worker_main(job, start_at)))
    except BaseException as exc:
        results.put({"worker": job.index, "crashed": f"{type(exc).__name__}: {exc}"})
        raise


# --- one run ------------------------------------------------------------------------


def _ok(stats: LlmServerStats) -> int:
    return stats.count(Endpoint.CHAT, Outcome.OK)


def _tokens(stats: LlmServerStats) -> int:
    return stats.prompt_tokens + stats.completion_tokens


def run(server: LlmTestServer, redis_url: str, *, processes: int,
        requests_per_minute: int | None, tokens_per_minute: int | None,
        args: argparse.Namespace, max_tokens: int) -> dict[str, Any]:
    ctx = mp.get_context("spawn")
    results = ctx.Queue()
    model = f"bench-limiter-{uuid.uuid4().hex[:12]}"
    # Spawned interpreters take a second or two to import; all start together after that.
    start_at = time.time() + args.spawn_s
    jobs = [WorkerJob(index=i, base_url=server.base_url, redis_url=redis_url, model=model,
                      requests_per_minute=requests_per_minute,
                      tokens_per_minute=tokens_per_minute, concurrency=args.concurrency,
                      duration_s=args.duration_s, max_tokens=max_tokens,
                      log_level=args.log_level)
            for i in range(processes)]
    workers = [ctx.Process(target=_worker, args=(job, start_at, results), daemon=True)
               for job in jobs]
    for worker in workers:
        worker.start()
    time.sleep(max(0.0, start_at - time.time() - 0.05))
    server.reset()  # counters and the server's rate window, just before the first call
    time.sleep(max(0.0, start_at + args.warmup_s - time.time()))
    first = server.stats
    time.sleep(max(0.0, start_at + args.duration_s - time.time()))
    last = server.stats
    measured_s = args.duration_s - args.warmup_s
    reports = [results.get(timeout=args.duration_s + args.spawn_s + 120) for _ in workers]
    for worker in workers:
        worker.join(timeout=30)
    final = server.stats
    crashed = [r for r in reports if "crashed" in r]
    if crashed:
        sys.exit(f"worker crashed: {crashed}")
    ok_per_min = (_ok(last) - _ok(first)) / measured_s * 60
    tokens_per_min = (_tokens(last) - _tokens(first)) / measured_s * 60
    calls = sum(r["calls"] for r in reports)
    return {
        "processes": processes,
        "concurrency_per_process": args.concurrency,
        "model_key": model,
        "server_rpm_limit": requests_per_minute,
        "server_tpm_limit": tokens_per_minute,
        "measured_s": measured_s,
        "ok_per_min": round(ok_per_min, 1),
        "rpm_share": round(ok_per_min / requests_per_minute, 4) if requests_per_minute else None,
        "tokens_per_min": round(tokens_per_min, 1),
        "tpm_share": round(tokens_per_min / tokens_per_minute, 4) if tokens_per_minute else None,
        "server_429": final.count(Endpoint.CHAT, Outcome.RATE_LIMITED),
        "server_ok_total": _ok(final),
        "server_tokens_total": _tokens(final),
        "tokens_per_call": round(_tokens(final) / _ok(final), 1) if _ok(final) else None,
        "client_calls": calls,
        "client_retries": sum(r["retries"] for r in reports),
        "client_errors": sum(r["errors"] for r in reports),
        "first_error": next((r["first_error"] for r in reports if r["first_error"]), None),
        "workers": reports,
    }


# --- main ---------------------------------------------------------------------------


def _print_rows(title: str, rows: list[dict[str, Any]], share_key: str, rate_key: str,
                limit_key: str) -> None:
    print(f"\n{title}")
    print(f"{'procs':>5} {'limit/min':>10} {'achieved/min':>13} {'share':>7} {'429s':>5} "
          f"{'retries':>7} {'errors':>6}  verdict")
    for row in rows:
        share = row[share_key]
        verdict = "PASS" if share >= TARGET_SHARE and row["server_429"] == 0 else "FAIL"
        print(f"{row['processes']:>5} {row[limit_key]:>10} {row[rate_key]:>13.1f} "
              f"{share:>7.1%} {row['server_429']:>5} {row['client_retries']:>7} "
              f"{row['client_errors']:>6}  {verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration-s", type=float, default=65.0,
                        help="how long each run issues calls (warm-up included)")
    parser.add_argument("--warmup-s", type=float, default=5.0,
                        help="start of each run left out of the throughput")
    parser.add_argument("--concurrency", type=int, default=16, help="callers per process")
    parser.add_argument("--processes", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--tpm", type=int, default=20_000,
                        help="tokens/min limit of the token run (0 skips it)")
    parser.add_argument("--tpm-processes", type=int, default=2)
    parser.add_argument("--spawn-s", type=float, default=4.0,
                        help="time given to worker processes to start before the run")
    parser.add_argument("--redis-url",
                        default=os.environ.get("HOPINDEX_BENCH_REDIS_URL", DEFAULT_REDIS_URL))
    parser.add_argument("--log-level", default="WARNING")
    args = parser.parse_args()
    configure_logging(Settings(log_level=args.log_level))
    if not 0 <= args.warmup_s < args.duration_s:
        parser.error("--warmup-s must be non-negative and below --duration-s")

    with running_redis(args.redis_url) as (redis_url, started_here):
        server = LlmTestServer(LlmServerConfig(latency_s=LATENCY_S,
                                               requests_per_minute=RPM_LIMIT))
        server.start_in_thread()
        try:
            rpm_rows = []
            for processes in args.processes:
                row = run(server, redis_url, processes=processes,
                          requests_per_minute=RPM_LIMIT, tokens_per_minute=None,
                          args=args, max_tokens=16)
                print(f"rpm run, {processes} process(es): {row['ok_per_min']:.1f}/min, "
                      f"{row['server_429']} x 429", flush=True)
                rpm_rows.append(row)
        finally:
            server.stop()
        tpm_rows = []
        if args.tpm:
            server = LlmTestServer(LlmServerConfig(latency_s=LATENCY_S,
                                                   requests_per_minute=None,
                                                   tokens_per_minute=args.tpm))
            server.start_in_thread()
            try:
                row = run(server, redis_url, processes=args.tpm_processes,
                          requests_per_minute=None, tokens_per_minute=args.tpm,
                          args=args, max_tokens=16)
                print(f"tpm run, {args.tpm_processes} process(es): "
                      f"{row['tokens_per_min']:.1f} tokens/min, {row['server_429']} x 429",
                      flush=True)
                tpm_rows.append(row)
            finally:
                server.stop()

    print(f"\nserver latency {LATENCY_S * 1000:.0f} ms, {args.concurrency} callers/process, "
          f"{args.duration_s:.0f} s runs, throughput over the last "
          f"{args.duration_s - args.warmup_s:.0f} s; target >= {TARGET_SHARE:.0%}, zero 429s")
    _print_rows("requests/min (server ok answers):", rpm_rows, "rpm_share", "ok_per_min",
                "server_rpm_limit")
    if tpm_rows:
        _print_rows("tokens/min (server prompt + completion tokens):", tpm_rows, "tpm_share",
                    "tokens_per_min", "server_tpm_limit")
        print(f"  tokens per call: {tpm_rows[0]['tokens_per_call']}, "
              f"calls/min: {tpm_rows[0]['ok_per_min']:.1f}")
    limits = RateLimits(requests_per_minute=RPM_LIMIT)
    budget = limits.request_budget()
    assert budget is not None
    limiter_rpm = 60 / budget.interval_s
    print(f"\nlimiter's own sustained request rate: {limiter_rpm:.1f}/min "
          f"({limiter_rpm / RPM_LIMIT:.1%} of {RPM_LIMIT}; burst {limits.burst_requests}, "
          f"margin {limits.margin_s:.0f} s)")
    path = write_result("llm_limiter", {
        "config": {"latency_s": LATENCY_S, "rpm_limit": RPM_LIMIT, "tpm_limit": args.tpm,
                   "duration_s": args.duration_s, "warmup_s": args.warmup_s,
                   "concurrency_per_process": args.concurrency,
                   "redis": "private redis-server" if started_here else "existing",
                   "limits": asdict(limits)},
        "target": {"rpm_share_min": TARGET_SHARE, "server_429": 0},
        "limiter_sustained_rpm": round(limiter_rpm, 1),
        "rpm_runs": rpm_rows,
        "tpm_runs": tpm_rows,
        "passed": all(r["rpm_share"] >= TARGET_SHARE and r["server_429"] == 0
                      for r in rpm_rows),
    })
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
