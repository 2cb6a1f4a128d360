"""``hopindex mcp`` on stdio as an agent's host starts it: a new process with settings in
its environment, driven by the official MCP SDK's client. Per session: the start-up
(spawn to the end of the protocol's handshake), ``tools/list``, the first ``search``
sent right after, and a second one.

The sample index is the one ``hopindex quickstart`` builds (HotpotQA-100, 994
paragraphs, ``extractive``), ingested once and copied per arm (benchmarks/cold_query.py
builds and copies it):

- ``export``: the data dir as ``make demo`` leaves it, with the ONNX export of the query
  model (``hopindex prepare-queries``);
- ``no-export``: without it, so the first query waits for the torch model.

The arms alternate session by session so machine noise meets each alike; the sample
questions rotate, and each search's gold passages in the top 5 are counted.

    .venv/bin/python benchmarks/mcp_stdio.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cold_query import INDEX, _env, build_sample, copy_of, prepare
from common import ROOT, SAMPLE, write_result
from mcp import Client
from mcp.client.stdio import StdioServerParameters

LAUNCH = "import sys; from hopindex.api.cli import main; sys.exit(main())"


async def session(data_dir: Path, question: str, gold: set[str]) -> dict[str, float]:
    params = StdioServerParameters(command=sys.executable, args=["-P", "-c", LAUNCH, "mcp"],
                                   env=_env(data_dir, ROOT), cwd=str(ROOT))
    started = time.perf_counter()
    async with Client(params) as client:
        ready = time.perf_counter()
        await client.list_tools()
        listed = time.perf_counter()
        first = await client.call_tool("search", {"question": question, "index": INDEX,
                                                  "k": 5})
        searched = time.perf_counter()
        await client.call_tool("search", {"question": question + " Explain.",
                                          "index": INDEX, "k": 5})
        again = time.perf_counter()
    if first.is_error:
        sys.exit(f"search failed: {first.content}")
    result: dict[str, Any] = first.structured_content  # type: ignore[assignment]
    titles = {p["title"] for p in result["passages"]}
    return {"start_s": ready - started, "list_s": listed - ready,
            "first_search_s": searched - listed, "second_search_s": again - searched,
            "query_latency_s": float(result["latency_s"]), "gold_in_top5": len(gold & titles)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    questions = json.loads((SAMPLE / "questions.json").read_text())
    built = build_sample()
    arms = {"export": copy_of(built, "mcp-export"), "no-export": copy_of(built, "mcp-plain")}
    prepare_s = prepare(arms["export"])
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in arms}
    for round_ in range(args.rounds):
        item = questions[round_ % len(questions)]
        gold = {title for title, _ in item["supporting_facts"]}
        names = list(arms) if round_ % 2 == 0 else list(reversed(arms))
        for name in names:
            runs[name].append(asyncio.run(session(arms[name], item["question"], gold)))

    figures: dict[str, Any] = {"rounds": args.rounds, "prepare_s": round(prepare_s, 2),
                               "arms": {}}
    print(f"{'arm':<11}{'start s':>9}{'list s':>8}{'1st search s':>14}{'2nd search s':>14}"
          f"{'query s':>9}{'gold@5':>8}   (medians of {args.rounds} sessions)")
    for name, measured in runs.items():
        median = {key: round(statistics.median(r[key] for r in measured), 3)
                  for key in measured[0]}
        worst_first = round(max(r["first_search_s"] for r in measured), 3)
        figures["arms"][name] = {"median": median, "worst_first_search_s": worst_first,
                                 "runs": measured}
        print(f"{name:<11}{median['start_s']:>9.2f}{median['list_s']:>8.3f}"
              f"{median['first_search_s']:>14.3f}{median['second_search_s']:>14.3f}"
              f"{median['query_latency_s']:>9.3f}{median['gold_in_top5']:>8.1f}"
              f"   worst 1st search {worst_first:.3f} s")
    print(f"written {write_result('mcp-stdio', figures)}")


if __name__ == "__main__":
    main()
