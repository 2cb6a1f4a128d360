"""``hopindex prepare-queries``, and the hint a slow-starting query prints about it.

A query process of the default embedder loads torch and the model (~5 s) unless the
model's ONNX export is cached in the data dir (backends/embedder/fast_start.py); this
command makes the export, once.
"""

from __future__ import annotations

import json
import time

import click

from hopindex.api.cli_support import handle_errors
from hopindex.backends.embedder.fast_start import PreparesQueries
from hopindex.backends.protocols import Embedder
from hopindex.methods.base import QueryResult
from hopindex.methods.registry import load_settings

# A load this long is worth a hint when preparing would shorten it.
SLOW_LOAD_S = 1.0


@click.command(name="prepare-queries")
@click.option("--json", "as_json", is_flag=True, help="One JSON object.")
@handle_errors
def prepare_queries(as_json: bool) -> None:
    """Make later queries start fast: export the embedding model to ONNX, once.

    With the default embedder (sentence-transformers://…), a query process that finds the
    model's fp32 ONNX export in HOPINDEX_DATA_DIR/models/onnx embeds the question with
    ONNX Runtime instead of loading torch: a fraction of a second instead of ~5 s, and
    the same vectors to float noise, so the same ranking. The export takes ~15 s; run
    again, this reuses it. `hopindex quickstart` does it after its ingest. Other
    embedders have nothing to prepare.
    """
    from hopindex.backends.registry import open_embedder
    from hopindex.core.logging import configure_logging

    settings = load_settings()
    configure_logging(settings)  # on stderr, as every command logs: stdout holds the JSON
    embedder = open_embedder(settings.embedder_url, settings)
    started = time.perf_counter()
    report: dict[str, object]
    if not isinstance(embedder, PreparesQueries):
        report = {"embedder": settings.embedder_url, "outcome": "nothing_to_prepare"}
        message = f"nothing to prepare: {settings.embedder_url} needs no export"
    else:
        reused = embedder.queries_prepared
        folder = embedder.prepare_queries()
        seconds = time.perf_counter() - started
        report = {"embedder": settings.embedder_url, "folder": str(folder),
                  "outcome": "reused" if reused else "exported",
                  "seconds": round(seconds, 3)}
        message = (f"the ONNX export is already in {folder}" if reused else
                   f"exported {embedder.model_name} to ONNX in {seconds:.1f} s: {folder}")
        message += "; queries load it instead of torch"
    click.echo(json.dumps(report) if as_json else message)


def slow_start_hint(embedder: Embedder | PreparesQueries | None,
                    result: QueryResult) -> str | None:
    """The stderr line after a query whose model load took long when preparing would
    have shortened it; None otherwise (``embedder`` None: nothing here to prepare, a
    server's embedder say)."""
    if result.embedder_load_s < SLOW_LOAD_S or not isinstance(embedder, PreparesQueries):
        return None
    if embedder.queries_prepared:
        return None
    return (f"note: loading the embedding model took {result.embedder_load_s:.1f} s of this "
            "command (not counted in the query's time); `hopindex prepare-queries` exports "
            "it to ONNX once, after which queries load it in a fraction of a second")
