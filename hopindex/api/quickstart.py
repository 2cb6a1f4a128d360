"""``hopindex quickstart`` (and ``make demo``): the bundled sample end to end."""

from __future__ import annotations

import time
from dataclasses import dataclass
from importlib.resources import as_file, files
from typing import Any

from rich.console import Console

from hopindex.api.client.local import LocalClient
from hopindex.api.render import render_job, render_result
from hopindex.core.models import Job, UnitKind
from hopindex.evaluation.datasets import DatasetFormat, load_questions
from hopindex.evaluation.report import EvalReport, render_table
from hopindex.evaluation.runner import evaluate, passage_texts
from hopindex.methods.base import QueryResult
from hopindex.methods.registry import default_index_method, get_index_method

SAMPLE = "hotpotqa-100"


@dataclass(frozen=True, slots=True)
class SampleAnswer:
    result: QueryResult
    gold_answer: str
    gold_passages: int
    gold_found: int  # gold passages among the passages returned


@dataclass(frozen=True, slots=True)
class QuickstartRun:
    """What ``quickstart --json`` prints: the ingest job, the units it left, the sample
    questions' answers and the Recall@k report."""

    index: str
    job: Job
    units: dict[UnitKind, int]
    answers: list[SampleAnswer]
    report: EvalReport

    def as_dict(self) -> dict[str, Any]:
        return {"index": self.index, "sample": SAMPLE, "ingest": self.job.view(),
                "units": {kind.value: n for kind, n in sorted(self.units.items())},
                "questions": [{**a.result.as_dict(), "gold_answer": a.gold_answer,
                               "gold_passages": a.gold_passages, "gold_found": a.gold_found}
                              for a in self.answers],
                "report": self.report.to_dict()}


def run_quickstart(client: LocalClient, console: Console, *, index: str,
                   n_questions: int) -> QuickstartRun:
    """Runs here (``LocalClient``): the Recall@k report drives the service itself."""
    sample = files("hopindex") / "sample" / SAMPLE
    method = default_index_method(llm_enabled=False)
    # The method's own query methods, its default first.
    queries = list(get_index_method(method).default_queries)
    with as_file(sample / "corpus.json") as corpus, as_file(sample / "questions.json") as qfile:
        console.rule(f"1. ingest the bundled sample ({SAMPLE}) into index {index!r}")
        started = time.perf_counter()
        # The method that needs no LLM whatever the environment says: a demo must not
        # spend ~2,000 calls of a configured paid LLM on the sample.
        job = client.ingest(index, [corpus], method=method)
        render_job(console, job)
        units = {UnitKind(kind): n
                 for kind, n in client.indexes.describe_index(index).units.items()}
        console.print(f"ingest took {time.perf_counter() - started:.1f}s; units in index: "
                      + ", ".join(f"{k.value}={v}" for k, v in sorted(units.items())))
        questions = load_questions(qfile, DatasetFormat.HOTPOTQA)

    prepare_query_embedder(client, console)
    # Load the query model now (when the ingest skipped everything it is still cold), so
    # that the sample questions below show their own time alone.
    client.warm_up_queries()
    console.rule(f"2. {n_questions} sample questions, method {queries[0]!r}, top 5 passages")
    answers = []
    for question in questions[:n_questions]:
        result = client.query(index, question.question, method=queries[0], k=5)
        render_result(console, result)
        found = set(passage_texts(client.service, result)) & set(question.gold_passages)
        answers.append(SampleAnswer(result, question.answers[0], len(question.gold_passages),
                                    len(found)))
        console.print(f"      gold answer: {question.answers[0]!r}; gold passages in top 5: "
                      f"{len(found)}/{len(question.gold_passages)}")

    console.rule(f"3. Recall@k over all {len(questions)} questions: {' vs '.join(queries)}")
    report = evaluate(client.service, index, SAMPLE, questions, queries)
    console.print(render_table(report), markup=False)
    return QuickstartRun(index, job, units, answers, report)


def prepare_query_embedder(client: LocalClient, console: Console) -> None:
    """Export the embedding model to ONNX when that makes later queries start fast
    (``hopindex prepare-queries``): after the demo, a ``hopindex query`` on the sample
    loads ONNX Runtime instead of torch. Reused when it is there already."""
    embedder = client.embedder_to_prepare()
    if embedder is None or embedder.queries_prepared:
        return
    started = time.perf_counter()
    folder = embedder.prepare_queries()
    console.print(f"exported the embedding model to ONNX in {time.perf_counter() - started:.1f}s"
                  f" ({folder}): later queries load it instead of torch", markup=False)
