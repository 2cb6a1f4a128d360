"""The ``hopindex`` command line."""

from __future__ import annotations

import json
from pathlib import Path

import click

from hopindex.api.budgets import COST_FLAG, TOKENS_FLAG, limits_from_flags
from hopindex.api.cli_context import open_client, open_local_client
from hopindex.api.cli_documents import document
from hopindex.api.cli_embedder import prepare_queries, slow_start_hint
from hopindex.api.cli_errors import ErrorReportingGroup
from hopindex.api.cli_index_jobs import rebuild, repair
from hopindex.api.cli_indexes import indexes
from hopindex.api.cli_jobs import jobs
from hopindex.api.cli_llm_mode import llm_mode_option
from hopindex.api.cli_mcp import mcp
from hopindex.api.cli_methods import (
    MethodName,
    RegistryHelpOption,
    index_method_help,
    param_help,
    query_method_help,
    shown_method_settings,
)
from hopindex.api.cli_operations import operation_groups
from hopindex.api.cli_processes import api_key, beat, serve, worker
from hopindex.api.cli_support import console, handle_errors, print_result, run_and_report
from hopindex.api.cli_webhooks import webhooks
from hopindex.core.errors import InvalidInputError
from hopindex.methods.base import MAX_K, FusionMode, QueryOptions, Retrieval
from hopindex.methods.registry import index_method_names, load_settings, query_method_names
from hopindex.readers.options import Reading, SplitBy

# Narrower than this no table keeps a column readable.
MIN_WIDTH = 20


@click.group(cls=ErrorReportingGroup)
@click.version_option(package_name="hopindex")
@click.option("--api", "api_url", default=None, metavar="URL",
              help="Drive a hopindex server over its HTTP API (default: HOPINDEX_API_URL): "
                   "ingest, query, document, export, jobs, events, delete, repair, rebuild, "
                   "indexes, links and webhooks go through it, with the key in "
                   "HOPINDEX_API_KEY. Without it, those that open the engines go through "
                   "the `hopindex serve` using the data dir, if one runs.")
@click.option("--width", type=click.IntRange(min=MIN_WIDTH), default=None, metavar="N",
              help="Lay tables (and `query --full` passages) out at N columns. Default: "
                   "the terminal's width; when stdout is not a terminal (a pipe, a file), "
                   "lines are not wrapped and tables are as wide as their cells.")
def main(api_url: str | None, width: int | None) -> None:
    """hopindex: multi-hop retrieval with cross-document reasoning done at index time.

    Settings come from HOPINDEX_* environment variables (HOPINDEX_DATA_DIR, default
    ./.hopindex).

    Exit codes: 0 ok, 1 internal error, 2 usage, 3 partial success (some
    documents failed, the rest landed), 65 bad input, 66 not found, 69 service
    unavailable, 75 try again later (index busy, job cancelled, paused on its LLM
    budget or waiting on the provider's batches), 77 API key refused, 78 configuration,
    130 interrupted. Errors go to stderr as one line, or as one JSON object with --json.
    """
    console.configure(width)


@main.command()
@click.option("--index", default="sample", show_default=True, help="Index to build.")
@click.option("--questions", "n_questions", default=3, show_default=True,
              help="Sample questions whose passages are printed.")
@click.option("--json", "as_json", is_flag=True,
              help="Print only one JSON object: the ingest job, the units, the sample "
                   "questions' answers and the Recall@k report.")
@handle_errors
def quickstart(index: str, n_questions: int, as_json: bool) -> None:
    """Ingest the bundled HotpotQA sample, answer sample questions, compare methods."""
    from rich.console import Console

    from hopindex.api.quickstart import run_quickstart

    # With --json the walk-through is not shown: stdout holds the JSON alone.
    shown = Console(quiet=True) if as_json else console
    with open_local_client() as client:
        run = run_quickstart(client, shown, index=index, n_questions=n_questions)
    if as_json:
        click.echo(json.dumps(run.as_dict(), indent=2))


@main.command()
@click.option("--index", required=True, help="Index name (created when new).")
@click.option("--quiet", is_flag=True, help="No progress bar.")
@click.option("--json", "as_json", is_flag=True, help="Print the job record as JSON.")
@click.option("--method", type=MethodName(index_method_names), default=None,
              cls=RegistryHelpOption, describe=index_method_help)
@click.option("--no-wait", is_flag=True,
              help="With workers (HOPINDEX_BROKER_URL): print the job id and return; follow "
                   "it later with `hopindex jobs JOB_ID --follow` or `hopindex events`. "
                   "Without: exit 75 at once, instead of waiting, when another job of the "
                   "index has not ended.")
