"""``hopindex document``: one document of an index by id, locally or through a server
(``--api``), printed alike either way."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import click

from hopindex.api.cli_context import open_client
from hopindex.api.cli_support import handle_errors
from hopindex.core.citations import Citation

if TYPE_CHECKING:
    from hopindex.api.client.models import DocumentView


@click.command()
@click.option("--index", required=True, help="The index holding the document.")
@click.option("--json", "as_json", is_flag=True,
              help="One JSON object, the fields of GET /v1/indexes/NAME/documents?id=ID: "
                   "doc_id, index, title, text, content_hash, metadata, citation.")
@click.argument("doc_id")
@handle_errors
def document(index: str, as_json: bool, doc_id: str) -> None:
    """Print document DOC_ID of INDEX as stored: its title, where it is in its file
    (file, pages, section; for a PDF, HTML, DOCX or Markdown file), then its text.

    DOC_ID is the id a query shows (`doc ...`): a file's section is PATH#section-slug.
    Exits 66 when there is no such index or document.
    """
    with open_client() as client:
        found = client.get_document(index, doc_id)
    if as_json:
        click.echo(json.dumps(found.as_dict(), indent=2))
        return
    click.echo(_shown(found))


def _shown(found: DocumentView) -> str:
    head = [found.title] if found.title else []
    if found.citation is not None:
        head.append(f"[{Citation.from_dict(found.citation.model_dump()).label()}]")
    return "\n".join([*head, "", found.text] if head else [found.text])
