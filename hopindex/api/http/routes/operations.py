"""Operations index methods register for their indexes (``methods/operations.py``):
``GET /v1/operations`` lists them, ``POST /v1/indexes/{name}/operations/{operation}``
runs one on an index of its method with a JSON object of text parameters, answering
the operation's JSON value.

The route is declared for read keys: whether a request needs write access depends on
the operation, known once the index's method is, so the handler checks it then,
before the body is read or anything runs."""

from __future__ import annotations

from aiohttp import web

from hopindex.api.access import Access
from hopindex.api.http.params import index_name, query_choice, read_json_object
from hopindex.api.http.routing import Guard, Route, context, require_access
from hopindex.methods.operations import OperationAccess
from hopindex.methods.registry import index_method_names

OPERATIONS_PATH = "/v1/operations"
RUN_PATH = "/v1/indexes/{name}/operations/{operation}"
# What a client sends as an operation's name: ``group.verb`` (methods/operations.py).
OPERATION_NAME_PATTERN = r"^[a-z_]+\.[a-z_]+$"


async def list_operations(request: web.Request) -> web.Response:
    ctx = context(request)
    method = query_choice(request, "method", index_method_names())
    found = ctx.client.operations.list_operations(method)  # the registry: in memory
    return web.json_response({"operations": [o.as_dict() for o in found]})


async def run_operation(request: web.Request) -> web.Response:
    """200 with the operation's value; 404 for an unknown index, 400 naming
    ``operation`` for a name no method has or ``method`` for one the index's method
    lacks, 403 for a read key and an operation that writes."""
    ctx = context(request)
    index = index_name(request.match_info["name"], field="name")
    name = request.match_info["operation"]
    operations = ctx.client.operations
    operation = await ctx.blocking.run(operations.find_operation, index, name)
    require_access(request, Access.WRITE if operation.access is OperationAccess.WRITE
                   else Access.READ)
    # The parameters are the operation's to check (names, text, length), as for the CLI.
    params = await read_json_object(request) if request.body_exists else {}
    value = await ctx.blocking.run(operations.run_operation, index, name, params)
    return web.json_response(value)


ROUTES = [
    Route("GET", OPERATIONS_PATH, list_operations, Guard.READ, query=("method",)),
    Route("POST", RUN_PATH, run_operation, Guard.READ),
]