@click.option("--dry-run", is_flag=True,
              help="Plan the ingest without running it: documents new, changed, unchanged "
                   "and invalid, and each phase's LLM calls and tokens. Calls no LLM and "
                   "writes nothing.")
@click.option(TOKENS_FLAG, "max_llm_tokens", default=None, metavar="N",
              help="Pause the job before an LLM call would take its tokens (prompt and "
                   "completion) past N; `hopindex jobs resume JOB_ID` continues it. "
                   "Replaces the index's default token limit (`indexes budget`).")
@click.option(COST_FLAG, "max_cost", default=None, metavar="X",
              help="Pause the job before an LLM call would take its cost past X, at the "
                   "prices set (HOPINDEX_LLM_PRICE_*). Replaces the index's default cost "
                   "limit.")
@llm_mode_option
@click.option("--split-by", type=click.Choice([s.value for s in SplitBy]),
              default=SplitBy.SECTION.value, show_default=True,
              help="How PDF, HTML, DOCX and Markdown files become documents: one per "
                   "top-level section (id PATH#section-slug, titled by its heading), the "
                   "whole file, or one per page (PDF).")
@click.option("--include", multiple=True, metavar="GLOB",
              help="Read only a folder's files whose path inside it matches (repeatable; "
                   "'*' crosses folders: '*.pdf').")
@click.option("--exclude", multiple=True, metavar="GLOB",
              help="Skip a folder's files whose path inside it matches (repeatable).")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@handle_errors
def ingest(index: str, quiet: bool, as_json: bool, method: str | None, no_wait: bool,
           dry_run: bool, max_llm_tokens: str | None, max_cost: str | None,
           llm_mode: str | None, split_by: str, include: tuple[str, ...],
           exclude: tuple[str, ...], paths: tuple[Path, ...]) -> None:
    """Ingest files and folders into INDEX: PDF (text layer), HTML, DOCX, Markdown and
    text files, each recognised by its content and split into documents by its
    structure, and JSON/JSONL records (also gzipped: .jsonl.gz, .ndjson.gz, .json.gz).

    Unchanged documents are skipped; changed ones recompute only what they touch; a
    changed file replaces its documents (its sections gone are deleted). Exits 3 when
    some documents or files failed (the rest are ingested; the job says which and
    why), 65 when none could be used. With --dry-run, 65 when none could be used.

    A job whose LLM budget runs out pauses: without workers this command says so,
    prints the command that resumes it, and waits (the job goes on here once resumed
    from another shell); with workers or --api it stops following and exits 75.
    """
    limits = limits_from_flags(max_llm_tokens, max_cost)
    reading = Reading(split_by=SplitBy(split_by), include=include, exclude=exclude)
    if dry_run:
        _dry_run(index, method, paths, reading, llm_mode, as_json=as_json)
        return
    with open_client(engines=True) as client:
        run_and_report(client, index,
                       lambda announce: client.ingest(index, list(paths), method=method,
                                                      wait=not no_wait, limits=limits,
                                                      reading=reading, llm_mode=llm_mode,
                                                      announce=announce),
                       quiet=quiet, as_json=as_json, no_wait=no_wait)


def _dry_run(index: str, method: str | None, paths: tuple[Path, ...], reading: Reading,
             llm_mode: str | None, *, as_json: bool) -> None:
    from hopindex.api.render_plan import print_plan

    # Here, writes nothing on disk: not even the state file of a data dir not made yet.
    with open_client(engines=True, planning=True) as client:
        plan = client.plan_ingest(index, list(paths), method=method, reading=reading,
                                  llm_mode=llm_mode).as_dict()
    print_plan(plan, as_json=as_json)
    documents = plan["documents"]
    usable = documents["new"] + documents["changed"] + documents["unchanged"]
    if plan["errors"] and not usable:
        first = plan["errors"][0]
        raise InvalidInputError(f"no document could be used: {first['item']}: "
                                f"{first['reason']}", where=first.get("where") or "paths")


@main.command()
@click.option("--index", required=True)
@click.option("--method", type=MethodName(query_method_names), default=None,
              cls=RegistryHelpOption, describe=query_method_help)
@click.option("--k", default=5, show_default=True, type=click.IntRange(1, MAX_K))
@click.option("--retrieval", type=click.Choice([r.value for r in Retrieval]), default=None,
              help="Override the method's retrieval (dense, keyword, hybrid).")
@click.option("--fusion", type=click.Choice([f.value for f in FusionMode]),
              default=FusionMode.RRF.value, show_default=True)
@click.option("--dense-weight", default=1.0, show_default=True, type=click.FloatRange(min=0),
              help="Weight of the dense ranking in hybrid fusion.")
@click.option("--keyword-weight", default=1.0, show_default=True, type=click.FloatRange(min=0),
              help="Weight of the BM25 ranking in hybrid fusion (0: dense only).")
