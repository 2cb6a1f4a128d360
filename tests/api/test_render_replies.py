"""What reading a job's LLM replies forgave is on its record and in ``hopindex jobs
JOB_ID``: per stage, only the counters that are not zero, and they survive the trip
through the record's JSON."""

from __future__ import annotations

from rich.console import Console

from hopindex.api.render import render_job
from hopindex.core.models import Job, JobKind, LlmUsage


def test_reading_counters_are_printed_per_stage_and_only_when_not_zero() -> None:
    job = Job(job_id="j", index="i", kind=JobKind.INGEST)
    job.add_llm_usage({
        "kgbridge.links": LlmUsage(calls=12, repairs=2, coerced=5, dropped=1, rescaled=3,
                                   truncated=1),
        "kgbridge.graphs": LlmUsage(calls=4)})
    console = Console(record=True, width=200)
    render_job(console, job)
    shown = console.export_text()
    assert "replies: 2 repairs, 5 coerced, 1 dropped, 3 rescaled, 1 truncated" in shown
    assert shown.count("replies:") == 1


def test_reading_counters_round_trip_and_add_up() -> None:
    usage = LlmUsage(calls=3, repairs=1, coerced=2, dropped=4)
    data = usage.as_dict()
    assert (data["repairs"], data["coerced"], data["dropped"]) == (1, 2, 4)
    assert "rescaled" not in data and "truncated" not in data
    again = LlmUsage.from_dict(data)
    assert again == usage
    again.add(LlmUsage(calls=1, repairs=1, rescaled=1))
    assert (again.calls, again.repairs, again.rescaled) == (4, 2, 1)
