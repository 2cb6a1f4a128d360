"""``kgbridge``: partitioned knowledge graphs bridged by verified SAME_AS links
("BridgeRAG: A Framework for Reasoning over Partitioned Knowledge Graphs", an ICLR 2026
submission with no arXiv id at the time of writing): one graph per document, so that
popular entities do not saturate a global graph, and documents joined only through
same-name entities the model confirms are one.

``graphs`` is the documents phase (passages, one graph and its summaries per
document), ``links`` the groups phase (per entity name, the adjudicated links between
documents), which ``operations`` lists and rejects by hand as admin operations; ``prompts``
and ``parsing`` hold the five LLM calls (extraction, gleaning, entity summaries,
document summary, adjudication), ``settings`` the ``HOPINDEX_KGBRIDGE_*`` variables,
``planning`` the dry run's bound and ``method`` the index method. The query side reads
the records these phases keep: ``routing`` picks the documents with no LLM,
``query_prompts`` and ``query_parsing`` hold the plan, sufficiency and answer calls,
``reading`` the working memory a plan is read into, and ``query`` is the query method
with its loop.
"""

from typing import Any

from hopindex.core.models import UnitKind
from hopindex.methods.base import degraded_lines
from hopindex.methods.kgbridge.method import KgBridgeIndexMethod, KgBridgeSettings
from hopindex.methods.kgbridge.operations import OPERATIONS
from hopindex.methods.kgbridge.query import KgBridgeMethod
from hopindex.methods.plugin import LlmUse, MethodRegistry, QueryMethodSpec

__all__ = ["KgBridgeIndexMethod", "KgBridgeMethod", "KgBridgeSettings", "register"]


def _rank(value: Any) -> str:
    return "-" if value is None else f"#{value}"


def _route_lines(route: dict[str, Any], indent: str) -> list[str]:
    lines = [f"{indent}route by {route.get('source', '-')}; query entities: "
             f"{', '.join(route.get('entities', [])) or '-'}"]
    for rank, doc in enumerate(route.get("docs", []), start=1):
        lines.append(f"{indent}  {rank:>2}. rrf {doc['rrf']:.4f}  manifest "
                     f"{_rank(doc['manifest_rank'])}  summary {_rank(doc['summary_rank'])}"
                     + (f"  passage {_rank(doc['passage_rank'])}"
                        if doc.get("passage_rank") is not None else "")
                     + f"  {doc['doc_id']} {doc.get('title', '')}".rstrip())
    return lines


def _plan_lines(plan: dict[str, Any], indent: str) -> list[str]:
    auxiliary = "; ".join(f"{a['doc_id']} ({', '.join(a['entities']) or 'summary'})"
                          for a in plan.get("auxiliary", [])) or "-"
    lines = [f"{indent}plan: primary {', '.join(plan.get('primary', [])) or '-'}; "
             f"auxiliary {auxiliary}"]
    if plan.get("reason"):
        lines.append(f"{indent}  reason: {plan['reason']}")
    return lines


def describe_trace(trace: dict[str, Any]) -> list[str]:
    """``hopindex query --trace``: the routed documents, the plan, the links followed,
    each reasoning iteration with its refined query's route and plan, and the answer."""
    lines = [*_route_lines(trace.get("route", {}), ""),
             *_plan_lines(trace.get("plan", {}), "")]
    lines.extend(f"link: {link['entity']} {link['from_doc']} -> {link['to_doc']} "
                 f"(s_link {link['s_link']:.3f})"
                 + (f" [iteration {link['round']}]" if link.get("round") else "")
                 for link in trace.get("links_followed", []))
    lines.append(f"context: {len(trace.get('context', []))} units")
    for step in trace.get("iterations", []):
        verdict = "sufficient" if step["sufficient"] else "not sufficient"
        lines.append(f"iteration {step['iteration']}: {verdict}")
        if step.get("findings"):
            lines.append(f"  findings: {step['findings']}")
        if step.get("refined_query"):
            lines.append(f"  refined query: {step['refined_query']}")
        if step.get("route"):
            lines.extend(_route_lines(step["route"], "  "))
        if step.get("plan"):
            lines.extend(_plan_lines(step["plan"], "  "))
            lines.append(f"  added {len(step['units_added'])} units")
    lines.append(f"loop stopped: {trace.get('stopped', '-')}")
    lines.append(f"answer: {trace.get('answer') or '(none)'}")
    lines.extend(degraded_lines(trace))
    return lines


def register(registry: MethodRegistry) -> None:
    registry.add_index_method(KgBridgeIndexMethod())
    registry.add_query_method(QueryMethodSpec(
        name=KgBridgeMethod.name, factory=KgBridgeMethod,
        reads=frozenset({UnitKind.DOC_SUMMARY, UnitKind.ENTITY_SUMMARY, UnitKind.PASSAGE}),
        llm_use=LlmUse.REQUIRED, describe_trace=describe_trace,
        summary="route by entities and summaries, plan primary documents, follow SAME_AS "
                "links; up to 3 times check sufficiency and route and plan a refined "
                "query: at most 8 calls"))
    for operation in OPERATIONS:
        registry.add_operation(operation)