@click.option("--json", "as_json", is_flag=True, help="Print the full result as JSON.")
@click.option("--param", "params", multiple=True, metavar="KEY=VALUE",
              cls=RegistryHelpOption, describe=param_help)
@click.option("--trace", is_flag=True,
              help="Also print the method's decision trace (what it found and decided at "
                   "each step).")
@click.option("--full", is_flag=True,
              help="Print each passage's whole text, wrapped to the width, instead of its "
                   "first 100 characters.")
@click.option("--stream", is_flag=True,
              help="Print the passages as soon as they are found, then the answer as it is "
                   "written; with --json, one JSON object per event and line.")
@click.argument("question")
@handle_errors
def query(index: str, method: str | None, k: int, retrieval: str | None, fusion: str,
          dense_weight: float, keyword_weight: float, as_json: bool,
          params: tuple[str, ...], trace: bool, full: bool, stream: bool,
          question: str) -> None:
    """Answer QUESTION from INDEX: ranked passages with provenance."""
    from hopindex.core.errors import InvalidInputError
    from hopindex.evaluation.specs import parse_param_pairs

    try:
        pairs = parse_param_pairs(params)
    except InvalidInputError as exc:  # the command line's shape: a usage error
        raise click.BadParameter(str(exc).removeprefix(f"{exc.where}: "),
                                 param_hint="--param") from None
    options = QueryOptions(k=k, retrieval=Retrieval(retrieval) if retrieval else None,
                           fusion=FusionMode(fusion), dense_weight=dense_weight,
                           keyword_weight=keyword_weight, params=pairs)
    with open_client(engines=True) as client:
        if stream:
            from hopindex.api.render_stream import print_stream

            print_stream(console, client.query(index, question, method=method, k=k,
                                               options=options, stream=True),
                         as_json=as_json, trace=trace, full=full)
            return
        result = client.query(index, question, method=method, k=k, options=options)
        hint = slow_start_hint(client.embedder_to_prepare(), result)
    print_result(result, as_json=as_json, trace=trace, full=full)
    if hint is not None and not as_json:
        click.echo(hint, err=True)


@main.command()
@click.option("--index", required=True)
@click.option("--quiet", is_flag=True, help="No progress bar.")
@click.option("--json", "as_json", is_flag=True, help="Print the job record as JSON.")
@click.option("--no-wait", is_flag=True,
              help="With workers (HOPINDEX_BROKER_URL): print the job id and return; follow "
                   "it later with `hopindex jobs JOB_ID --follow`. Without: exit 75 at "
                   "once, instead of waiting, when another job of the index has not ended.")
@click.argument("doc_ids", nargs=-1, required=True)
@handle_errors
def delete(index: str, quiet: bool, as_json: bool, no_wait: bool,
           doc_ids: tuple[str, ...]) -> None:
    """Delete documents by id; what the index built from them is rebuilt.

    Ids that name no document are listed on the job, which still succeeds. Exits 66
    when no id names a document (nothing was deleted) or there is no such index, 3
    when some ids name none (the others are deleted).
    """
    with open_client(engines=True) as client:
        run_and_report(client, index,
                       lambda announce: client.delete_documents(index, list(doc_ids),
                                                                wait=not no_wait,
                                                                announce=announce),
                       quiet=quiet, as_json=as_json, no_wait=no_wait)


@main.command()
@click.option("--json", "as_json", is_flag=True, help="One JSON object.")
@handle_errors
def config(as_json: bool) -> None:
    """Print the effective settings (environment and defaults), secrets masked, then
    each method's own (HOPINDEX_<METHOD>_*).

    Every HOPINDEX_* variable is checked first: a bad value or an unknown name stops
    here with the variable, the value and what is accepted.
    """
    settings = load_settings()
    methods = shown_method_settings(settings)
    shown = {**{k: v for k, v in settings.shown().items() if k not in methods}, **methods}
    if as_json:
        click.echo(json.dumps(shown, indent=2))
        return
    for key, value in shown.items():
        click.echo(f"{key}={value}")


@main.command(name="export")
@click.option("--index", required=True)
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path))
@handle_errors
def export_command(index: str, path: Path) -> None:
    """Write INDEX to PATH (JSON lines; .gz compresses): documents, units with their
    vectors, entity mentions and the methods' groups and records, for `hopindex import`
    on other backends. With --api, the server's index, written here.

    Exits 66 when there is no such index, 75 while one of its jobs runs."""
    with open_client(engines=True) as client:
        summary = client.indexes.export_index(index, path)
    click.echo(json.dumps(summary.as_dict()))


