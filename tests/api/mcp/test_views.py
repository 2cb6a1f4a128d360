"""What the tools return for a model to read: each passage with where it is in its file,
the unit that led to it (its text cut short) and why it ranks; an answer with the
passages and usage; a job with what to do next while it runs."""

from __future__ import annotations

from hopindex.api.mcp.views import VIA_TEXT_CHARS, answer_view, job_view, search_view
from hopindex.core.citations import Citation
from hopindex.core.models import Job, JobKind, JobState
from hopindex.core.provider_batches import BatchState, ProviderBatch
from hopindex.core.settings import LlmMode
from hopindex.methods.base import QueryResult, QueryUsage, RankedPassage


def _result(method: str = "hops", **fields: object) -> QueryResult:
    passages = [
        RankedPassage(rank=1, doc_id="report.pdf#methods", title="Methods", text="We ...",
                      score=0.0312345, via_unit_id="u1", via_kind="passage",
                      citation=Citation(file="report.pdf", page=3, page_end=4,
                                        section="Methods > Data")),
        RankedPassage(rank=2, doc_id="d2", title="Two", text="Second.", score=0.02,
                      via_unit_id="u2", via_kind="bridge", via_text="x" * 1000),
    ]
    trace = {"ranks": [{"doc_id": "report.pdf#methods", "title": "Methods", "score": 0.03,
                        "lists": {"hop1": 1}}]}
    return QueryResult(question="q?", method=method, index="i", passages=passages,
                       trace=trace, **fields)  # type: ignore[arg-type]


def test_a_search_passage_says_where_it_is_what_led_to_it_and_why() -> None:
    first, second = search_view(_result())["passages"]
    assert first["cited_as"] == "report.pdf, p. 3-4, § Methods > Data"
    assert (first["file"], first["page"], first["page_end"], first["section"]) == (
        "report.pdf", 3, 4, "Methods > Data")
    assert first["score"] == 0.0312 and first["why"] == "matched the question (hop 1, #1)"
    assert "file" not in second and "cited_as" not in second
    assert len(second["via"]["text"]) == VIA_TEXT_CHARS + 1  # the cut, and its ellipsis
    assert second["why"] == ("reached through a bridge unit that links it to other "
                             "documents")


def test_a_method_without_explanations_still_says_why() -> None:
    first, _ = search_view(_result(method="extractive"))["passages"]
    assert first["why"] == "its own text matched the question"


def test_an_answer_carries_its_passages_which_it_cites_usage_and_what_degraded() -> None:
    result = _result(answer="Paris [1]", usage=QueryUsage(llm_calls=1, prompt_tokens=10,
                                                          completion_tokens=3, cost=0.5))
    result.degrade("answer", "the LLM timed out once")
    view = answer_view(result)
    assert view["answer"] == "Paris [1]" and len(view["passages"]) == 2
    assert "cited" not in view["passages"][0]  # the method did not cite
    result.trace["answer_citations"] = [{"marker": 1, "unit_id": "u1", "passage_ranks": [1]}]
    assert [p["cited"] for p in answer_view(result)["passages"]] == [True, False]
    assert view["usage"] == {"llm_calls": 1, "prompt_tokens": 10, "completion_tokens": 3,
                             "cost": 0.5}
    assert view["degraded"] == [{"step": "answer", "reason": "the LLM timed out once"}]


def test_a_job_says_what_to_do_next_until_it_ends() -> None:
    running = job_view(Job(job_id="j1", index="i", kind=JobKind.INGEST,
                           state=JobState.RUNNING))
    paused = job_view(Job(job_id="j2", index="i", kind=JobKind.INGEST,
                          state=JobState.PAUSED))
    done = job_view(Job(job_id="j3", index="i", kind=JobKind.INGEST,
                        state=JobState.SUCCEEDED))
    assert "wait_for_job" in running["next"]
    assert "hopindex jobs resume j2" in paused["next"]
    assert "next" not in done


def test_a_job_waiting_on_the_provider_shows_its_batches_and_says_it_goes_on() -> None:
    """A job in batch mode waiting on the provider: its mode, each batch as a person
    follows it (no request keys, which a model would read every one of), and a next
    step saying it goes on by itself, not to resume it."""
    job = Job(job_id="j4", index="i", kind=JobKind.INGEST,
              state=JobState.WAITING_ON_PROVIDER, llm_mode=LlmMode.BATCH,
              provider_batches=[ProviderBatch(token="t", phase="indexrag.stage1",
                                              keys=["k1", "k2"], tasks=["task"],
                                              batch_id="batch_1",
                                              state=BatchState.IN_PROGRESS, total=2,
                                              completed=1)])
    view = job_view(job)
    assert view["llm_mode"] == "batch"
    assert [(b["batch_id"], b["state"], b["completed"], b["total"])
            for b in view["provider_batches"]] == [("batch_1", "in_progress", 1, 2)]
    assert "keys" not in view["provider_batches"][0]
    assert "goes on by itself" in view["next"] and "resume" not in view["next"]
