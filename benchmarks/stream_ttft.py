"""Streamed ``indexrag`` answers: time to the first answer token against the full answer.

An IndexRAG index of the paragraphs of the first ``--questions`` HotpotQA-100 sample
questions (their ten context paragraphs each) is built once against the LLM test server
at no latency and kept in benchmarks/out/stream-ttft-data. It is then queried against a
test server paced like a hosted provider: ``--latency-s`` before the first byte (0.5 s,
a typical hosted model's time to its first token under light load) and one token per
batch (``--batch-tokens 1``) every ``--batch-latency-s`` (0.1 s: 10 tokens/s, slower
than most hosted models decode, roughly 20-100 tokens/s, so each token's arrival shows),
with the LLM response cache off so every query reaches the server. Each question is
asked unstreamed and streamed, back to back, the order alternating; for the streamed
query the times to its ``passages`` event, its first ``answer.delta`` and its ``done``
are taken from the call.

Two things about the stand-in model to keep in mind when reading the figures:
- it answers short (an extractive guess: 1.2 words on average over these
  questions), so ``done`` comes at most a batch after the first delta; a real
  model's longer answers widen that gap, and with it what streaming saves;
- it paces an unstreamed reply as a provider does: sent whole once all its tokens
  are written (``--latency-s`` plus one ``--batch-latency-s`` per batch), so the
  unstreamed time and the streamed ``done`` are one model's full answer.

The concatenated deltas (stripped) are checked against the unstreamed answer and the
done event's.

    .venv/bin/python benchmarks/stream_ttft.py [--questions 20] [--rounds 3]
        [--latency-s 0.5] [--batch-tokens 1] [--batch-latency-s 0.1] [--rebuild]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import OUT, SAMPLE, local_client, write_result

from hopindex.api.client.query_stream import QueryEventType
from hopindex.core.settings import CacheMode, Settings
from hopindex.evaluation.metrics import percentile
from hopindex.readers import RawDocument, ReadResult
from hopindex.testing.llm_limits import Endpoint, LlmServerConfig
from hopindex.testing.llm_server import LlmTestServer

INDEX = "stream-ttft"
METHOD = "indexrag"
DATA_DIR = OUT / "stream-ttft-data"
MARKER = DATA_DIR / ".complete"


def sample_questions(count: int) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = json.loads(
        (SAMPLE / "questions.json").read_text(encoding="utf-8"))
    return records[:count]


def documents_of(records: list[dict[str, Any]]) -> list[RawDocument]:
    """The questions' context paragraphs, each title once."""
    documents: dict[str, RawDocument] = {}
    for record in records:
        for title, sentences in record["context"]:
            if title not in documents:
                documents[title] = RawDocument(doc_id=None, title=title,
                                               text="".join(sentences).strip(), metadata={},
                                               origin=f"hotpotqa-100:{title}")
    return list(documents.values())


def build(records: list[dict[str, Any]], rebuild: bool) -> dict[str, Any]:
    """The index, built once per question count (reused while the marker says so)."""
    wanted = f"{METHOD} questions={len(records)}"
    if not rebuild and MARKER.exists() and MARKER.read_text().splitlines()[0] == wanted:
        cached: dict[str, Any] = json.loads(MARKER.read_text().splitlines()[1])
        return cached
    shutil.rmtree(DATA_DIR, ignore_errors=True)
    documents = documents_of(records)
    server = LlmTestServer(LlmServerConfig()).start_in_thread()
    try:
        settings = Settings(data_dir=DATA_DIR, llm_model=server.config.model,
                            llm_base_url=server.base_url, llm_api_key="bench").resolved()
        with local_client(settings=settings) as client:
            started = time.perf_counter()
            job = client.ingest_read(INDEX, ReadResult(documents=documents), method=METHOD)
            ingest_s = round(time.perf_counter() - started, 1)
            built = {"documents": len(documents), "ingest_s": ingest_s,
                     "state": job.state.value, "errors": len(job.errors),
                     "llm_calls": server.stats.count(Endpoint.CHAT)}
    finally:
        server.stop()
    if built["errors"] or built["state"] != "succeeded":
        sys.exit(f"the index build did not complete: {built}")
    MARKER.write_text(f"{wanted}\n{json.dumps(built)}\n")
    return built