@main.command(name="import")
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@handle_errors
def import_command(path: Path) -> None:
    """Recreate an exported index in the configured backends (no re-embedding, no LLM
    calls); the index must not exist there yet. With --api, on the server."""
    with open_client(engines=True) as client:
        summary = client.indexes.import_index(path)
    click.echo(json.dumps(summary.as_dict()))


@main.command()
@click.option("--index", default=None, help="Only this index's events.")
@click.option("--from", "from_id", default=None,
              help="Resume after this event id (as printed); default: from the oldest kept.")
@click.option("--follow", is_flag=True, help="Keep waiting for new events (Ctrl-C stops).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line.")
@handle_errors
def events(index: str | None, from_id: str | None, follow: bool, as_json: bool) -> None:
    """Job and index events (job.started, job.progress, job.failed, job.cancelled,
    index.ready) from the durable event log."""
    from hopindex.api.events import render_event

    with open_client() as client:
        try:
            for event in client.events.iterate_events(index, from_id, follow=follow):
                click.echo(json.dumps(event.as_dict()) if as_json else render_event(event))
        except KeyboardInterrupt:
            return


@main.command(name="eval")
@click.option("--index", required=True,
              help="Index to evaluate; with --index-method, the base of one index per "
                   "method, named INDEX-METHOD.")
@click.option("--dataset", "dataset_path", required=True, type=click.Path(path_type=Path),
              help="Questions file: HotpotQA, MuSiQue or 2Wiki records, as a JSON list "
                   "or JSON Lines (the fields: docs/evaluation.md).")
@click.option("--corpus", "corpus_paths", multiple=True, type=click.Path(path_type=Path),
              help="Corpus ingested into an empty or new index (default: the questions' "
                   "own contexts). An index holding documents is reused as it is.")
@click.option("--format", "fmt", default="auto", show_default=True,
              type=click.Choice(["auto", "hotpotqa", "musique", "2wiki"]))
@click.option("--index-method", "index_methods", multiple=True,
              type=MethodName(index_method_names),
              help="Repeat to compare index methods: one index each over the same "
                   "documents, each with its method's default query methods, and the "
                   "build cost (wall time, LLM calls, tokens, cache hits per phase) in "
                   "the report.")
@click.option("--method", "methods", multiple=True,
              help="Repeat to compare query methods (default: the index method's own "
                   "default ones); one that cannot read an index is skipped there, noted "
                   "in the report. METHOD:KEY=VALUE[,...] sets parameters; a method with "
                   "comparison variants, named alone, runs each (METHOD:VARIANT picks one).")
@click.option("--limit", default=0, help="Only the first N questions (0: all).")
@click.option("--json", "json_out", type=click.Path(path_type=Path), default=None,
              help="Write the report here (.json; .md and .png beside it).")
@click.option("--curve", "curve_out", type=click.Path(path_type=Path), default=None,
              help="Write a PNG of cumulative LLM tokens (index build + N queries) against "
                   "N, one line per method, marking where one pays back its build.")
@click.option("--curve-queries", type=click.IntRange(min=1), default=None,
              help="How far --curve runs, in queries (default: past the last break-even "
                   "point, at least 1000).")
@click.option("--match", "match", type=click.Choice(["text", "title"]), default="text",
              show_default=True,
              help="How a retrieved document matches a gold passage: by its title and text "
                   "(a corpus ingested as records), or by title alone (a corpus ingested "
                   "as PDF, DOCX or HTML files, whose text is the file's text layer).")
@handle_errors
def eval_command(index: str, dataset_path: Path, corpus_paths: tuple[Path, ...], fmt: str,
                 index_methods: tuple[str, ...], methods: tuple[str, ...], limit: int,
                 json_out: Path | None, curve_out: Path | None,
                 curve_queries: int | None, match: str) -> None:
    """Recall@{1,2,5,10,20}, latency, and for LLM methods EM/F1/Acc and LLM cost per query;
    with --index-method, per index method too, beside what building its index cost."""
    from hopindex.api.evaluate import run_eval_command
    from hopindex.evaluation.runner import GoldMatch

    with open_local_client() as client:
        run_eval_command(client.service, console, index=index, dataset_path=dataset_path,
                         corpus_paths=list(corpus_paths), fmt=fmt,
                         methods=list(methods), limit=limit,
                         json_out=json_out, index_methods=list(index_methods),
                         curve_out=curve_out, curve_queries=curve_queries,
                         match=GoldMatch(match))


for _command in (document, jobs, repair, rebuild, indexes, webhooks, worker, beat, serve,
                 api_key, prepare_queries, mcp):
    main.add_command(_command)
# The admin operations methods register (`links list|reject` of kgbridge indexes), after
# the CLI's own commands so that none can take a built-in command's name.
for _command in operation_groups(taken=main.commands):
    main.add_command(_command)
