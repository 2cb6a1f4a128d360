"""``compactrag``: an atomic QA knowledge base and two LLM calls per query
("CompactRAG: Reducing LLM Calls and Token Overhead in Multi-Hop Question Answering",
arXiv 2602.05728).

Offline, one call per passage turns it into atomic question-answer pairs, each indexed
as ``question\\nanswer``. Online, one call decomposes the question into sub-questions
in dependency order; each is rewritten with the answer it refers to, retrieves QA
pairs and gets its answer extracted without the LLM; one last call synthesises the
answer from all of it.

``prompts`` builds the three requests, ``shapes`` declares the replies' shapes,
``parsing`` validates the QA pairs and reads the decomposition, ``text_replies`` reads
the synthesis' answer (JSON found by the shared reader, ``backends/llm/reply_json``).
All are pure. ``modules`` holds the local steps between the two calls
(span extraction, rewriting: local models or model-free defaults), ``method`` the
index method and ``query`` the query method.
"""

from typing import Any

from hopindex.core.models import UnitKind
from hopindex.methods.base import degraded_lines
from hopindex.methods.compactrag.method import CompactRagIndexMethod
from hopindex.methods.compactrag.query import CompactRagMethod
from hopindex.methods.plugin import LlmUse, MethodRegistry, QueryMethodSpec

__all__ = ["CompactRagIndexMethod", "CompactRagMethod", "register"]


def describe_trace(trace: dict[str, Any]) -> list[str]:
    """``hopindex query --trace``: each sub-question, how it was rewritten and answered."""
    lines = degraded_lines(trace)
    for step in trace.get("sub_questions", []):
        ref = f" (uses #{step['ref']})" if step.get("ref") is not None else ""
        lines.append(f"#{step['index']}{ref} {step['q']}")
        if step.get("rewritten") != step.get("q"):
            lines.append(f"    rewritten: {step['rewritten']}")
        lines.append(f"    answer: {step['answer'] or '(none)'} from {len(step['units'])} "
                     "QA units")
    return lines


def register(registry: MethodRegistry) -> None:
    registry.add_index_method(CompactRagIndexMethod())
    registry.add_query_method(QueryMethodSpec(
        name=CompactRagMethod.name, factory=CompactRagMethod,
        reads=frozenset({UnitKind.QA_PAIR}), llm_use=LlmUse.REQUIRED,
        describe_trace=describe_trace,
        summary="decompose, answer each sub-question from QA units locally, synthesise: "
                "exactly 2 calls"))
