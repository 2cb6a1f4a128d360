"""Fit each figure of several scale runs to the corpus size and flag what grows too fast.

    .venv/bin/python benchmarks/scale/fit.py benchmarks/out/scale-1000.json \
        benchmarks/out/scale-10000.json [--json out.json]

Each figure is fitted as ``figure ~ size ** slope``: least squares on log-log over every
size given, and, with three sizes or more, also between the two largest ("top"), since
a fixed cost at the smallest size flattens the overall slope of what grows fastest at
the largest. The flag reads the top slope when there is one. Two kinds:

- a **total** of the corpus (a wall time, the bytes of all messages, Redis's memory)
  should grow linearly: flagged super-linear above a slope of 1.15;
- a figure **per** document, message, task, job or query (bytes per document, per
  message, seconds per task, a process's peak memory, the job record, a query's
  latency) should stay flat: flagged when it grows more than 20 % per tenfold size
  (a slope above log10(1.2) = 0.079), the rule "more than 20 % from 10k to 100k"
  applied to whatever sizes were run.

Times under 0.1 s are shown but left out of the fit (a loaded machine's scheduling
moves them more than the corpus does); a time with fewer than two sizes above it is
not fitted.
Messages are compared per task name, not per step: a step's mean mixes task kinds
(an embed step's purge batches) in proportions that change with the size.

Runs of different modes (full, phases-only) are fitted apart; runs whose package
sources differ are fitted, with a warning, since they measure different code.
"""

from __future__ import annotations

import argparse
import json
import math
from collections import defaultdict
from pathlib import Path
from typing import Any

TOTAL_SLOPE_LIMIT = 1.15
NOISE_FLOOR_S = 0.1
PER_GROWTH_PER_DECADE = 1.2
PER_SLOPE_LIMIT = math.log10(PER_GROWTH_PER_DECADE)

Figures = dict[str, tuple[float, str]]


def _steps(record: dict[str, Any], out: Figures) -> None:
    for step in record.get("steps", []):
        name = step["step"]
        for key in ("wall_s", "work_s", "callback_s", "plan_s", "fan_out_s", "task_s"):
            if key in step:
                out[f"step {name}: {key}"] = (float(step[key]), "total")
        tasks = step.get("tasks_run", step.get("tasks", 0))
        seconds = step.get("task_s", step.get("work_s"))
        if tasks and seconds is not None and not name.startswith("embed:"):
            out[f"step {name}: s per task"] = (float(seconds) / tasks, "per")
        if "record_bytes" in step:
            out[f"step {name}: fan-out record bytes"] = (float(step["record_bytes"]), "total")
            out[f"step {name}: bytes per task record"] = (
                float(step["task_record_bytes_mean"]), "per")


def figures_of(record: dict[str, Any]) -> Figures:
    """Every figure of one run's JSON, with its kind."""
    out: Figures = {}
    for key in ("ingest_wall_s", "read_s", "submit_s"):
        if key in record:
            out[key] = (float(record[key]), "total")
    out["corpus generation s"] = (float(record["corpus"]["seconds"]), "total")
    _steps(record, out)
    broker = record.get("broker", {})
    if broker.get("job_messages"):
        out["job messages"] = (float(broker["job_messages"]), "total")
        out["job wire bytes"] = (float(broker["job_wire_bytes"]), "total")
        out["wire bytes per message"] = (broker["job_wire_bytes"] / broker["job_messages"], "per")
        for task, stats in broker.get("by_task", {}).items():
            out[f"{task}: wire bytes per message"] = (float(stats["wire_bytes_mean"]), "per")
    if "redis_net_input_bytes" in broker:
        out["Redis net input bytes (all clients)"] = (float(broker["redis_net_input_bytes"]),
                                                      "total")
    memory = record.get("redis_memory", {})
    if memory:
        out["Redis bytes per document (MEMORY USAGE)"] = (float(memory["bytes_per_document"]),
                                                          "per")
        for name, family in list(memory["families"].items())[:12]:
            out[f"Redis {name} bytes per document"] = (float(family["bytes_per_document"]),
                                                       "per")
        if "used_memory_peak_delta_per_document" in memory:
            out["Redis used_memory peak per document"] = (
                float(memory["used_memory_peak_delta_per_document"]), "per")
    watch = record.get("watch", {})
    if watch.get("fan_out_records_bytes"):
        out["fan-out records bytes (all steps)"] = (float(watch["fan_out_records_bytes"]),
                                                    "total")
        out["job record peak bytes"] = (float(watch["job_record_peak_bytes"]), "per")
    job = record.get("job", {})
    if job.get("record_bytes_stored") is not None:
        out["job record bytes at end"] = (float(job["record_bytes_stored"]), "per")
    for label, cli in record.get("jobs_cli", {}).items():
        out[f"`hopindex jobs ID` ({label}) bytes"] = (float(cli["bytes"]), "per")
        out[f"`hopindex jobs ID` ({label}) s"] = (float(cli["seconds"]), "per")
    queries = record.get("queries", {})
    for key in ("p50_ms", "p95_ms"):
        if key in queries:
            out[f"query {key}"] = (float(queries[key]), "per")
    for name, tree in record.get("rss", {}).items():
        out[f"peak RSS MB: {name}"] = (float(tree["peak_rss_mb"]), "per")
    return out