def summary(values: list[float]) -> dict[str, float]:
    return {"p50": round(percentile(values, 50), 1), "p95": round(percentile(values, 95), 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=20,
                        help="sample questions whose paragraphs are indexed and asked")
    parser.add_argument("--rounds", type=int, default=3, help="times each question is asked")
    parser.add_argument("--latency-s", type=float, default=0.5,
                        help="server delay before the first byte of a reply")
    parser.add_argument("--batch-tokens", type=int, default=1,
                        help="words per batch of a streamed reply")
    parser.add_argument("--batch-latency-s", type=float, default=0.1,
                        help="server delay before each batch of a streamed reply")
    parser.add_argument("--rebuild", action="store_true", help="build the index again")
    args = parser.parse_args()
    records = sample_questions(args.questions)
    built = build(records, args.rebuild)
    questions = [str(r["question"]) for r in records]

    config = LlmServerConfig(latency_s=args.latency_s, stream_batch_tokens=args.batch_tokens,
                             stream_batch_latency_s=args.batch_latency_s)
    server = LlmTestServer(config).start_in_thread()
    plain_ms: list[float] = []
    passages_ms: list[float] = []
    first_ms: list[float] = []
    done_ms: list[float] = []
    words: list[int] = []
    mismatches: list[dict[str, Any]] = []
    degraded = 0
    done_mismatches = 0
    try:
        settings = Settings(data_dir=DATA_DIR, llm_model=server.config.model,
                            llm_base_url=server.base_url, llm_api_key="bench",
                            llm_cache=CacheMode.OFF).resolved()
        with local_client(settings=settings) as client:
            for q in questions[:2]:  # the embedder's load and the connections, untimed
                client.query(INDEX, q, method=METHOD)
                for _ in client.query(INDEX, q, method=METHOD, stream=True):
                    pass
            asked = [q for _ in range(args.rounds) for q in questions]
            for i, q in enumerate(asked):
                plain_answer: str | None = None
                final_answer: str | None = None
                deltas: list[str] = []
                for streamed in ((False, True) if i % 2 else (True, False)):
                    t0 = time.perf_counter()
                    if not streamed:
                        result = client.query(INDEX, q, method=METHOD)
                        plain_ms.append((time.perf_counter() - t0) * 1000)
                        plain_answer = result.answer
                        degraded += bool(result.degraded)
                        continue
                    first = passages = None
                    with client.query(INDEX, q, method=METHOD, stream=True) as stream:
                        for event in stream:
                            now = (time.perf_counter() - t0) * 1000
                            if event.type is QueryEventType.PASSAGES and passages is None:
                                passages = now
                            elif event.type is QueryEventType.ANSWER_DELTA:
                                first = now if first is None else first
                                deltas.append(event.text)
                            elif event.type in (QueryEventType.DONE, QueryEventType.DEGRADED):
                                done_ms.append(now)
                                degraded += event.type is QueryEventType.DEGRADED
                                assert event.result is not None
                                final_answer = event.result.answer
                    if passages is None or first is None:
                        sys.exit(f"no passages or answer.delta event for {q!r}")
                    passages_ms.append(passages)
                    first_ms.append(first)
                joined = "".join(deltas).strip()
                words.append(len(joined.split()))
                if joined != (plain_answer or "").strip():
                    mismatches.append({"question": q, "streamed": joined,
                                       "unstreamed": plain_answer})
                if joined != (final_answer or "").strip():
                    done_mismatches += 1
        stats = server.stats.as_dict()
    finally:
        server.stop()

    ratio_first = [f / p for f, p in zip(first_ms, plain_ms, strict=True)]
    ratio_passages = [s / p for s, p in zip(passages_ms, plain_ms, strict=True)]
    ratio_first_done = [f / d for f, d in zip(first_ms, done_ms, strict=True)]
    figures: dict[str, Any] = {
        "method": METHOD, "index": built, "questions": len(questions), "rounds": args.rounds,
        "queries_per_arm": len(plain_ms),
        "server": {"latency_s": args.latency_s, "stream_batch_tokens": args.batch_tokens,
                   "stream_batch_latency_s": args.batch_latency_s, "llm_cache": "off"},
        "unstreamed_ms": summary(plain_ms), "passages_event_ms": summary(passages_ms),
        "first_delta_ms": summary(first_ms), "done_ms": summary(done_ms),
        "ratio_first_delta_to_unstreamed_p50": round(
            percentile(first_ms, 50) / percentile(plain_ms, 50), 3),
        "ratio_passages_to_unstreamed_p50": round(
            percentile(passages_ms, 50) / percentile(plain_ms, 50), 3),
        "ratio_first_delta_to_done_p50": round(
            percentile(first_ms, 50) / percentile(done_ms, 50), 3),
        "median_paired_ratio": {
            "first_delta_to_unstreamed": round(statistics.median(ratio_first), 3),
            "passages_to_unstreamed": round(statistics.median(ratio_passages), 3),
            "first_delta_to_done": round(statistics.median(ratio_first_done), 3)},
        "paired_median_ms": {
            "first_delta_minus_unstreamed": round(statistics.median(
                f - p for f, p in zip(first_ms, plain_ms, strict=True)), 1),
            "done_minus_first_delta": round(statistics.median(
                d - f for d, f in zip(done_ms, first_ms, strict=True)), 1),
            "unstreamed_minus_passages": round(statistics.median(
                p - s for p, s in zip(plain_ms, passages_ms, strict=True)), 1)},
        "answer_words": {"mean": round(statistics.mean(words), 2), "max": max(words)},
        "mismatches": len(mismatches), "mismatch_examples": mismatches[:5],
        "mismatches_with_done_answer": done_mismatches,
        "degraded": degraded,
        "server_requests": stats["requests"], "server_streams": stats["streams"],
        "loadavg": Path("/proc/loadavg").read_text().split()[:3],
    }
    print(f"{len(questions)} questions x {args.rounds} rounds, indexrag, server latency "
          f"{args.latency_s}s + {args.batch_latency_s}s per {args.batch_tokens}-token batch")
    for name in ("unstreamed_ms", "passages_event_ms", "first_delta_ms", "done_ms"):
        s = figures[name]
        print(f"  {name:<20} p50 {s['p50']:>7.1f}  p95 {s['p95']:>7.1f}")
    print(f"  first delta / unstreamed (p50s) {figures['ratio_first_delta_to_unstreamed_p50']}, "
          f"passages / unstreamed {figures['ratio_passages_to_unstreamed_p50']}, "
          f"first delta / streamed done {figures['ratio_first_delta_to_done_p50']}")
    print(f"  paired medians (ms): {figures['paired_median_ms']}")
    print(f"  answer words {figures['answer_words']}, mismatches with the unstreamed answer "
          f"{len(mismatches)}, with the done event's {done_mismatches}, degraded {degraded}")
    print(f"wrote {write_result('stream_ttft', figures)}")


if __name__ == "__main__":
    main()
