"""The rules the MCP server applies whatever the transport: which tools a caller is
offered, how a refusal reads, what a resource URI names, and that a fault of the server
reaches the model as ``internal`` without its details."""

from __future__ import annotations

import pytest
import structlog

from hopindex.api.access import LOCAL_PRINCIPAL, Access, Principal
from hopindex.api.mcp.arguments import SearchArguments
from hopindex.api.mcp.server import document_uri, parse_uri, tool_error
from hopindex.api.mcp.tools import Door, find_tool, offered_tools
from hopindex.core.errors import (
    AccessDeniedError,
    BackendError,
    InvalidInputError,
    JobSlotBusyError,
    NotFoundError,
)

READER = Principal(name="reader", access=Access.READ, indexes=frozenset({"a"}))


def test_the_tools_offered_depend_on_the_door_and_the_key() -> None:
    """stdio offers every tool; HTTP never the one that reads paths; a read key gets no
    tool that writes, and asking for one by name is refused as the API refuses it."""
    assert "ingest_paths" in {t.name for t in offered_tools(Door.STDIO, LOCAL_PRINCIPAL)}
    assert "ingest_paths" not in {t.name for t in offered_tools(Door.HTTP, LOCAL_PRINCIPAL)}
    assert {t.name for t in offered_tools(Door.HTTP, READER)} == {
        "search", "answer", "list_indexes", "describe_index", "job_status", "wait_for_job"}
    with pytest.raises(AccessDeniedError, match="read-only; this request needs write"):
        find_tool("ingest_text", Door.HTTP, READER)
    with pytest.raises(InvalidInputError, match="unknown tool 'ingest_paths'") as unknown:
        find_tool("ingest_paths", Door.HTTP, LOCAL_PRINCIPAL)
    assert unknown.value.where == "name"


@pytest.mark.parametrize("doc_id", ["plain", "notes/2024 #1?a=b&c=%20", "é/ü"])
def test_a_document_uri_names_any_document_id(doc_id: str) -> None:
    assert parse_uri(document_uri("idx", doc_id)) == ("idx", doc_id)
    assert parse_uri("hopindex://indexes/idx") == ("idx", None)


@pytest.mark.parametrize("uri", ["file:///etc/passwd", "hopindex://indexes/idx/units/u",
                                 "hopindex://indexes/idx/documents/"])
def test_other_uris_are_refused_naming_the_uri(uri: str) -> None:
    with pytest.raises(InvalidInputError) as refused:
        parse_uri(uri)
    assert refused.value.where == "uri"


def test_refusals_read_as_code_and_message_with_the_field() -> None:
    """The text a model reads is ``CODE: MESSAGE``; the structured error adds the field
    and whether retrying may help (a 429's busy slot does)."""
    missing = tool_error(NotFoundError("no document 'x' in index 'i'", where="doc_id"))
    assert missing.is_error
    assert missing.content[0].text == "not_found: no document 'x' in index 'i'"  # type: ignore[union-attr]
    assert missing.structured_content == {"error": {
        "code": "not_found", "message": "no document 'x' in index 'i'", "field": "doc_id",
        "retryable": False}}
    busy = tool_error(JobSlotBusyError("a job runs"))
    assert busy.structured_content["error"]["retryable"] is True  # type: ignore[index]


def test_a_server_fault_is_internal_and_logged_not_shown() -> None:
    """A failing store, or a bug, reaches the model as ``internal`` without its message
    (which may name hosts or paths); the log has it, with its traceback."""
    faults = (BackendError("qdrant at 10.0.0.5:6333 refused"), KeyError("bug"))
    with structlog.testing.capture_logs() as entries:
        errors = [tool_error(f).structured_content["error"]  # type: ignore[index]
                  for f in faults]
    for error in errors:
        assert error["code"] == "internal" and "10.0.0.5" not in error["message"]
    logged = [e for e in entries if e["event"] == "mcp_call_failed"]
    assert [e["error_type"] for e in logged] == ["BackendError", "KeyError"]
    assert "10.0.0.5" in logged[0]["error"]
    assert logged[1]["traceback"].rstrip().endswith("KeyError: 'bug'")


def test_an_argument_is_named_once_in_its_refusal() -> None:
    """A refusal whose own check names the field (an index name) is not prefixed twice;
    a question over the server's limit is refused with the limit's variable."""
    with pytest.raises(InvalidInputError) as bad_name:
        SearchArguments.read({"question": "q", "index": "Bad Name"}, 100)
    assert str(bad_name.value).startswith("index: invalid index name 'Bad Name'")
    with pytest.raises(InvalidInputError, match="HOPINDEX_API_MAX_QUERY_CHARS") as long:
        SearchArguments.read({"question": "q" * 11, "index": "a"}, 10)
    assert long.value.where == "question"

