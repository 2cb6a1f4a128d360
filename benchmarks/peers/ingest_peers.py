"""hopindex's embedded ingest against LlamaIndex's, side by side on the 2Wiki corpus.

The peer is LlamaIndex's ``IngestionPipeline`` (SentenceSplitter 512/50 ->
HuggingFaceEmbedding -> Qdrant in qdrant-client's local mode) with the same
all-MiniLM-L6-v2 weights on CPU: it builds a dense index only. hopindex builds its
default, ``extractive``: spaCy analysis, passages, bridges, tantivy BM25 and Qdrant
Edge. Each ingest is a fresh child process (imports and model loads included),
the arms alternated A B A B in one run; CPU is the child's user + system time
(``wait4``), peak RSS its ``VmHWM``. Reported: medians per arm and their ratios
to the peer's, whole process and the ingest call alone. Target: CPU <= 1.0x,
peak RSS <= 1.1x.

    make bench-peers     # builds benchmarks/peers/.venv, then runs this
    .venv/bin/python benchmarks/peers/ingest_peers.py [--sizes 1500 6119] [--pairs 3 2]
        [--arm NAME=SOURCE_ROOT[,VAR=VALUE...]]   # hopindex variants (ablations)
        [--peer-arm NAME=VAR=VALUE[,VAR=VALUE...]]   # LlamaIndex variants

An ``--arm`` runs the hopindex package found under SOURCE_ROOT (a copy of the tree
without the change to measure, say), with extra ``HOPINDEX_*`` variables. An arm
whose ``HOPINDEX_EMBEDDER_URL`` is ``onnx://`` exports its model once, before the
rounds, into a cache every run shares: the export is once per machine, not per ingest.
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from common import OUT, ROOT, WIKI_CORPUS, write_result

HERE = Path(__file__).resolve().parent
PEER_PYTHON = HERE / ".venv" / "bin" / "python"
HOPINDEX_PYTHON = ROOT / ".venv" / "bin" / "python"
PEER = "llamaindex"
ONNX_CACHE = OUT / "peers" / "onnx-cache"


@dataclass(frozen=True)
class Arm:
    name: str
    python: Path
    script: Path
    source_root: Path | None = None
    env: dict[str, str] = field(default_factory=dict)


def parse_arm(spec: str) -> Arm:
    """``NAME=SOURCE_ROOT[,VAR=VALUE...]``; an empty SOURCE_ROOT is this tree."""
    name, _, rest = spec.partition("=")
    root, *assignments = rest.split(",")
    env = dict(a.split("=", 1) for a in assignments if a)
    return Arm(name, HOPINDEX_PYTHON, HERE / "hopindex_side.py",
               Path(root).resolve() if root else None, env)


def run_once(arm: Arm, size: int, digest: Path | None) -> dict[str, Any]:
    data_dir = OUT / "peers" / f"{arm.name}-{size}"
    shutil.rmtree(data_dir, ignore_errors=True)
    if arm.script.name == "hopindex_side.py":
        # An ONNX export is made once per machine, not per ingest: the runs share a cache.
        (data_dir / "models").mkdir(parents=True)
        (data_dir / "models" / "onnx").symlink_to(ONNX_CACHE, target_is_directory=True)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", **arm.env}
    if arm.source_root is not None:
        env["PYTHONPATH"] = str(arm.source_root)
    command = [str(arm.python), str(arm.script), "--corpus", str(WIKI_CORPUS),
               "--limit", str(size), "--data-dir", str(data_dir)]
    if digest is not None:
        command += ["--digest", str(digest)]
    stderr = OUT / "peers" / f"{arm.name}-{size}.stderr"
    load_1m = os.getloadavg()[0]  # how busy the shared machine was
    started = time.perf_counter()
    with stderr.open("w") as err:
        child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=err, env=env,
                                 cwd=ROOT)
        assert child.stdout is not None
        output = child.stdout.read()
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
    wall_s = time.perf_counter() - started
    shutil.rmtree(data_dir, ignore_errors=True)
    if child.returncode != 0:
        sys.exit(f"{arm.name} failed ({child.returncode}); see {stderr}")
    figures: dict[str, Any] = json.loads(output.decode().strip().splitlines()[-1])
    return {**figures, "cpu_s": usage.ru_utime + usage.ru_stime, "wall_s": wall_s,
            # The child's own peak; ru_maxrss of wait4 is the largest of its tree.
            "peak_rss_mb": figures["vm_hwm_mb"], "tree_max_rss_mb": usage.ru_maxrss / 1024,
            "load_1m": load_1m}


def medians(runs: list[dict[str, Any]]) -> dict[str, float]:
    keys = ("cpu_s", "wall_s", "peak_rss_mb", "ingest_cpu_s", "ingest_wall_s")
    return {k: statistics.median(r[k] for r in runs) for k in keys}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1500, 6119])
    parser.add_argument("--pairs", type=int, nargs="+", default=[3, 2],
                        help="rounds per size (each round runs every arm once)")
    parser.add_argument("--arm", action="append", default=[], type=parse_arm,
                        help="a hopindex arm NAME=SOURCE_ROOT[,VAR=VALUE...] (default: "
                             "this tree as 'hopindex')")
    parser.add_argument("--peer-arm", action="append", default=[],
                        help="another LlamaIndex arm NAME=VAR=VALUE[,VAR=VALUE...] (the "
                             "peer with a setting an ablation gives hopindex, say)")
    parser.add_argument("--no-peer", action="store_true",
                        help="leave out the default LlamaIndex arm (--peer-arm ones stay)")
    parser.add_argument("--rounds-of", action="append", default=[],
                        help="NAME=N: arm NAME runs in the first N rounds only (an "
                             "ablation arm, when time is short)")
    parser.add_argument("--digests", type=Path,
                        help="folder for each hopindex arm's unit digests (first round)")
    parser.add_argument("--name", default="ingest_peers", help="result file name")
    args = parser.parse_args()
    if len(args.pairs) != len(args.sizes):
        parser.error("give one --pairs count per size")
    if (args.peer_arm or not args.no_peer) and not PEER_PYTHON.exists():
        sys.exit(f"{PEER_PYTHON} is missing: run `make bench-peers`")
    arms: list[Arm] = args.arm or [parse_arm("hopindex=")]
    if args.peer_arm or not args.no_peer:
        peers = [] if args.no_peer else [Arm(PEER, PEER_PYTHON, HERE / "llamaindex_side.py")]
        for spec in args.peer_arm:
            name, _, assignments = spec.partition("=")
            env = dict(a.split("=", 1) for a in assignments.split(",") if a)
            peers.append(Arm(name, PEER_PYTHON, HERE / "llamaindex_side.py", env=env))
        arms[:0] = peers
    limits = {name: int(n) for name, n in (spec.split("=", 1) for spec in args.rounds_of)}
    (OUT / "peers").mkdir(parents=True, exist_ok=True)
    if args.digests:
        args.digests.mkdir(parents=True, exist_ok=True)

    ONNX_CACHE.mkdir(parents=True, exist_ok=True)
    for arm in arms:
        if arm.env.get("HOPINDEX_EMBEDDER_URL", "").startswith("onnx://"):
            run_once(arm, 10, None)  # the one-time export, kept out of the figures
    results: dict[str, Any] = {}
    for size, rounds in zip(args.sizes, args.pairs, strict=True):
        runs: dict[str, list[dict[str, Any]]] = {a.name: [] for a in arms}
        for round_number in range(rounds):
            for arm in arms:
                if round_number >= limits.get(arm.name, rounds):
                    continue
                digest = (args.digests / f"{arm.name}-{size}.json"
                          if args.digests and round_number == 0
                          and arm.script.name == "hopindex_side.py" else None)
                run = run_once(arm, size, digest)
                runs[arm.name].append(run)
                print(f"{size} round {round_number + 1} {arm.name}: cpu {run['cpu_s']:.1f}s "
                      f"(ingest {run['ingest_cpu_s']:.1f}s), wall {run['wall_s']:.1f}s, "
                      f"peak RSS {run['peak_rss_mb']:.0f} MB, units {run['units']}, "
                      f"load {run['load_1m']:.1f}",
                      flush=True)
        summary = {name: medians(r) for name, r in runs.items()}
        results[str(size)] = {"runs": runs, "medians": summary}
        print(table(size, {name: len(r) for name, r in runs.items()}, summary))
    path = write_result(args.name, {"corpus": "2wiki", "arms": [
        {"name": a.name, "source_root": str(a.source_root or ""), "env": a.env} for a in arms],
        "sizes": results})
    print(f"wrote {path}")


def table(size: int, runs: dict[str, int], summary: dict[str, dict[str, float]]) -> str:
    peer = summary.get(PEER)
    lines = [f"\n{size} passages, medians" + (f" (ratio to {PEER})" if peer else ""),
             "| arm | runs | CPU s | wall s | peak RSS MB | ingest CPU s | ingest wall s |",
             "|---|---|---|---|---|---|---|"]
    for name, m in summary.items():
        cells = []
        for key, fmt in (("cpu_s", ".1f"), ("wall_s", ".1f"), ("peak_rss_mb", ".0f"),
                         ("ingest_cpu_s", ".1f"), ("ingest_wall_s", ".1f")):
            cell = format(m[key], fmt)
            if peer and name != PEER:
                cell += f" ({m[key] / peer[key]:.2f}x)"
            cells.append(cell)
        lines.append(f"| {name} | {runs[name]} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
