"""A job is one trace (in-process, no broker): the job span under the request that
submitted it, a span per step, each task's span under its step; a query is one trace
whose id its result carries; log lines inside a span carry its ids."""

from __future__ import annotations

import json
import logging

import pytest
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from hopindex.core.logging import get_logger
from hopindex.core.models import JobState
from hopindex.core.tracing import span, stop_tracing, use_span_processor
from hopindex.core.tracing.settings import SamplerName, TracesExporter, TracingSettings
from hopindex.readers import RawDocument
from tests.conftest import ClientFactory, ingest_documents
from tests.tracing import named, one, traced  # noqa: F401  # traced: a fixture

pytestmark = pytest.mark.integration

DOCS = [RawDocument(doc_id=None, title=f"Person {n}", metadata={}, origin=f"docs[{n}]",
                    text=f"Person {n} was born in Paris. Person {n} studied with Marie Curie.")
        for n in range(4)]


def test_an_ingest_job_is_one_trace_of_its_steps_and_tasks(
        traced: InMemorySpanExporter, make_client: ClientFactory) -> None:  # noqa: F811
    """The job span is a child of the submitting span and covers every step; each step
    span is the job span's child, each task span its step's; all in one trace, whose id
    the job record carries."""
    client = make_client()
    with span("submitter") as submitter:
        job = ingest_documents(client, "people", DOCS, method="extractive")
    assert job.state is JobState.SUCCEEDED
    spans = traced.get_finished_spans()
    trace_id = submitter.get_span_context().trace_id  # type: ignore[attr-defined]
    assert job.trace_id == f"{trace_id:032x}"
    assert client.jobs.get_job(job.job_id).trace_id == job.trace_id
    assert {s.context.trace_id for s in spans} == {trace_id}
    job_span = one(spans, "ingest job")
    assert job_span.parent is not None
    assert job_span.parent.span_id == submitter.get_span_context().span_id  # type: ignore[attr-defined]
    assert dict(job_span.attributes or {})["hopindex.job.state"] == "succeeded"
    steps = {s.name: s for s in spans if s.name.startswith("step ")}
    assert {"step extractive.stage1", "step embed:extractive.stage1",
            "step finalize-send"} <= set(steps)
    for step in steps.values():
        assert step.parent is not None and step.parent.span_id == job_span.context.span_id
        assert job_span.start_time <= step.start_time and step.end_time <= job_span.end_time  # type: ignore[operator]
    [stage1] = named(spans, "task extractive.stage1")
    assert stage1.parent is not None
    assert stage1.parent.span_id == steps["step extractive.stage1"].context.span_id
    assert dict(stage1.attributes or {})["hopindex.items"] == len(DOCS)
    embeds = [s for s in named(spans, "task embed")
              if s.parent and s.parent.span_id == steps["step embed:extractive.stage1"]
              .context.span_id]
    assert len(embeds) == 1
    writes = {s.name for s in spans if s.parent and s.parent.span_id == embeds[0].context.span_id}
    assert writes == {"embed_texts", "vector_write", "keyword_write"}


def test_a_query_is_one_trace_whose_id_its_result_carries(
        traced: InMemorySpanExporter, make_client: ClientFactory) -> None:  # noqa: F811
    client = make_client()
    ingest_documents(client, "people", DOCS, method="extractive")
    traced.clear()
    result = client.query("people", "Where was Person 2 born?", method="hops")
    spans = traced.get_finished_spans()
    root = one(spans, "query")
    assert result.trace_id == f"{root.context.trace_id:032x}"
    assert {s.context.trace_id for s in spans} == {root.context.trace_id}
    children = {s.name for s in spans if s.parent and s.parent.span_id == root.context.span_id}
    assert {"embed", "dense_search", "keyword_search", "fusion", "walk"} <= children
    assert dict(root.attributes or {})["hopindex.method"] == "hops"


def test_tracing_off_leaves_no_trace_id(make_client: ClientFactory) -> None:
    client = make_client()
    job = ingest_documents(client, "people", DOCS[:1], method="extractive")
    assert job.trace == {} and job.trace_id == ""
    assert client.query("people", "Where was Person 0 born?").trace_id == ""


def test_log_lines_inside_a_span_carry_its_ids(
        traced: InMemorySpanExporter, make_client: ClientFactory,  # noqa: F811
        capsys: pytest.CaptureFixture[str]) -> None:
    """With tracing on, the processor that stamps every record adds the span's ids."""
    make_client(log_format="json", log_level="info")  # sets the logging up, tracing on
    with span("work") as work:
        get_logger("hopindex.test").warning("traced_line", n=1)
    get_logger("hopindex.test").warning("untraced_line", n=2)
    logging.getLogger().handlers[-1].flush()
    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines()
             if line.startswith("{")]
    traced_line = next(line for line in lines if line["event"] == "traced_line")
    context = work.get_span_context()  # type: ignore[attr-defined]
    assert traced_line["trace_id"] == f"{context.trace_id:032x}"
    assert traced_line["span_id"] == f"{context.span_id:016x}"
    assert "trace_id" not in next(line for line in lines if line["event"] == "untraced_line")


def test_a_trace_the_sampler_leaves_out_gives_no_id_to_look_up(
        make_client: ClientFactory) -> None:
    """Sampled out, a job keeps its trace context (so its tasks follow the decision) but
    shows no trace id, and neither does a query: no span of theirs was kept."""
    exporter = InMemorySpanExporter()
    use_span_processor(SimpleSpanProcessor(exporter),
                       TracingSettings(exporter=TracesExporter.CONSOLE,
                                       sampler=SamplerName.ALWAYS_OFF))
    try:
        client = make_client()
        job = ingest_documents(client, "people", DOCS[:1], method="extractive")
        assert job.trace["traceparent"].endswith("-00") and job.trace_id == ""
        assert client.query("people", "Where was Person 0 born?").trace_id == ""
        assert exporter.get_finished_spans() == ()
    finally:
        stop_tracing()
