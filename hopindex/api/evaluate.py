"""``hopindex eval``: build or reuse one index per index method, compare query methods on
each, write one report with every index's build cost."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from hopindex.api.service import Hopindex
from hopindex.core.models import Job
from hopindex.evaluation.compare import IngestCorpus, compare_indexes, plan_targets
from hopindex.evaluation.datasets import DatasetFormat, corpus_from_questions, load_questions
from hopindex.evaluation.report import EvalReport, render_table, write_all
from hopindex.readers import RawDocument

_FORMATS = {"auto": DatasetFormat.AUTO, "hotpotqa": DatasetFormat.HOTPOTQA,
            "musique": DatasetFormat.MUSIQUE, "2wiki": DatasetFormat.TWOWIKI}


def corpus_ingest(service: Hopindex, dataset_path: Path, dataset_format: DatasetFormat,
                  corpus_paths: list[Path]) -> IngestCorpus:
    """Ingest the given corpus files, or else the questions' own contexts (read once for
    all the run's indexes)."""
    documents: list[RawDocument] = []

    def ingest(index: str, index_method: str) -> Job:
        if corpus_paths:
            return service.ingest_paths(index, corpus_paths, method=index_method)
        if not documents:
            documents.extend(corpus_from_questions(dataset_path, dataset_format))
        return service.ingest_documents(index, documents, method=index_method)

    return ingest


def run_eval_command(service: Hopindex, console: Console, *, index: str, dataset_path: Path,
                     corpus_paths: list[Path], fmt: str, methods: list[str], limit: int,
                     json_out: Path | None, index_methods: list[str] | None = None,
                     ) -> EvalReport:
    """Without ``index_methods``: ``index`` itself, with its own method's default query
    methods. With them: one index ``<index>-<method>`` per index method."""
    dataset_format = _FORMATS[fmt]
    questions = load_questions(dataset_path, dataset_format)
    if limit:
        questions = questions[:limit]
    targets = plan_targets(service, index, index_methods or [])
    report = compare_indexes(
        service, targets, base=index, dataset=dataset_path.name, questions=questions,
        methods=methods, ingest=corpus_ingest(service, dataset_path, dataset_format,
                                              corpus_paths),
        notify=lambda message: console.print(message, markup=False))
    console.print(render_table(report), markup=False)
    if json_out is not None:
        base = json_out.with_suffix("") if json_out.suffix == ".json" else json_out
        base.parent.mkdir(parents=True, exist_ok=True)
        write_all(report, base)
        console.print(f"wrote {base}.json, {base}.md, {base}.png")
    return report
