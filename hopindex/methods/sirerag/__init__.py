"""``sirerag``: similarity and relatedness trees ("SiReRAG: Indexing Similar and Related
Information for Multihop Reasoning", arXiv 2412.06206).

``propositions`` is the documents phase (passages, and each chunk's propositions
from one call or the paper's three, ``extraction``), ``aggregates`` the groups phase
(each entity's propositions as one unit), ``trees`` the two levels phases (clusters of
a level's nodes, one summary per cluster), with ``clustering`` the clustering step both
trees share; ``prompts``, ``paper_prompts`` and ``parsing`` hold the LLM calls;
``method`` is the index method and ``query`` the query method.
"""

from typing import Any

from hopindex.core.models import UnitKind
from hopindex.methods.base import degraded_lines
from hopindex.methods.plugin import LlmUse, MethodRegistry, QueryMethodSpec
from hopindex.methods.sirerag.method import SiReRagIndexMethod
from hopindex.methods.sirerag.query import OPTIONS_SCHEMA, SiReRagMethod

__all__ = ["SiReRagIndexMethod", "SiReRagMethod", "register"]


def describe_trace(trace: dict[str, Any]) -> list[str]:
    """``hopindex query --trace``: the pool, then each retrieved node."""
    lines = [f"pool: {trace.get('pool')} ({trace.get('pool_size')} nodes)"]
    for rank, node in enumerate(trace.get("nodes", []), start=1):
        where = (f"{node.get('tree')} tree level {node.get('level')}"
                 if node.get("tree") else node.get("kind"))
        lines.append(f"{rank:>2}. {node.get('score'):.4f} {where} {node.get('unit_id')}")
    return [*lines, *degraded_lines(trace)]


def register(registry: MethodRegistry) -> None:
    registry.add_index_method(SiReRagIndexMethod())
    registry.add_query_method(QueryMethodSpec(
        name=SiReRagMethod.name, factory=SiReRagMethod,
        reads=frozenset({UnitKind.PROPOSITION_AGGREGATE, UnitKind.SUMMARY}),
        llm_use=LlmUse.REQUIRED, options_schema=OPTIONS_SCHEMA, describe_trace=describe_trace,
        summary="top 20 of both trees' flat pool, one answer call (the paper's prompt)"))
