"""Batch mode against synchronous calls: HotpotQA-100 built both ways, side by side.

For each LLM index method named (``--methods``, default indexrag and sirerag), the
bundled HotpotQA-100 corpus is built twice in this process against the LLM test
server, once with synchronous calls and once in batch mode (``llm_mode=batch``: every
phase's calls go to the test server's Batch API, which completes a batch on its first
read; the job follows its batches every ``--poll-s``). Prices are set (2 and 8 per
million prompt and completion tokens) so the cost of each phase can be compared.

Reported per method: whether the two unit sets (kind and text of every unit) are
equal, each phase's calls, tokens and cost both ways, the batches each phase needed,
and the wall time of each build. The batch build's extra time is its rounds of
batches, not a provider's queue: a real Batch API takes minutes to hours.

    .venv/bin/python benchmarks/batch_mode.py [--methods indexrag,sirerag] [--poll-s 0.05]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import SAMPLE, local_client, write_result

from hopindex.core.models import Job
from hopindex.core.settings import Settings
from hopindex.readers import RawDocument, ReadResult
from hopindex.testing.llm_limits import LlmServerConfig
from hopindex.testing.llm_server import LlmTestServer

INDEX = "hotpot"
PRICES = {"llm_price_input_per_mtok": 2.0, "llm_price_output_per_mtok": 8.0}


def _documents() -> list[RawDocument]:
    corpus: dict[str, list[str]] = json.loads((SAMPLE / "corpus.json").read_text())
    return [RawDocument(doc_id=None, title=title, text="".join(parts), metadata={},
                        origin=f"corpus.json[{i}]")
            for i, (title, parts) in enumerate(corpus.items())]


def _build(data_dir: Path, server: LlmTestServer, method: str, **overrides: Any
           ) -> tuple[Job, dict[str, tuple[str, str]], float]:
    settings = Settings(data_dir=data_dir, llm_model=server.config.model,
                        llm_base_url=server.base_url, llm_api_key="bench",
                        embedder_url=f"openai://{server.config.embedding_model}",
                        **PRICES, **overrides).resolved()  # type: ignore[arg-type]
    started = time.perf_counter()
    with local_client(settings=settings) as client:
        job = client.ingest_read(INDEX, ReadResult(documents=_documents()), method=method)
        elapsed = time.perf_counter() - started
        state = client.service.backends.state
        doc_ids = sorted(state.document_hashes(INDEX))
        units = {u.unit_id: (u.kind.value, u.text)
                 for u in state.units_of_documents(INDEX, doc_ids)}
    return job, units, elapsed


def _phases(job: Job) -> dict[str, dict[str, Any]]:
    return {phase: {"calls": u.calls, "prompt_tokens": u.prompt_tokens,
                    "completion_tokens": u.completion_tokens, "cost": round(u.cost or 0.0, 6),
                    "batches": sum(1 for b in job.provider_batches if b.phase == phase)}
            for phase, u in sorted(job.llm.items())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--methods", default="indexrag,sirerag")
    parser.add_argument("--poll-s", type=float, default=0.05)
    args = parser.parse_args()
    results: dict[str, Any] = {}
    work = Path(tempfile.mkdtemp(prefix="hopindex-batch-bench-"))
    server = LlmTestServer(LlmServerConfig())
    server.start_in_thread()
    try:
        for method in args.methods.split(","):
            sync_job, sync_units, sync_s = _build(work / f"{method}-sync", server, method)
            server.reset()
            batch_job, batch_units, batch_s = _build(
                work / f"{method}-batch", server, method, llm_mode="batch",
                llm_batch_min_items=1, llm_batch_poll_interval_s=args.poll_s)
            lines = server.stats.submissions
            results[method] = {
                "units": len(sync_units), "same_units": sync_units == batch_units,
                "sync": {"state": sync_job.state.value, "seconds": round(sync_s, 1),
                         "phases": _phases(sync_job)},
                "batch": {"state": batch_job.state.value, "seconds": round(batch_s, 1),
                          "phases": _phases(batch_job),
                          "lines": len(lines), "lines_sent_twice": sum(
                              1 for n in lines.values() if n > 1)},
            }
            server.reset()
            _print(method, results[method])
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    path = write_result("batch_mode", {"corpus": "hotpotqa-100", "prices": PRICES,
                                       "methods": results})
    print(f"written to {path}")


def _print(method: str, figures: dict[str, Any]) -> None:
    print(f"{method}: {figures['units']} units, same units: {figures['same_units']}; "
          f"sync {figures['sync']['seconds']} s, batch {figures['batch']['seconds']} s")
    for phase, sync in figures["sync"]["phases"].items():
        batch = figures["batch"]["phases"].get(phase, {})
        print(f"  {phase}: calls {sync['calls']} / {batch.get('calls')}, cost "
              f"{sync['cost']} / {batch.get('cost')}, batches {batch.get('batches')}")


if __name__ == "__main__":
    main()
