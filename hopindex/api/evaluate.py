"""``hopindex eval``: build or reuse one index per index method, compare query methods on
each, write one report with every index's build cost."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from hopindex.api.service import Hopindex
from hopindex.core.errors import InvalidInputError
from hopindex.core.models import Job
from hopindex.evaluation.charts import write_curve_chart
from hopindex.evaluation.compare import IngestCorpus, compare_indexes, plan_targets
from hopindex.evaluation.datasets import DatasetFormat, corpus_from_questions, load_questions
from hopindex.evaluation.report import EvalReport, render_table
from hopindex.evaluation.report_files import write_all
from hopindex.evaluation.runner import GoldMatch
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


def _check_curve_options(curve_out: Path | None, curve_queries: int | None) -> None:
    # Checked before the run: a bad option must not cost an evaluation's time.
    if curve_out is not None and curve_out.suffix.lower() != ".png":
        raise InvalidInputError(f"the curve is written as PNG: name a .png file, got "
                                f"{str(curve_out)!r}", where="--curve")
    if curve_queries is not None and curve_out is None:
        raise InvalidInputError("sets how far the --curve chart runs: give --curve too",
                                where="--curve-queries")


def run_eval_command(service: Hopindex, console: Console, *, index: str, dataset_path: Path,
                     corpus_paths: list[Path], fmt: str, methods: list[str], limit: int,
                     json_out: Path | None, index_methods: list[str] | None = None,
                     curve_out: Path | None = None, curve_queries: int | None = None,
                     match: GoldMatch = GoldMatch.TEXT) -> EvalReport:
    """Without ``index_methods``: ``index`` itself, with its own method's default query
    methods. With them: one index ``<index>-<method>`` per index method. ``curve_out``:
    a PNG of cumulative tokens up to ``curve_queries`` queries (None: the default).
    ``match``: gold passages by text (records) or by title (a corpus read from files)."""
    _check_curve_options(curve_out, curve_queries)
    dataset_format = _FORMATS[fmt]
    questions = load_questions(dataset_path, dataset_format)
    if limit:
        questions = questions[:limit]
    targets = plan_targets(service, index, index_methods or [])
    report = compare_indexes(
        service, targets, base=index, dataset=dataset_path.name, questions=questions,
        methods=methods, ingest=corpus_ingest(service, dataset_path, dataset_format,
                                              corpus_paths),
        notify=lambda message: console.print(message, markup=False), match=match)
    console.print(render_table(report), markup=False)
    if json_out is not None:
        base = json_out.with_suffix("") if json_out.suffix == ".json" else json_out
        base.parent.mkdir(parents=True, exist_ok=True)
        write_all(report, base)
        console.print(f"wrote {base}.json, {base}.md, {base}.png")
    if curve_out is not None:
        horizon = write_curve_chart(report, curve_out, horizon=curve_queries)
        # soft_wrap: a path broken across lines cannot be copied.
        console.print(f"wrote {curve_out} (cumulative tokens, 0 to {horizon:,} queries)",
                      markup=False, soft_wrap=True)
    return report
