"""``hopindex eval``: ingest a dataset's corpus when needed, compare methods, write reports."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from hopindex.api.service import Hopindex
from hopindex.core.models import IndexMethod, Stage
from hopindex.evaluation.datasets import DatasetFormat, corpus_from_questions, load_questions
from hopindex.evaluation.report import EvalReport, render_table, write_all
from hopindex.evaluation.runner import evaluate

_FORMATS = {"auto": DatasetFormat.AUTO, "hotpotqa": DatasetFormat.HOTPOTQA,
            "musique": DatasetFormat.MUSIQUE, "2wiki": DatasetFormat.TWOWIKI}


# What each kind of index is compared with by default: its own method and a baseline.
_DEFAULT_METHODS = {IndexMethod.EXTRACTIVE: ["naive", "extractive"],
                    IndexMethod.INDEXRAG: ["indexrag", "ircot"]}


def default_eval_methods(service: Hopindex, index: str) -> list[str]:
    info = service.backends.state.get_index(index)
    method = IndexMethod(info.method) if info is not None else IndexMethod.EXTRACTIVE
    return _DEFAULT_METHODS[method]


def run_eval_command(service: Hopindex, console: Console, *, index: str, dataset_path: Path,
                     corpus_paths: list[Path], fmt: str, methods: list[str], limit: int,
                     json_out: Path | None) -> EvalReport:
    dataset_format = _FORMATS[fmt]
    questions = load_questions(dataset_path, dataset_format)
    if limit:
        questions = questions[:limit]
    if service.count_documents(index) == 0:
        console.print(f"index {index!r} is empty: ingesting the corpus first")
        if corpus_paths:
            job = service.ingest_paths(index, corpus_paths)
        else:
            job = service.ingest_documents(index,
                                           corpus_from_questions(dataset_path, dataset_format))
        console.print(f"ingest job {job.job_id}: {job.state.value}, "
                      f"{job.counts[Stage.VALIDATE].done} documents valid, "
                      f"{len(job.errors)} errors")
    report = evaluate(service, index, dataset_path.name, questions,
                      methods or default_eval_methods(service, index))
    console.print(render_table(report), markup=False)
    if json_out is not None:
        base = json_out.with_suffix("") if json_out.suffix == ".json" else json_out
        base.parent.mkdir(parents=True, exist_ok=True)
        write_all(report, base)
        console.print(f"wrote {base}.json, {base}.md, {base}.png")
    return report
