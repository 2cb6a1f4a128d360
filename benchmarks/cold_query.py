"""A cold ``hopindex query`` on the bundled sample: wall time of a fresh process, and
where it goes.

The sample index (HotpotQA-100, 994 paragraphs, ``extractive``, index ``sample`` as
``hopindex quickstart`` builds it) is ingested once under ``benchmarks/out/cold-query``
and copied into one data dir per arm, so every arm reads the same index:

- ``export``: this tree, with the ONNX export that ``hopindex prepare-queries`` (or
  ``make demo``) leaves in the data dir; the export itself is timed once (its one-off
  cost, ``prepare_s``);
- ``no-export``: this tree, data dir without it: the torch model loads, reported apart;
- ``--arm NAME=TREE``: another source tree run on the same venv (``PYTHONPATH=TREE``),
  e.g. the tree before this change (``git archive HEAD hopindex | tar -x -C TREE``).

Each run is a new process, ``hopindex query --json`` on one of the sample questions
(they rotate), the arms alternating round by round so machine noise hits each alike.
Per run: wall time, and from the JSON the query's ``latency_s`` and ``embedder_load_s``
(a tree without that field reports its load inside ``latency_s``); right after it, a
bare interpreter (``python -c pass``) and one importing the CLI and the service are
timed, so that they meet the same machine. The split of the medians: interpreter
start, imports (the importing process minus the bare one), embedder load, the query,
and the rest (settings, opening the engines, the index's status, output, exit) as what
is left.

    .venv/bin/python benchmarks/cold_query.py [--rounds 7] [--arm before=/tmp/before-tree]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import OUT, ROOT, SAMPLE, write_result

INDEX = "sample"
BASE = OUT / "cold-query"
LAUNCH = "import sys; from hopindex.api.cli import main; sys.exit(main())"
# -P: the working directory (this checkout) must not come before PYTHONPATH's tree.
PYTHON = [sys.executable, "-P"]
IMPORTS = "import hopindex.api.cli, hopindex.api.service"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--arm", action="append", default=[], metavar="NAME=TREE",
                        help="another source tree to run (repeatable)")
    args = parser.parse_args()
    questions = [q["question"] for q in json.loads((SAMPLE / "questions.json").read_text())]
    built = build_sample()
    arms: dict[str, tuple[Path, Path]] = {}  # name → (data dir, source tree)
    arms["export"] = (copy_of(built, "export"), ROOT)
    prepare_s = prepare(arms["export"][0])
    arms["no-export"] = (copy_of(built, "no-export"), ROOT)
    for spec in args.arm:
        name, _, tree = spec.partition("=")
        arms[name] = (copy_of(built, name), Path(tree).resolve())

    runs: dict[str, list[dict[str, float]]] = {name: [] for name in arms}
    load_before = os.getloadavg()[0]
    for round_ in range(args.rounds):
        names = list(arms)
        names = names[round_ % len(names):] + names[:round_ % len(names)]
        for name in names:
            data_dir, tree = arms[name]
            measured = run_query(data_dir, tree, questions[round_ % len(questions)])
            runs[name].append({**measured, **startup(tree)})
    load_after = os.getloadavg()[0]

    figures: dict[str, Any] = {"rounds": args.rounds, "prepare_s": round(prepare_s, 2),
                               "load_average": [round(load_before, 2), round(load_after, 2)],
                               "arms": {}}
    print(f"export made once in {prepare_s:.1f} s; 1-min load {load_before:.1f} → "
          f"{load_after:.1f}")
    print(f"{'arm':<12}{'wall s':>8}{'python':>8}{'imports':>9}{'load':>7}{'query':>8}"
          f"{'other':>7}   (medians of {args.rounds} cold processes)")
    for name, measured in runs.items():
        split = summarize(measured)
        figures["arms"][name] = {"split": split, "runs": measured}
        print(f"{name:<12}{split['wall_s']:>8.2f}{split['python_s']:>8.2f}"
              f"{split['imports_s']:>9.2f}{split['embedder_load_s']:>7.2f}"
              f"{split['query_s']:>8.3f}{split['other_s']:>7.2f}")
    print(f"written {write_result('cold-query', figures)}")


def build_sample() -> Path:
    """The sample ingested once (as ``hopindex quickstart`` ingests it); reused."""
    data_dir = BASE / "built"
    if (data_dir / ".complete").exists():
        return data_dir
    shutil.rmtree(data_dir, ignore_errors=True)
    started = time.perf_counter()
    subprocess.run([*PYTHON, "-c", LAUNCH, "ingest", "--index", INDEX, "--method",
                    "extractive", "--quiet", str(SAMPLE / "corpus.json")],
                   check=True, cwd=ROOT, env=_env(data_dir, ROOT), stdout=subprocess.DEVNULL)
    (data_dir / ".complete").write_text(f"{time.perf_counter() - started:.1f}\n")
    return data_dir


def copy_of(built: Path, name: str) -> Path:
    """A copy of the built data dir for one arm. ``cp`` keeps the engines' sparse files
    sparse: Qdrant Edge preallocates its WAL (2 x 32 MB, a few MB used), and a copy
    writing the zeros out made each later shard open ~0.1 s slower."""
    target = BASE / f"arm-{name}"
    shutil.rmtree(target, ignore_errors=True)
    subprocess.run(["cp", "-a", "--sparse=always", str(built), str(target)], check=True)
    shutil.rmtree(target / "models", ignore_errors=True)
    (target / ".complete").unlink(missing_ok=True)
    return target


def prepare(data_dir: Path) -> float:
    """``hopindex prepare-queries`` in the data dir: seconds (the export, once)."""
    started = time.perf_counter()
    subprocess.run([*PYTHON, "-c", LAUNCH, "prepare-queries", "--json"], check=True,
                   cwd=ROOT, env=_env(data_dir, ROOT), stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def run_query(data_dir: Path, tree: Path, question: str) -> dict[str, float]:
    started = time.perf_counter()
    done = subprocess.run([*PYTHON, "-c", LAUNCH, "query", "--index", INDEX, "--json",
                           question], cwd=ROOT, env=_env(data_dir, tree), capture_output=True,
                          text=True, check=False)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"query failed in {data_dir} ({tree}): {done.stderr[-2000:]}")
    result = json.loads(done.stdout)
    return {"wall_s": wall, "latency_s": float(result["latency_s"]),
            "embedder_load_s": float(result.get("embedder_load_s", 0.0)),
            "reports_load": float("embedder_load_s" in result)}


def startup(tree: Path) -> dict[str, float]:
    """Seconds of a bare interpreter and of one importing the CLI and the service, run
    right after the query so that both meet the same machine."""
    env = _env(BASE / "startup", tree)
    seconds = {}
    for name, code in (("python_s", "pass"), ("imported_s", IMPORTS)):
        started = time.perf_counter()
        subprocess.run([*PYTHON, "-c", code], check=True, cwd=ROOT, env=env)
        seconds[name] = time.perf_counter() - started
    return seconds


def summarize(runs: list[dict[str, float]]) -> dict[str, float]:
    wall = statistics.median(r["wall_s"] for r in runs)
    load = statistics.median(r["embedder_load_s"] for r in runs)
    query = statistics.median(r["latency_s"] for r in runs)
    python = statistics.median(r["python_s"] for r in runs)
    imports = max(0.0, statistics.median(r["imported_s"] for r in runs) - python)
    return {"wall_s": round(wall, 3), "wall_min_s": round(min(r["wall_s"] for r in runs), 3),
            "wall_max_s": round(max(r["wall_s"] for r in runs), 3),
            "python_s": round(python, 3), "imports_s": round(imports, 3),
            "embedder_load_s": round(load, 3), "query_s": round(query, 3),
            "other_s": round(max(0.0, wall - python - imports - load - query), 3),
            "load_reported_apart": all(r["reports_load"] for r in runs)}


def _env(data_dir: Path, tree: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOPINDEX_")}
    env.update(HOPINDEX_DATA_DIR=str(data_dir), PYTHONPATH=str(tree))
    return env


if __name__ == "__main__":
    main()
