"""The ``hopindex`` command line."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click
from rich.console import Console

from hopindex.core.errors import HopindexError
from hopindex.core.models import IndexMethod, Job, Stage
from hopindex.core.settings import Settings
from hopindex.methods.base import MAX_K, QueryOptions, Retrieval
from hopindex.methods.retrieval.fusion import FusionMode

if TYPE_CHECKING:
    from hopindex.api.service import Hopindex

F = TypeVar("F", bound=Callable[..., Any])

console = Console()
err_console = Console(stderr=True)

EXIT_INPUT = 2
EXIT_PARTIAL = 3


def _service() -> Hopindex:
    # Imported late so `hopindex --help` starts fast without loading torch.
    from hopindex.api.service import Hopindex

    return Hopindex(Settings.from_env())


def handle_errors(func: F) -> F:
    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except HopindexError as exc:
            err_console.print(f"error: {exc}", markup=False)
            sys.exit(EXIT_INPUT)

    return wrapper  # type: ignore[return-value]  # wraps keeps the signature


def _report_job(job: Job, *, as_json: bool) -> None:
    """Print a finished job; exit 3 when some documents failed (the rest landed)."""
    from hopindex.api.render import render_job

    if as_json:
        click.echo(json.dumps(job.as_dict(), indent=2))
    else:
        render_job(console, job)
    if job.errors:
        sys.exit(EXIT_PARTIAL)


@click.group()
@click.version_option(package_name="hopindex")
def main() -> None:
    """hopindex: multi-hop retrieval with cross-document reasoning done at index time.

    Settings come from HOPINDEX_* environment variables (HOPINDEX_DATA_DIR, default
    ./.hopindex).
    """


@main.command()
@click.option("--index", default="sample", show_default=True, help="Index to build.")
@click.option("--questions", "n_questions", default=3, show_default=True,
              help="Sample questions whose passages are printed.")
@handle_errors
def quickstart(index: str, n_questions: int) -> None:
    """Ingest the bundled HotpotQA sample, answer sample questions, compare methods."""
    from hopindex.api.quickstart import run_quickstart

    with _service() as service:
        run_quickstart(service, console, index=index, n_questions=n_questions)


@main.command()
@click.option("--index", required=True, help="Index name (created when new).")
@click.option("--quiet", is_flag=True, help="No progress bar.")
@click.option("--json", "as_json", is_flag=True, help="Print the job record as JSON.")
@click.option("--method", type=click.Choice([m.value for m in IndexMethod]), default=None,
              help="How a new index is built: indexrag (LLM; the default when "
                   "HOPINDEX_LLM_MODEL is set) or extractive (no LLM). An existing index "
                   "keeps its method.")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@handle_errors
def ingest(index: str, quiet: bool, as_json: bool, method: str | None,
           paths: tuple[Path, ...]) -> None:
    """Ingest JSONL/JSON files or folders of .txt/.md files into INDEX.

    Unchanged documents are skipped; changed ones recompute only what they touch.
    Exits 3 when some documents failed (the rest are ingested; the job says why).
    """
    from hopindex.api.progress import follow_newest_job

    with _service() as service:
        with follow_newest_job(service.backends.state, index, err_console,
                               enabled=not (quiet or as_json)):
            job = service.ingest_paths(index, list(paths), method=method)
        _report_job(job, as_json=as_json)


@main.command()
@click.option("--index", required=True)
@click.option("--method", default=None,
              help="naive, extractive, indexrag or ircot (default: the index's own method).")
@click.option("--k", default=5, show_default=True, type=click.IntRange(1, MAX_K))
@click.option("--retrieval", type=click.Choice([r.value for r in Retrieval]), default=None,
              help="Override the method's retrieval (dense, keyword, hybrid).")
@click.option("--fusion", type=click.Choice([f.value for f in FusionMode]),
              default=FusionMode.RRF.value, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the full result as JSON.")
@click.argument("question")
@handle_errors
def query(index: str, method: str | None, k: int, retrieval: str | None, fusion: str, as_json: bool,
          question: str) -> None:
    """Answer QUESTION from INDEX: ranked passages with provenance."""
    from hopindex.api.render import render_result

    options = QueryOptions(k=k, retrieval=Retrieval(retrieval) if retrieval else None,
                           fusion=FusionMode(fusion))
    with _service() as service:
        result = service.query(index, question, method=method, options=options)
        if as_json:
            click.echo(json.dumps(result.as_dict(), indent=2))
        else:
            render_result(console, result)


@main.command()
@click.option("--index", required=True)
@click.option("--json", "as_json", is_flag=True)
@click.argument("doc_ids", nargs=-1, required=True)
@handle_errors
def delete(index: str, as_json: bool, doc_ids: tuple[str, ...]) -> None:
    """Delete documents by id; bridges they touched are recomputed."""
    with _service() as service:
        _report_job(service.delete_documents(index, list(doc_ids)), as_json=as_json)


@main.command()
@click.option("--index", default=None, help="Only this index's jobs.")
@click.option("--limit", default=20, show_default=True)
@click.option("--json", "as_json", is_flag=True)
@click.argument("job_id", required=False)
@handle_errors
def jobs(index: str | None, limit: int, as_json: bool, job_id: str | None) -> None:
    """List jobs, or show one job's state, counts per stage and errors."""
    from hopindex.api.render import render_job

    with _service() as service:
        if job_id:
            job = service.get_job(job_id)
            if as_json:
                click.echo(json.dumps(job.as_dict(), indent=2))
            else:
                render_job(console, job, max_errors=1000)
            return
        found = service.list_jobs(index, limit)
        if as_json:
            click.echo(json.dumps([j.as_dict() for j in found], indent=2))
            return
        for job in found:
            stage1 = job.counts[Stage.STAGE1]
            console.print(f"{job.job_id}  {job.kind.value:<6} {job.index:<16} "
                          f"{job.state.value:<10} stage1 {stage1.done}/{stage1.total} "
                          f"errors={len(job.errors)}", markup=False)


@main.command(name="eval")
@click.option("--index", required=True)
@click.option("--dataset", "dataset_path", required=True, type=click.Path(path_type=Path),
              help="Questions file (HotpotQA, MuSiQue or 2Wiki format).")
@click.option("--corpus", "corpus_paths", multiple=True, type=click.Path(path_type=Path),
              help="Corpus ingested when the index is empty (default: the questions' "
                   "own contexts).")
@click.option("--format", "fmt", default="auto", show_default=True,
              type=click.Choice(["auto", "hotpotqa", "musique", "2wiki"]))
@click.option("--method", "methods", multiple=True,
              help="Repeat to compare methods (default: naive and extractive on an extractive "
                   "index, indexrag and ircot on an IndexRAG one).")
@click.option("--limit", default=0, help="Only the first N questions (0: all).")
@click.option("--json", "json_out", type=click.Path(path_type=Path), default=None,
              help="Write the report here (.json; .md and .png beside it).")
@handle_errors
def eval_command(index: str, dataset_path: Path, corpus_paths: tuple[Path, ...], fmt: str,
                 methods: tuple[str, ...], limit: int, json_out: Path | None) -> None:
    """Recall@{1,2,5,10,20}, latency, and for LLM methods EM/F1/Acc and LLM cost per query."""
    from hopindex.api.evaluate import run_eval_command

    with _service() as service:
        run_eval_command(service, console, index=index, dataset_path=dataset_path,
                         corpus_paths=list(corpus_paths), fmt=fmt,
                         methods=list(methods), limit=limit,
                         json_out=json_out)
