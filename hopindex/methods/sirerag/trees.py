"""SiReRAG's two trees as levels phases: cluster a level's nodes, summarise each cluster.

The similarity tree's leaves are the passages, the relatedness tree's the proposition
aggregates; each level's nodes are the summaries of the level below. Planning a
level clusters its nodes (``clustering.py``, over their stored embeddings) and keeps
the clusters as the level's plan record (namespace ``sirerag.plan``, key
``<tree>:<level>``); each cluster is one item, built by one summary call over its
children's texts, in the children's order. A cluster's key is its level and a hash of
its members, so an unchanged cluster keeps its key, its summary's id and (through the
LLM cache) its summary for free.

A level also plans the keys its previous build left that the new plan does not
have: building such a key yields nothing, and the runtime purges its summary. The
tree stops after ``levels`` levels, or once a level has a single node.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from hopindex.core.errors import HopindexError
from hopindex.core.ids import sha256_hex, unit_id
from hopindex.core.logging import get_logger
from hopindex.core.models import ItemError, Unit, UnitKind
from hopindex.methods.plugin import BuildLevel, GroupsResult, PhaseContext, PlanLevel, Scope
from hopindex.methods.sirerag.clustering import ClusterPolicy, cluster_nodes
from hopindex.methods.sirerag.parsing import parse_summary
from hopindex.methods.sirerag.prompts import summary_request
from hopindex.methods.sirerag.propositions import AGGREGATES, METHOD

log = get_logger(__name__)

PLANS = "sirerag.plan"  # the records' namespace: one plan per tree and level
# The LLM client's estimate: clusters are capped in tokens (the authors count them with
# tiktoken; an estimate needs no tokenizer for whichever model is configured).
CHARS_PER_TOKEN = 4
_VECTOR_BATCH = 256  # ids per vector read: one engine call each


class Tree(enum.StrEnum):
    SIMILARITY = "similarity"
    RELATEDNESS = "relatedness"

    @property
    def namespace(self) -> str:
        return f"sirerag.{self.value}"


def plan_key(tree: Tree, level: int) -> str:
    return f"{tree.value}:{level}"


def cluster_key(level: int, members: Iterable[str]) -> str:
    return f"{level}:{sha256_hex(','.join(sorted(members)))[:20]}"


def read_plan(context: PhaseContext, tree: Tree, level: int) -> dict[str, list[str]]:
    """The clusters of a tree's level as last planned: key → children in order."""
    record = context.state.get_records(context.index, PLANS, [plan_key(tree, level)])
    found = record.get(plan_key(tree, level))
    return {str(k): list(v) for k, v in found["clusters"].items()} if found else {}


def plan_level(context: PhaseContext, tree: Tree, level: int) -> list[str]:
    """Cluster the level's nodes and keep the plan; returns the new clusters' keys and
    the keys of the level's previous build that the new plan drops."""
    settings = context.settings
    nodes = level_nodes(context, tree, level) if level < settings.levels else []
    if level > 0 and len(nodes) < 2:
        nodes = []  # one node is the root: nothing above it to summarise
    clusters = _cluster(context, tree, level, nodes) if nodes else {}
    context.state.put_records(context.index, PLANS, {plan_key(tree, level): {
        "clusters": clusters, "nodes": len(nodes)}})
    previous = [k for k in context.state.list_group_keys(context.index, tree.namespace)
                if k.startswith(f"{level}:")]
    return sorted(set(clusters) | set(previous))


def level_nodes(context: PhaseContext, tree: Tree, level: int) -> list[Unit]:
    """The nodes a level clusters, in a fixed order (the summary prompt keeps it)."""
    state, index = context.state, context.index
    if level == 0 and tree is Tree.SIMILARITY:
        units = state.units_of_documents(index, sorted(state.document_hashes(index)),
                                         kinds=(UnitKind.PASSAGE,))
    else:
        namespace, keys = ((AGGREGATES, state.list_group_keys(index, AGGREGATES)) if level == 0
                           else (tree.namespace, list(read_plan(context, tree, level - 1))))
        groups = state.get_groups(index, namespace, keys)
        units = state.get_units(index, sorted({u for g in groups.values() for u in g.unit_ids}))
    return sorted(units, key=lambda u: (u.source_key, u.unit_id))


