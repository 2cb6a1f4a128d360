"""SiReRAG's clustering step over the 2Wiki corpus's 6,119 passages.

The passages ("title\\ntext") are embedded with the default embedder, the one the
other benchmarks use, in this process. The clustering then runs in a fresh child
process (this script with ``--child``), so that its seconds and peak RSS are its own,
without the embedding model:

- warm-up: 40 random nodes, once, to pay numba's compilation (UMAP's JIT), reported
  apart from the levels;
- level 0: every passage, tokens estimated as characters / 4 (the LLM client's
  estimate), the default policy (10,000-token cap);
- level 1: one node per level-0 cluster standing in for its summary: the mean of its
  members' embeddings (re-normalised), as many tokens as its members' mean.

Peak RSS is the child's high-water mark after each step, read from its own memory map
(``VmHWM``): ``ru_maxrss`` carries the parent's, model included, over the fork and
exec that start the child.

    .venv/bin/python benchmarks/sirerag_clustering.py [--limit N] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import OUT, WIKI_CORPUS, high_water_mb, peak_rss_mb, read_json, write_result

from hopindex.backends.llm.client import CHARS_PER_TOKEN
from hopindex.backends.registry import open_embedder
from hopindex.core.settings import Settings
from hopindex.methods.sirerag.clustering import Cluster, ClusterPolicy, cluster_nodes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=0, help="only the first N passages")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        args.child.with_suffix(".json").write_text(
            json.dumps(_cluster_levels(args.child, args.seed)))
        return
    corpus = read_json(WIKI_CORPUS)
    if args.limit:
        corpus = corpus[: args.limit]
    texts = [f"{r['title']}\n{r['text']}" for r in corpus]
    embedder = open_embedder(Settings().embedder_url)
    started = time.perf_counter()
    vectors = embedder.embed_texts(texts)
    embed_s = time.perf_counter() - started
    print(f"embedded {len(texts)} passages in {embed_s:.1f}s "
          f"({embedder.model_name}, {vectors.shape[1]} dims)")
    tokens = np.array([len(t) // CHARS_PER_TOKEN + 1 for t in texts])
    OUT.mkdir(parents=True, exist_ok=True)
    inputs = OUT / "sirerag-clustering-inputs.npz"
    np.savez(inputs, vectors=vectors, tokens=tokens)
    subprocess.run([sys.executable, __file__, "--child", str(inputs), "--seed",
                    str(args.seed)], check=True)
    figures = json.loads(inputs.with_suffix(".json").read_text())
    inputs.unlink()
    inputs.with_suffix(".json").unlink()
    for level in ("level0", "level1"):
        f = figures[level]
        print(f"{level}: {f['nodes']} nodes -> {f['clusters']} clusters in {f['seconds']:.1f}s, "
              f"sizes min/median/max {f['size_min']}/{f['size_median']}/{f['size_max']}, "
              f"nodes in 2+ clusters {f['nodes_in_several']}, max cluster tokens "
              f"{f['tokens_max']} (over the cap: {f['over_cap']}, of them not single "
              f"nodes: {f['over_cap_not_single']}), "
              f"peak RSS {f['peak_rss_mb']:.0f} MB")
    print(f"child process: {figures['child_baseline_rss_mb']:.0f} MB after imports, "
          f"{figures['warmup_rss_mb']:.0f} MB after the warm-up; "
          f"warm-up (numba compilation) {figures['warmup_s']:.1f}s; "
          f"embedding process peak RSS {peak_rss_mb():.0f} MB")
    path = write_result("sirerag_clustering", {
        "passages": len(texts), "embedder": embedder.model_name, "embed_s": embed_s,
        "tokens_total": int(tokens.sum()), "seed": args.seed, **figures})
    print(f"wrote {path}")


def _cluster_levels(inputs: Path, seed: int) -> dict[str, Any]:
    """In the child: warm-up, level 0 over the passages, level 1 over the centroids."""
    policy = ClusterPolicy(seed=seed)
    baseline_rss_mb = high_water_mb()
    rng = np.random.default_rng(seed)
    warm = rng.normal(size=(40, 32))
    started = time.perf_counter()
    cluster_nodes([f"w{i}" for i in range(40)],
                  (warm / np.linalg.norm(warm, axis=1, keepdims=True)).astype(np.float32),
                  [1] * 40, policy)
    warmup_s = time.perf_counter() - started
    warmup_rss_mb = high_water_mb()

    with np.load(inputs) as arrays:
        vectors, tokens = arrays["vectors"], [int(t) for t in arrays["tokens"]]
    ids = [f"p{i:05d}" for i in range(len(vectors))]
    level0 = _level(ids, vectors, tokens, policy)
    row = {node: i for i, node in enumerate(ids)}
    members = [[row[node] for node in cluster] for cluster in level0.clusters]
    centroids = np.stack([vectors[m].mean(axis=0) for m in members])
    centroids /= np.linalg.norm(centroids, axis=1, keepdims=True)
    summary_tokens = [round(statistics.mean(tokens[i] for i in m)) for m in members]
    level1 = _level([f"s{i:05d}" for i in range(len(members))],
                    centroids.astype(np.float32), summary_tokens, policy)
    return {"child_baseline_rss_mb": baseline_rss_mb, "warmup_s": warmup_s,
            "warmup_rss_mb": warmup_rss_mb, "level0": level0.figures, "level1": level1.figures,
            "policy": {"max_cluster_tokens": policy.max_cluster_tokens,
                       "max_components": policy.max_components,
                       "reduced_dims": policy.reduced_dims}}


class _Level:
    def __init__(self, clusters: list[Cluster], figures: dict[str, Any]) -> None:
        self.clusters = clusters
        self.figures = figures


def _level(ids: list[str], vectors: np.ndarray[Any, Any], tokens: list[int],
           policy: ClusterPolicy) -> _Level:
    started = time.perf_counter()
    clusters = cluster_nodes(ids, vectors, tokens, policy)
    seconds = time.perf_counter() - started
    size = dict(zip(ids, tokens, strict=True))
    totals = [sum(size[n] for n in c) for c in clusters]
    lengths = [len(c) for c in clusters]
    memberships = Counter(n for c in clusters for n in c)
    return _Level(clusters, {
        "nodes": len(ids), "clusters": len(clusters), "seconds": seconds,
        "peak_rss_mb": high_water_mb(),
        "size_min": min(lengths), "size_median": statistics.median(lengths),
        "size_max": max(lengths),
        "nodes_in_several": sum(1 for v in memberships.values() if v > 1),
        "tokens_max": max(totals),
        "over_cap": sum(1 for t in totals if t > policy.max_cluster_tokens),
        "over_cap_not_single": sum(1 for t, n in zip(totals, lengths, strict=True)
                                   if t > policy.max_cluster_tokens and n > 1),
    })


if __name__ == "__main__":
    main()
