"""``hops``: LLM-free later hops over an ``extractive`` index (docs/methods.md,
"Second hops without an LLM").

Hop 1 is ``extractive``'s hybrid search over passages and bridges. ``graph`` adds the
documents the question names by title and walks from the seed documents through
their bridge units (scored by stored vectors against the question) to the documents
beyond; ``chain`` walks on from there (hop 3, 4), or searches the seeds'
co-mention neighbourhood (``neighbours``); ``query`` fuses the lists by weighted
reciprocal rank. No model runs per query besides the embedder of hop 1.
"""

from typing import Any

from hopindex.core.models import UnitKind
from hopindex.methods.base import degraded_lines
from hopindex.methods.hops.params import HopsParams
from hopindex.methods.hops.query import HopsMethod
from hopindex.methods.plugin import LlmUse, MethodRegistry, QueryMethodSpec

__all__ = ["HopsMethod", "describe_trace", "explain_passages", "register"]

# What each ranked list of the fusion means, as a reason a passage is there.
_LISTS = {"hop1": "matched the question (hop 1, #{rank})",
          "named": "named in the question (#{rank})",
          "walk": "reached through a shared entity (#{rank})",
          "feedback": "close to the top passages (feedback, #{rank})",
          "hop2": "matched the question among the seeds' neighbours (hop 2, #{rank})",
          "hop3": "reached through a shared entity from hop 2 (hop 3, #{rank})",
          "hop4": "reached through a shared entity from hop 3 (hop 4, #{rank})"}


def describe_trace(trace: dict[str, Any]) -> list[str]:
    """``hopindex query --trace``: seeds, the bridges walked, and why each passage ranks."""
    lines = degraded_lines(trace)
    lines.append(f"seeds: {', '.join(trace.get('seeds', [])) or '(none)'}")
    if trace.get("named"):
        lines.append(f"named in the question: {', '.join(trace['named'])}")
    for step in trace.get("walk", []):
        lines.append(f"walk {step['entity']!r} (cosine {step['similarity']}): "
                     f"{', '.join(step['from'])} -> {', '.join(step['to'])}")
    for step in trace.get("chain", []):
        lines.append(f"hop {step['hop']} from {', '.join(step['seeds']) or '(none)'}: "
                     + (", ".join(f"{w['entity']!r} -> {', '.join(w['to'])}"
                                  for w in step.get("walk", []))
                        or f"{step.get('documents', 0)} neighbours searched"))
    for rank, entry in enumerate(trace.get("ranks", []), start=1):
        why = ", ".join(f"{name} #{r}" for name, r in entry["lists"].items())
        lines.append(f"{rank}. {entry['title'] or entry['doc_id']} ({entry['score']}): {why}")
    return lines


def explain_passages(trace: dict[str, Any]) -> dict[str, str]:
    """Why each passage ranks: the lists that found it, and for a walked-to passage the
    entity and the seed it was reached from."""
    walked: dict[str, str] = {}
    later = [w for hop in trace.get("chain", []) for w in hop.get("walk", [])]
    for step in [*trace.get("walk", []), *later]:
        for doc_id in step["to"]:
            walked.setdefault(doc_id, f"{step['entity']!r} links it to "
                                      f"{', '.join(step['from'])}")
    found: dict[str, str] = {}
    for entry in trace.get("ranks", []):
        reasons = [_LISTS.get(name, name + " #{rank}").format(rank=rank)
                   for name, rank in entry["lists"].items()]
        if entry["doc_id"] in walked:
            reasons.append(walked[entry["doc_id"]])
        found[entry["doc_id"]] = "; ".join(reasons)
    return found


def register(registry: MethodRegistry) -> None:
    registry.add_query_method(QueryMethodSpec(
        name=HopsMethod.name, factory=HopsMethod,
        reads=frozenset({UnitKind.PASSAGE}), llm_use=LlmUse.NONE,
        options_schema=HopsParams.json_schema(), describe_trace=describe_trace,
        explain_passages=explain_passages,
        summary="extractive's hop 1, then documents the question names and a walk "
                "through bridge units to the next hops; no LLM"))
