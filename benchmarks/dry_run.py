"""How close an ingest dry run comes to the ingest it plans: IndexRAG on HotpotQA-100
against the local test server.

The corpus is split in two slices. Slice A goes into a new index: its dry run has no
history, so tokens are estimated from characters (0.25 tokens per prompt character,
256 completion tokens per call). Slice B follows into the same index: its dry run
estimates tokens from slice A's job (prompt tokens per prompt character, completion
tokens per document character, from the plan slice A's job recorded when submitted
and the tokens the server reported), and bounds stage 2 by the mentions slice A's
documents hold. Each dry run is followed by the real ingest, and the figures compare:
stage-1 calls planned vs sent (they must be equal), stage-2 calls sent vs the bound
(sent must not exceed it), and the signed error of each token estimate ((estimate -
actual) / actual). Both dry runs must send no request. For slice B, the same history
is also applied per call and per prompt character, the predictors it replaces.

Each ingest plans itself when submitted (the estimate its job record keeps): that
planning's time (the ``job_estimated`` log event) is set against the ingest's, and its
stage-1 calls against the job's.

The stand-in model's replies are not a real model's: token errors here measure the
estimator on this server's replies, not on a provider's.

    .venv/bin/python benchmarks/dry_run.py [--slice-a 50]
"""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import structlog
from common import OUT, SAMPLE, local_client, write_result
from structlog.testing import capture_logs

from hopindex.api.client import IngestPlanView
from hopindex.api.client.local import LocalClient
from hopindex.core.models import Job, LlmUsage
from hopindex.core.settings import Settings
from hopindex.readers import RawDocument, ReadResult
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
    return round((estimate - actual) / actual, 4)


def _phase(plan: IngestPlanView, name: str) -> dict[str, Any]:
    """One phase of the plan, as the client gives it (``hopindex ingest --dry-run
    --json`` prints the same)."""
    return next(p for p in plan.phases if p["phase"] == name)


def other_predictors(history: Job, plan: IngestPlanView, job: Job) -> dict[str, Any]:
    """Slice A's job applied to slice B the ways it could be: per call (the basis
    before), and completion tokens per prompt character."""
    before, stage1 = history.llm[STAGE1], _phase(plan, STAGE1)
    planned = history.estimate[STAGE1]
    used = job.llm.get(STAGE1, LlmUsage())
    calls, chars = stage1["calls"] or 0, stage1["prompt_chars"] or 0
    per_call = (round(calls * before.prompt_tokens / before.calls),
                round(calls * before.completion_tokens / before.calls))
    per_prompt_char = round(chars * before.completion_tokens / planned["prompt_chars"])
    return {"per_call": {"prompt_tokens": per_call[0],
                         "prompt_error": _error(per_call[0], used.prompt_tokens),
                         "completion_tokens": per_call[1],
                         "completion_error": _error(per_call[1], used.completion_tokens)},
            "completion_per_prompt_char": {
                "completion_tokens": per_prompt_char,
                "completion_error": _error(per_prompt_char, used.completion_tokens)}}


def compare(plan: IngestPlanView, job: Job, sent: dict[str, int],
            requests_during_plan: int) -> dict[str, Any]:
    stage1, stage2 = _phase(plan, STAGE1), _phase(plan, STAGE2)
    used1 = job.llm.get(STAGE1)
    used2 = job.llm.get(STAGE2)
    actual1 = (used1.prompt_tokens, used1.completion_tokens) if used1 else (0, 0)
    actual2 = (used2.prompt_tokens, used2.completion_tokens) if used2 else (0, 0)
    return {
        "documents": dict(plan.documents),
        "requests_during_dry_run": requests_during_plan,
        "stage1": {"planned_calls": stage1["calls"], "sent_calls": sent.get("stage1", 0),
                   "token_basis": stage1["token_basis"],
                   "prompt_tokens": {"estimate": stage1["prompt_tokens"], "actual": actual1[0],
                                     "error": _error(stage1["prompt_tokens"], actual1[0])},
                   "completion_tokens": {
                       "estimate": stage1["completion_tokens"], "actual": actual1[1],
                       "error": _error(stage1["completion_tokens"], actual1[1])},
                   # The character rule on the same prompts, for comparison with history.
                   "prompt_tokens_by_characters": round((stage1["prompt_chars"] or 0) * 0.25)},
        "stage2": {"planning": stage2["planning"], "bound": stage2["calls"],
                   "basis": stage2["basis"], "sent_calls": sent.get("stage2", 0),
                   "token_basis": stage2["token_basis"],
                   "prompt_tokens": {"bound_estimate": stage2["prompt_tokens"],
                                     "actual": actual2[0]},
                   "completion_tokens": {"bound_estimate": stage2["completion_tokens"],
                                         "actual": actual2[1]}},
    }


def submitted_estimate(job: Job, logs: list[dict[str, Any]], ingest_s: float
                       ) -> dict[str, Any]:
    """The plan the job recorded when submitted, against its calls, and its time."""
    planned_s = next(e["duration_s"] for e in logs if e["event"] == "job_estimated")
    used = job.llm.get(STAGE1, LlmUsage())
    return {"stage1_calls": {"estimate": job.estimate[STAGE1]["calls"],
                             "actual": used.calls},
            "stage2_planning": job.estimate[STAGE2]["planning"],
            "planning_s": planned_s, "ingest_s": round(ingest_s, 3),
            "planning_share_of_ingest": round(planned_s / ingest_s, 4)}


@contextmanager
def info_events() -> Iterator[list[dict[str, Any]]]:
    """The structlog events logged in the block, info ones included (the service logs
    warnings and up by default)."""
    config = structlog.get_config()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.INFO))
    try:
        with capture_logs() as logs:
            yield logs
    finally:
        structlog.configure(**config)


def plan_then_ingest(client: LocalClient, server: LlmTestServer, documents: list[RawDocument]
                     ) -> tuple[IngestPlanView, Job, dict[str, Any]]:
    read = ReadResult(documents=documents)
    before = server.stats.count(Endpoint.CHAT)
    plan = client.plan_read(INDEX, read, method="indexrag")
    during = server.stats.count(Endpoint.CHAT) - before
    kinds = dict(server.stats.by_kind)
    started = time.perf_counter()
    with info_events() as logs:
        job = client.ingest_read(INDEX, read, method="indexrag")
    ingest_s = time.perf_counter() - started
    sent = {k: v - kinds.get(k, 0) for k, v in server.stats.by_kind.items()}
    figures = compare(plan, job, sent, during)
    figures["submitted"] = submitted_estimate(job, logs, ingest_s)
    return plan, job, figures


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
        with local_client(settings=settings) as client:
            _, history, first = plan_then_ingest(client, server, documents[: args.slice_a])
            plan, job, second = plan_then_ingest(client, server, documents[args.slice_a:])
            second["stage1"]["other_predictors"] = other_predictors(history, plan, job)
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
        sub = run["submitted"]
        print(f"  at submit: stage1 estimate {sub['stage1_calls']['estimate']} actual "
              f"{sub['stage1_calls']['actual']}; planning {sub['planning_s']:.3f}s of the "
              f"ingest's {sub['ingest_s']:.1f}s ({sub['planning_share_of_ingest']:.2%})")
    others = second["stage1"]["other_predictors"]
    print(f"slice B per call: prompt error {others['per_call']['prompt_error']}, completion "
          f"error {others['per_call']['completion_error']}; completion per prompt "
          f"character: error {others['completion_per_prompt_char']['completion_error']}")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
