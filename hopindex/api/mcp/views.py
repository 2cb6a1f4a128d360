"""What the MCP tools return: the client's results, shaped for a model to read.

A model reads every byte it is given, so the views keep what it acts on (the passage,
where it is, why it is there, the ids the other tools take) and leave out what only a
program or a person debugging wants (scores to many digits, the full trace, per-phase
timings): those stay one ``hopindex query --json`` away.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hopindex.core.errors import HopindexError
from hopindex.core.models import Job, JobState
from hopindex.methods.base import QueryResult, RankedPassage
from hopindex.methods.registry import get_query_method

# A bridge or summary unit can be long (a bridge joins several passages' sentences):
# its opening says what linked the passage.
VIA_TEXT_CHARS = 300
# Next steps a job's view suggests, by what the job is doing.
_RUNNING_HINT = "call wait_for_job with this job_id to wait for it"
_PAUSED_HINT = ("the job is paused on its LLM budget; resume it with `hopindex jobs resume "
                "JOB_ID` (and a higher budget) where hopindex runs")
_WAITING_HINT = ("the job's LLM requests are with the provider's Batch API (provider_batches "
                 "shows how far): it goes on by itself once their results are in, within "
                 "hours; call job_status later, or wait_for_job again")


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit].rstrip() + "…"


def _explanations(result: QueryResult) -> Mapping[str, str]:
    try:
        explain = get_query_method(result.method).explain_passages
    except HopindexError:  # a method of a server newer than this process: none
        return {}
    return explain(result.trace) if explain is not None else {}


def _why(passage: RankedPassage, explained: Mapping[str, str]) -> str:
    reason = explained.get(passage.doc_id, "")
    if passage.via_kind == "passage":
        return reason or "its own text matched the question"
    via = f"reached through a {passage.via_kind} unit that links it to other documents"
    return f"{reason}; {via}" if reason else via


def passage_view(passage: RankedPassage, explained: Mapping[str, str]) -> dict[str, Any]:
    view: dict[str, Any] = {"rank": passage.rank, "doc_id": passage.doc_id,
                            "title": passage.title, "text": passage.text,
                            "score": round(passage.score, 4)}
    if passage.citation is not None:
        citation = passage.citation
        view["cited_as"] = citation.label()
        view.update({key: value for key, value in citation.as_dict().items()
                     if value is not None})
    view["via"] = {"unit_id": passage.via_unit_id, "kind": passage.via_kind,
                   "text": _cut(passage.via_text, VIA_TEXT_CHARS)}
    view["why"] = _why(passage, explained)
    return view


def _notes(result: QueryResult) -> dict[str, Any]:
    notes: dict[str, Any] = {}
    if result.degraded:
        notes["degraded"] = [d.as_dict() for d in result.degraded]
    if result.warnings:
        notes["warnings"] = [w.as_dict() for w in result.warnings]
    return notes


def search_view(result: QueryResult) -> dict[str, Any]:
    explained = _explanations(result)
    return {"index": result.index, "method": result.method, "question": result.question,
            "passages": [passage_view(p, explained) for p in result.passages],
            "latency_s": round(result.latency_s, 3), **_notes(result)}


def usage_view(result: QueryResult) -> dict[str, Any]:
    usage = result.usage
    view: dict[str, Any] = {"llm_calls": usage.llm_calls,
                            "prompt_tokens": usage.prompt_tokens,
                            "completion_tokens": usage.completion_tokens}
    if usage.cost is not None:
        view["cost"] = usage.cost
    return view


def answer_view(result: QueryResult) -> dict[str, Any]:
    """The answer, the passages it rests on (numbered as it cites them, each one it
    cites marked ``cited``, when the method cites) and usage."""
    explained = _explanations(result)
    view: dict[str, Any] = {"index": result.index, "method": result.method,
                            "question": result.question, "answer": result.answer}
    if result.answer_truncated:
        view["answer_truncated"] = True
    passages = [passage_view(p, explained) for p in result.passages]
    citations = result.trace.get("answer_citations")
    if isinstance(citations, list):
        cited = {rank for c in citations for rank in c.get("passage_ranks", [])}
        for passage in passages:
            passage["cited"] = passage["rank"] in cited
    view["passages"] = passages
    view["usage"] = usage_view(result)
    view["latency_s"] = round(result.latency_s, 3)
    return {**view, **_notes(result)}


def job_view(job: Job) -> dict[str, Any]:
    """The job record, with what to do next while it is not over."""
    view = job.view()
    if job.state is JobState.PAUSED:
        view["next"] = _PAUSED_HINT.replace("JOB_ID", job.job_id)
    elif job.state is JobState.WAITING_ON_PROVIDER:
        view["next"] = _WAITING_HINT
    elif not job.state.is_final:
        view["next"] = _RUNNING_HINT
    return view
