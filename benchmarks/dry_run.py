"""How close an ingest dry run comes to the ingest it plans: IndexRAG on HotpotQA-100
against the local test server.

The corpus is split in two slices. Slice A goes into a new index: its dry run has no
history, so tokens are estimated from characters (0.25 tokens per prompt character,
256 completion tokens per call). Slice B follows into the same index: its dry run
estimates tokens from slice A's job (tokens per call the server reported), and bounds
stage 2 by the mentions slice A's documents hold. Each dry run is followed by the real
ingest, and the figures compare: stage-1 calls planned vs sent (they must be equal),
stage-2 calls sent vs the bound (sent must not exceed it), and the signed error of
each token estimate ((estimate - actual) / actual). Both dry runs must send no request.

The stand-in model's replies are not a real model's: token errors here measure the
estimator on this server's replies, not on a provider's.

    .venv/bin/python benchmarks/dry_run.py [--slice-a 50]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import OUT, SAMPLE, write_result

from hopindex.api.service import Hopindex
from hopindex.core.models import Job
from hopindex.core.settings import Settings
from hopindex.readers import RawDocument
from hopindex.scheduler.dry_run import IngestPlan, PhasePlan
from hopindex.testing.llm_limits import Endpoint
from hopindex.testing.llm_server import LlmServerConfig, LlmTestServer

INDEX = "hotpot-dry-run"
STAGE1, STAGE2 = "indexrag.stage1", "indexrag.stage2"


def corpus() -> list[RawDocument]:
    titles: dict[str, list[str]] = json.loads((SAMPLE / "corpus.json").read_text())
    return [RawDocument(doc_id=None, title=title, text="".join(sentences), metadata={},
                        origin=title) for title, sentences in titles.items()]


def _error(estimate: int | None, actual: int) -> float | None:
    if estimate is None or actual == 0:
        return None
    return round((estimate - actual) / actual, 3)


def _phase(plan: IngestPlan, name: str) -> PhasePlan:
    return next(p for p in plan.phases if p.phase == name)


def compare(plan: IngestPlan, job: Job, sent: dict[str, int],
            requests_during_plan: int) -> dict[str, Any]:
    stage1, stage2 = _phase(plan, STAGE1), _phase(plan, STAGE2)
    used1 = job.llm.get(STAGE1)
    used2 = job.llm.get(STAGE2)
    actual1 = (used1.prompt_tokens, used1.completion_tokens) if used1 else (0, 0)
    actual2 = (used2.prompt_tokens, used2.completion_tokens) if used2 else (0, 0)
    return {
        "documents": plan.documents.as_dict(),
        "requests_during_dry_run": requests_during_plan,
        "stage1": {"planned_calls": stage1.calls, "sent_calls": sent.get("stage1", 0),
                   "token_basis": stage1.token_basis.value,
                   "prompt_tokens": {"estimate": stage1.prompt_tokens, "actual": actual1[0],
                                     "error": _error(stage1.prompt_tokens, actual1[0])},
                   "completion_tokens": {
                       "estimate": stage1.completion_tokens, "actual": actual1[1],
                       "error": _error(stage1.completion_tokens, actual1[1])},
                   # The character rule on the same prompts, for comparison with history.
                   "prompt_tokens_by_characters": round((stage1.prompt_chars or 0) * 0.25)},
        "stage2": {"planning": stage2.planning.value, "bound": stage2.calls,
                   "basis": stage2.basis, "sent_calls": sent.get("stage2", 0),
                   "token_basis": stage2.token_basis.value,
                   "prompt_tokens": {"bound_estimate": stage2.prompt_tokens,
                                     "actual": actual2[0]},
                   "completion_tokens": {"bound_estimate": stage2.completion_tokens,
                                         "actual": actual2[1]}},
    }


def plan_then_ingest(service: Hopindex, server: LlmTestServer,
                     documents: list[RawDocument]) -> dict[str, Any]:
    before = server.stats.count(Endpoint.CHAT)
    plan = service.plan_ingest_documents(INDEX, documents, method="indexrag")
    during = server.stats.count(Endpoint.CHAT) - before
    kinds = dict(server.stats.by_kind)
    job = service.ingest_documents(INDEX, documents, method="indexrag")
    sent = {k: v - kinds.get(k, 0) for k, v in server.stats.by_kind.items()}
    return compare(plan, job, sent, during)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--slice-a", type=int, default=50,
                        help="documents in the first slice (the rest are the second)")
    args = parser.parse_args()
    documents = corpus()
    data_dir = OUT / "dry-run-data"
    shutil.rmtree(data_dir, ignore_errors=True)
    server = LlmTestServer(LlmServerConfig()).start_in_thread()
    try:
        settings = Settings(data_dir=data_dir, llm_model=server.config.model,
                            llm_base_url=server.base_url, llm_api_key="bench",
                            embedder_url=f"openai://{server.config.embedding_model}"
                            ).resolved()
        with Hopindex(settings) as service:
            first = plan_then_ingest(service, server, documents[: args.slice_a])
            second = plan_then_ingest(service, server, documents[args.slice_a:])
    finally:
        server.stop()
    figures = {"corpus": "hotpotqa-100", "documents": len(documents),
               "slice_a": first, "slice_b_with_history": second}
    path = write_result("dry-run", figures)
    for name, run in (("slice A (no history)", first), ("slice B (history)", second)):
        s1, s2 = run["stage1"], run["stage2"]
        print(f"{name}: stage1 planned {s1['planned_calls']} sent {s1['sent_calls']}; "
              f"prompt tokens error {s1['prompt_tokens']['error']} "
              f"({s1['token_basis']}), completion error "
              f"{s1['completion_tokens']['error']}; stage2 sent {s2['sent_calls']} "
              f"bound {s2['bound']}; requests during dry run "
              f"{run['requests_during_dry_run']}")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