def slope(points: list[tuple[int, float]]) -> float | None:
    """Least-squares slope of log(value) on log(size); None without two positive sizes."""
    usable = [(math.log(s), math.log(v)) for s, v in points if s > 0 and v > 0]
    if len({x for x, _ in usable}) < 2:
        return None
    mx = sum(x for x, _ in usable) / len(usable)
    my = sum(y for _, y in usable) / len(usable)
    num = sum((x - mx) * (y - my) for x, y in usable)
    den = sum((x - mx) ** 2 for x, _ in usable)
    return num / den


def is_seconds(name: str) -> bool:
    return name.endswith(("_s", " s", "s per task", "_ms"))


def flag(kind: str, fitted: float | None) -> str:
    """The mark of a fitted slope: super-linear or growing, else nothing."""
    if fitted is None:
        return ""
    if kind == "total" and fitted > TOTAL_SLOPE_LIMIT:
        return "**super-linear**"
    if kind == "per" and fitted > PER_SLOPE_LIMIT:
        return f"**grows {PER_GROWTH_PER_DECADE ** (fitted / PER_SLOPE_LIMIT) - 1:.0%}/10x**"
    return ""


def fitted_points(name: str, sizes: list[int], values: list[float | None]
                  ) -> list[tuple[int, float]]:
    """The (size, value) pairs a figure is fitted on: times below the noise floor out."""
    floor = NOISE_FLOOR_S * (1000 if name.endswith("_ms") else 1) if is_seconds(name) else 0
    return [(s, v) for s, v in zip(sizes, values, strict=True) if v is not None and v >= floor]


def _cell(value: float | None) -> str:
    if value is None:
        return "—"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}"


def table(records: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    """The markdown table of one mode's runs, and its rows as data."""
    records = sorted(records, key=lambda r: r["size"])
    sizes = [r["size"] for r in records]
    per_run = [figures_of(r) for r in records]
    names = list(dict.fromkeys(name for figures in per_run for name in figures))
    lines = ["| figure | kind | " + " | ".join(f"{s:,}" for s in sizes)
             + " | slope | top slope | flag |",
             "|---|---|" + "---:|" * len(sizes) + "---:|---:|---|"]
    rows = []
    for name in names:
        kind = next(f[name][1] for f in per_run if name in f)
        values = [f[name][0] if name in f else None for f in per_run]
        points = fitted_points(name, sizes, values)
        fitted = slope(points)
        top = slope(points[-2:]) if len(points) >= 3 else None
        marked = flag(kind, top if top is not None else fitted)
        rows.append({"figure": name, "kind": kind, "values": dict(zip(sizes, values, strict=True)),
                     "slope": fitted, "top_slope": top, "flag": marked.strip("*")})
        lines.append(f"| {name} | {kind} | " + " | ".join(_cell(v) for v in values)
                     + f" | {_cell(fitted)} | {_cell(top)} | {marked} |")
    return "\n".join(lines), rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="scale-SIZE.json files")
    parser.add_argument("--json", type=Path, help="also write the fitted rows here")
    args = parser.parse_args()
    by_mode: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for path in args.runs:
        record = json.loads(path.read_text())
        if not {"mode", "size"} <= record.keys():  # not a run (a table written with --json)
            continue
        by_mode[record["mode"]].append(record)
    fitted: dict[str, list[dict[str, Any]]] = {}
    for mode, records in sorted(by_mode.items()):
        versions = {r.get("code", {}).get("sources_sha256") for r in records}
        sizes = ", ".join(f"{r['size']:,}" for r in sorted(records, key=lambda r: r["size"]))
        print(f"\n### {mode}: sizes {sizes}\n")
        if len(versions) > 1:
            hashes = ", ".join(sorted(map(str, versions)))
            print(f"Warning: the runs measured different sources ({hashes}); a slope may be "
                  "the code's change, not the size's.\n")
        text, rows = table(records)
        print(text)
        fitted[mode] = rows
    if args.json:
        args.json.write_text(json.dumps(fitted, indent=2))


if __name__ == "__main__":
    main()