def _cluster(context: PhaseContext, tree: Tree, level: int, nodes: Sequence[Unit]
             ) -> dict[str, list[str]]:
    started = time.perf_counter()
    vectors = read_vectors(context, [u.unit_id for u in nodes])
    # A node the embed step has not stored (its batch failed) cannot be placed.
    placed = [u for u in nodes if u.unit_id in vectors]
    if len(placed) < len(nodes):
        log.warning("sirerag_nodes_unembedded", index=context.index, tree=tree.value,
                    level=level, missing=len(nodes) - len(placed))
    if not placed:
        return {}
    policy = ClusterPolicy(max_cluster_tokens=context.settings.max_cluster_tokens,
                           seed=context.settings.seed,
                           threads=context.settings.cluster_threads)
    found = cluster_nodes([u.unit_id for u in placed],
                          np.stack([vectors[u.unit_id] for u in placed]),
                          [len(u.text) // CHARS_PER_TOKEN + 1 for u in placed], policy)
    position = {u.unit_id: n for n, u in enumerate(placed)}
    clusters = {cluster_key(level, members): sorted(members, key=position.__getitem__)
                for members in found}
    log.info("sirerag_level_planned", index=context.index, tree=tree.value, level=level,
             nodes=len(placed), clusters=len(clusters),
             duration_s=round(time.perf_counter() - started, 3))
    return clusters


def read_vectors(context: PhaseContext, unit_ids: Sequence[str]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for start in range(0, len(unit_ids), _VECTOR_BATCH):
        for record in context.vectors.get_vectors(context.index,
                                                  unit_ids[start:start + _VECTOR_BATCH]):
            found[record.unit_id] = np.asarray(record.vector, dtype=np.float32)
    return found


def build_level(context: PhaseContext, tree: Tree, level: int, keys: list[str]) -> GroupsResult:
    """One summary call per planned cluster; a key the plan no longer has builds nothing."""
    plan = read_plan(context, tree, level)
    planned = [k for k in keys if k in plan]
    children_ids = sorted({c for k in planned for c in plan[k]})
    children = {u.unit_id: u for u in context.state.get_units(context.index, children_ids)}
    members = {k: [children[c] for c in plan[k] if c in children] for k in planned}
    asked = [k for k in planned if members[k]]
    outcomes = (context.require_llm().complete_text_many(
        [summary_request([u.text for u in members[k]]) for k in asked], parse_summary,
        context.usage) if asked else [])
    result = GroupsResult()
    for key, outcome in zip(asked, outcomes, strict=True):
        if isinstance(outcome, HopindexError):
            result.errors.append(ItemError(item=key, stage=context.phase,
                                           reason=f"{tree.value} tree level {level} cluster "
                                                  f"summary failed: {outcome}"))
        else:
            result.built[key] = [summary_unit(context.index, tree, level, key, text=outcome,
                                              children=members[key])]
    return result


def summary_unit(index: str, tree: Tree, level: int, key: str, *, text: str,
                 children: Sequence[Unit]) -> Unit:
    """A cluster's summary: a node one level above its children, with the passages
    beneath it (in its children's order) for provenance."""
    source_key = f"{tree.value}:{key}"
    return Unit(unit_id=unit_id(index, UnitKind.SUMMARY, source_key, text), index=index,
                kind=UnitKind.SUMMARY, text=text,
                source_doc_ids=tuple(dict.fromkeys(d for c in children
                                                   for d in c.source_doc_ids)),
                method=METHOD, source_key=source_key, level=level + 1,
                metadata={"tree": tree.value, "level": level + 1,
                          "children": [c.unit_id for c in children],
                          "passages": list(dict.fromkeys(p for c in children
                                                         for p in passages_beneath(c)))})


def passages_beneath(unit: Unit) -> list[str]:
    """The passage units a pool node stands for: itself, or those its metadata lists."""
    if unit.kind is UnitKind.PASSAGE:
        return [unit.unit_id]
    return [str(p) for p in unit.metadata.get("passages", [])]


def tree_phase(tree: Tree) -> tuple[PlanLevel, BuildLevel]:
    """The plan and build functions of a tree's levels phase."""
    def plan(context: PhaseContext, level: int, scope: Scope) -> list[str]:
        return plan_level(context, tree, level)

    def build(context: PhaseContext, level: int, keys: list[str]) -> GroupsResult:
        return build_level(context, tree, level, keys)

    return plan, build
