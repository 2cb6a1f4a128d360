"""``kgbridge``: partitioned knowledge graphs bridged by verified SAME_AS links
("BridgeRAG: A Framework for Reasoning over Partitioned Knowledge Graphs", an ICLR 2026
submission with no arXiv id at the time of writing): one graph per document, so that
popular entities do not saturate a global graph, and documents joined only through
same-name entities the model confirms are one.

``graphs`` is the documents phase (passages, one graph and its summaries per
document), ``links`` the groups phase (per entity name, the adjudicated links between
documents, and the functions a route listing and rejecting links calls); ``prompts``
and ``parsing`` hold the four LLM calls, ``settings`` the ``HOPINDEX_KGBRIDGE_*``
variables and ``method`` the index method. The query side reads the records these
phases keep: ``routing`` picks the documents with no LLM, ``query_prompts`` and
``query_parsing`` hold the plan, sufficiency and answer calls, and ``query`` is the
query method.
"""

from typing import Any

from hopindex.core.models import UnitKind
from hopindex.methods.base import degraded_lines
from hopindex.methods.kgbridge.method import KgBridgeIndexMethod, KgBridgeSettings
from hopindex.methods.kgbridge.query import KgBridgeMethod
from hopindex.methods.plugin import LlmUse, MethodRegistry, QueryMethodSpec

__all__ = ["KgBridgeIndexMethod", "KgBridgeMethod", "KgBridgeSettings", "register"]


def _rank(value: Any) -> str:
    return "-" if value is None else f"#{value}"


def describe_trace(trace: dict[str, Any]) -> list[str]:
    """``hopindex query --trace``: the routed documents, the plan, the links followed,
    each reasoning iteration and the answer."""
    route = trace.get("route", {})
    lines = [f"route by {route.get('source', '-')}; question entities: "
             f"{', '.join(route.get('entities', [])) or '-'}"]
    for rank, doc in enumerate(route.get("docs", []), start=1):
        lines.append(f"  {rank:>2}. rrf {doc['rrf']:.4f}  manifest {_rank(doc['manifest_rank'])}"
                     f"  summary {_rank(doc['summary_rank'])}"
                     + (f"  passage {_rank(doc['passage_rank'])}"
                        if doc.get("passage_rank") is not None else "")
                     + f"  {doc['doc_id']} {doc.get('title', '')}".rstrip())
    plan = trace.get("plan", {})
    auxiliary = "; ".join(f"{a['doc_id']} ({', '.join(a['entities']) or 'summary'})"
                          for a in plan.get("auxiliary", [])) or "-"
    lines.append(f"plan: primary {', '.join(plan.get('primary', [])) or '-'}; "
                 f"auxiliary {auxiliary}")
    if plan.get("reason"):
        lines.append(f"  reason: {plan['reason']}")
    lines.extend(f"link: {link['entity']} {link['from_doc']} -> {link['to_doc']} "
                 f"(s_link {link['s_link']:.3f})" for link in trace.get("links_followed", []))
    lines.append(f"context: {len(trace.get('context', []))} units")
    for step in trace.get("iterations", []):
        verdict = "sufficient" if step["sufficient"] else "not sufficient"
        lines.append(f"iteration {step['iteration']}: {verdict}"
                     + (f"; added {len(step['units_added'])} units for: {step['sub_question']}"
                        if step["units_added"] else ""))
        if step.get("findings"):
            lines.append(f"  findings: {step['findings']}")
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
                "links, check sufficiency up to 3 times: at most 5 calls"))
