"""The MCP server: the tools (api/mcp/tools.py) and resources over one client, as the
MCP SDK's low-level ``Server``, for either door (stdio, or ``/mcp`` on the HTTP server).

The low-level server rather than the SDK's decorator API (``MCPServer``): the tools a
caller sees depend on who calls (a read key gets the read tools) and on the door, and
every refusal must carry hopindex's code and message; both are one handler each here,
where the decorator API builds a fixed list and words its own errors.

Errors: a tool that fails answers a tool error (``isError``), never a protocol error or
a traceback, so the model reads it and can act: the text is ``CODE: MESSAGE`` and the
structured content ``{"error": {"code", "message", "field", "retryable"}}``, the code
and message the HTTP API and the CLI give for the same refusal. A server fault (a bug,
a failing store) is logged with its traceback and answered as ``internal``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from importlib.metadata import version
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote

from mcp import types
from mcp.server import Server, ServerRequestContext
from mcp.shared.exceptions import MCPError

from hopindex.api.access import Access, Principal, require_index_scope
from hopindex.api.error_view import plain_traceback, view_error
from hopindex.api.mcp.tools import (
    Door,
    Offload,
    StartsJobs,
    Tool,
    ToolCall,
    find_tool,
    offered_tools,
)
from hopindex.core.errors import HopindexError, InvalidInputError, NotFoundError
from hopindex.core.logging import get_logger

if TYPE_CHECKING:
    from hopindex.api.cli_context import CliClient

log = get_logger(__name__)

SERVER_NAME = "hopindex"
INSTRUCTIONS = (
    "hopindex answers multi-hop questions from document indexes: the links between "
    "documents are made when an index is built, so one `search` returns the passages "
    "of every hop. Start with `list_indexes`, then `search` an index with the user's "
    "question; cite passages by their doc_id (and file, page and section when given). "
    "Ingest tools return a job at once: call `wait_for_job` before searching what they "
    "add.")
URI_SCHEME = "hopindex"
INDEX_URI = "hopindex://indexes/{index}"
DOCUMENT_URI = "hopindex://indexes/{index}/documents/{doc_id}"
JSON_TYPE = "application/json"
# JSON-RPC codes of a resource read that fails: the spec's "resource not found", and
# the standard codes for bad parameters and for the server's own fault.
RESOURCE_NOT_FOUND = -32002
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
_INTERNAL = {"code": "internal", "message": "internal server error; the server log has the "
                                           "details", "retryable": False}

PrincipalOf = Callable[[ServerRequestContext[Any, Any]], Principal]


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def error_of(exc: BaseException) -> dict[str, Any]:
    """``{"code", "message", "field"?, "retryable"}`` for an error a tool raised."""
    view = view_error(exc) if isinstance(exc, HopindexError) else None
    if view is None:
        log.error("mcp_call_failed", error_type=type(exc).__name__, error=str(exc),
                  traceback=plain_traceback(exc))
        return dict(_INTERNAL)
    return {**view.as_dict(), "retryable": view.retryable}


def tool_error(exc: BaseException) -> types.CallToolResult:
    error = error_of(exc)
    return types.CallToolResult(
        content=[types.TextContent(text=f"{error['code']}: {error['message']}")],
        structured_content={"error": error}, is_error=True)


def _annotations(tool: Tool) -> types.ToolAnnotations:
    reads = tool.access is Access.READ
    return types.ToolAnnotations(title=tool.title, read_only_hint=reads,
                                 destructive_hint=tool.destructive,
                                 idempotent_hint=reads, open_world_hint=False)


class McpServer:
    """The tools and resources of one door, over ``client``."""

    def __init__(self, client: CliClient, *, door: Door, offload: Offload, jobs: StartsJobs,
                 principal_of: PrincipalOf, max_question_chars: int) -> None:
        self.client = client
        self.door = door
        self._offload = offload
        self._jobs = jobs
        self._principal_of = principal_of
        self._max_question_chars = max_question_chars
        self.server: Server[Any] = Server(
            SERVER_NAME, version=version("hopindex"), instructions=INSTRUCTIONS,
            on_list_tools=self._list_tools, on_call_tool=self._call_tool,
            on_list_resources=self._list_resources,
            on_list_resource_templates=self._list_templates,
            on_read_resource=self._read_resource)

    async def _list_tools(self, ctx: ServerRequestContext[Any, Any],
                          _: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        principal = self._principal_of(ctx)
        return types.ListToolsResult(tools=[
            types.Tool(name=tool.name, title=tool.title, description=tool.description,
                       input_schema=tool.input_schema(), annotations=_annotations(tool))
            for tool in offered_tools(self.door, principal)])

    async def _call_tool(self, ctx: ServerRequestContext[Any, Any],
                         params: types.CallToolRequestParams) -> types.CallToolResult:
        try:
            principal = self._principal_of(ctx)
            tool = find_tool(params.name, self.door, principal)
            arguments = tool.arguments.read(params.arguments or {}, self._max_question_chars)

            async def report(progress: float, total: float | None, message: str) -> None:
                await ctx.session.report_progress(progress, total, message)

            call = ToolCall(client=self.client, principal=principal, offload=self._offload,
                            jobs=self._jobs, progress=report)
            result = await tool.body(call, arguments)
        except Exception as exc:  # every failure is the model's to read, as a tool error
            refused = tool_error(exc)
            log.info("mcp_tool_refused", tool=params.name, door=self.door.value,
                     code=refused.structured_content["error"]["code"])
            return refused
        log.info("mcp_tool_called", tool=tool.name, door=self.door.value, key=principal.name)
        return types.CallToolResult(content=[types.TextContent(text=_json(result))],
                                    structured_content=result)

    async def _list_resources(self, ctx: ServerRequestContext[Any, Any],
                              _: types.PaginatedRequestParams | None
                              ) -> types.ListResourcesResult:
        principal = self._principal_of(ctx)
        try:
            summaries = await self._offload(self.client.indexes.list_indexes)
        except Exception as exc:
            raise _resource_error(exc) from None
        return types.ListResourcesResult(resources=[
            types.Resource(uri=INDEX_URI.format(index=s.name), name=s.name,
                           title=f"index {s.name}", mime_type=JSON_TYPE,
                           description=f"what index {s.name} ({s.method}) holds: documents, "
                                       "units, status, outstanding work")
            for s in summaries if principal.covers(s.name)])

    async def _list_templates(self, _ctx: ServerRequestContext[Any, Any],
                              _: types.PaginatedRequestParams | None
                              ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=[
            types.ResourceTemplate(uri_template=INDEX_URI, name="index",
                                   title="An index's description", mime_type=JSON_TYPE,
                                   description="what the index holds and its status"),
            types.ResourceTemplate(
                uri_template=DOCUMENT_URI, name="document", title="A document by id",
                mime_type=JSON_TYPE,
                description="one document of the index: title, text, metadata and where it "
                            "is in its file; the doc_id is percent-encoded (search results "
                            "carry it)")])

    async def _read_resource(self, ctx: ServerRequestContext[Any, Any],
                             params: types.ReadResourceRequestParams
                             ) -> types.ReadResourceResult:
        uri = str(params.uri)
        try:
            index, doc_id = parse_uri(uri)
            require_index_scope(self._principal_of(ctx), index)
            if doc_id is None:
                found = (await self._offload(self.client.indexes.describe_index, index)
                         ).as_dict()
            else:
                found = (await self._offload(self.client.get_document, index, doc_id)
                         ).as_dict()
        except Exception as exc:
            raise _resource_error(exc) from None
        return types.ReadResourceResult(contents=[types.TextResourceContents(
            uri=uri, mime_type=JSON_TYPE, text=_json(found))])


def document_uri(index: str, doc_id: str) -> str:
    return DOCUMENT_URI.format(index=index, doc_id=quote(doc_id, safe=""))


def parse_uri(uri: str) -> tuple[str, str | None]:
    """The index and the document id (None: the index itself) a resource URI names."""
    prefix = f"{URI_SCHEME}://indexes/"
    if not uri.startswith(prefix):
        raise InvalidInputError(f"not a hopindex resource: {uri!r}; resources read "
                                f"{INDEX_URI} or {DOCUMENT_URI}", where="uri")
    index, _, rest = uri.removeprefix(prefix).partition("/")
    if not rest:
        return index, None
    kind, _, doc_id = rest.partition("/")
    if kind != "documents" or not doc_id:
        raise InvalidInputError(f"no such resource: {uri!r}; resources read {INDEX_URI} or "
                                f"{DOCUMENT_URI}", where="uri")
    return index, unquote(doc_id)


def _resource_error(exc: BaseException) -> MCPError:
    """A failed resource read as the JSON-RPC error the protocol has for it, with the
    same code and message in its data as a tool error carries."""
    error = error_of(exc)
    code = (RESOURCE_NOT_FOUND if isinstance(exc, NotFoundError)
            else INVALID_PARAMS if isinstance(exc, HopindexError) and error["code"] != "internal"
            else INTERNAL_ERROR)
    return MCPError(code, f"{error['code']}: {error['message']}", data=error)
