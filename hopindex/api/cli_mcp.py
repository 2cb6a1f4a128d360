"""``hopindex mcp``: the MCP server on stdio, for an agent's host to start."""

from __future__ import annotations

import click

from hopindex.api.cli_context import open_client
from hopindex.api.cli_processes import json_logs_option, process_settings
from hopindex.api.cli_support import handle_errors


@click.command()
@click.option("--api", "api_url", default=None, metavar="URL",
              help="Serve the tools over the hopindex server at URL, with the key in "
                   "HOPINDEX_API_KEY (default: HOPINDEX_API_URL; else the data dir here). "
                   "ingest_paths then uploads the files it is given.")
@json_logs_option
@handle_errors
def mcp(api_url: str | None, as_json: bool) -> None:
    """Serve hopindex's tools to an AI agent over the Model Context Protocol, on
    stdin/stdout: the agent's host (Claude Desktop, Cursor, VS Code, ...) starts this
    command and talks to it; nothing else writes to stdout, and the log goes to stderr.

    Tools: search, answer, list_indexes, describe_index, ingest_text, ingest_paths,
    job_status, wait_for_job, delete_documents; resources: each index's description
    and a document by id (docs/mcp.md). Settings come from the environment, as for
    every command (HOPINDEX_DATA_DIR, the LLM's settings, ...). On a data dir a
    running `hopindex serve` uses, the tools go through that server.
    """
    from hopindex.api.mcp.stdio import serve_stdio

    settings = process_settings(as_json)
    with open_client(engines=True, api_url=api_url) as client:
        serve_stdio(client, settings)
